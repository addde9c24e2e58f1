#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# GPU time in pprof, recorded from the mock CUDA stack: one wall/nanoseconds
# sample type, each kernel a "[gpu] NAME" leaf under its launching function
# weighted by its duration (gemm_kernel runs twice as long as
# softmax_kernel), and the stacks read back as the folded output has them.
. "$TESTS_SOURCE/lib/testlib.sh"
need_root
PPROF_CHECK="python3 $TESTS_SOURCE/formats/pprof_check.py"
app=$MOCK_CUDA/mock_app
[ -x "$app" ] || skip "mock CUDA stack not built (no CUPTI headers)"

LD_LIBRARY_PATH=$MOCK_CUDA/lib LLMPROF_CUPTI_LIBRARY=$MOCK_CUDA/lib/libcupti.so \
	"$LLMPROF" record -F 199 -f pprof -o "$WORK/gpu.pb.gz" -- "$app" --iterations 50 \
	>/dev/null 2>"$WORK/err" || fail "record failed: $(cat "$WORK/err")"
"$PPROF" -raw "$WORK/gpu.pb.gz" >"$WORK/raw" 2>&1 || fail "pprof -raw: $(cat "$WORK/raw")"
grep -qx 'wall/nanoseconds' "$WORK/raw" || fail "sample type: $(grep -A1 '^Samples:' "$WORK/raw")"
$PPROF_CHECK ratio "$PPROF" "$WORK/gpu.pb.gz" '[gpu] gemm_kernel' '[gpu] softmax_kernel' 2.0 0.2 ||
	fail "GPU durations"
"$LLMPROF" convert -f folded -o "$WORK/gpu.folded" "$WORK/gpu.pb.gz" || fail "read back"
$CHECK has "$WORK/gpu.folded" '^mock_app;.*;run_gemm;cudaLaunchKernel;([^;]*_\[i\];)*\[gpu\] gemm_kernel [0-9]+$' ||
	fail "gemm_kernel not under run_gemm: $(grep gemm "$WORK/gpu.folded" | head -2)"
"$LLMPROF" report "$WORK/gpu.pb.gz" >"$WORK/report" || fail "report"
grep -q '^GPU time: ' "$WORK/report" || fail "report sees no GPU time: $(cat "$WORK/report")"
echo PASS
