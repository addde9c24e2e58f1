#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# GPU end to end against the mock CUDA stack (runtime + CUPTI behaving like
# the real ones): record and attach, kernel names, attribution to the
# launching function, durations (the mock's gemm_kernel takes twice as long
# as softmax_kernel), evented GPU profiles in speedscope, and the target's
# output unchanged.
. "$TESTS_SOURCE/lib/testlib.sh"
need_root
app=$MOCK_CUDA/mock_app
[ -x "$app" ] || skip "mock CUDA stack not built (no CUPTI headers)"
export LD_LIBRARY_PATH=$MOCK_CUDA/lib
export LLMPROF_CUPTI_LIBRARY=$MOCK_CUDA/lib/libcupti.so
"$app" --iterations 50 >"$WORK/plain.out" || fail "mock app alone failed"

check_gpu() { # FOLDED
	$CHECK folded "$1" >/dev/null || fail "invalid folded $1"
	$CHECK has "$1" ';run_gemm;cudaLaunchKernel;([^;]*_\[i\];)*\[gpu\] gemm_kernel [0-9]+$' ||
		fail "gemm_kernel not under run_gemm: $(grep gemm "$1" | head -2)"
	$CHECK has "$1" ';download_result;cudaMemcpyAsync;([^;]*_\[i\];)*\[gpu\] memcpy DtoH ' ||
		fail "memcpy not under download_result"
	python3 - "$1" <<'PY' || fail "GPU durations"
import sys
weight = {}
for line in open(sys.argv[1]):
    stack, _, count = line.rstrip("\n").rpartition(" ")
    leaf = stack.split(";")[-1]
    if leaf.startswith("[gpu] "):
        weight[leaf] = weight.get(leaf, 0) + int(count)
ratio = weight["[gpu] gemm_kernel"] / weight["[gpu] softmax_kernel"]
print(f"gemm/softmax GPU time ratio {ratio:.3f}")
assert abs(ratio - 2.0) < 0.2, ratio
PY
}

"$LLMPROF" record -F 199 -o "$WORK/record.folded" -- "$app" --iterations 50 >"$WORK/record.out" \
	2>"$WORK/err" || fail "record failed: $(cat "$WORK/err")"
cmp -s "$WORK/plain.out" "$WORK/record.out" || fail "the app's output changed under record"
grep -q "GPU summary" "$WORK/err" || fail "no GPU summary"
check_gpu "$WORK/record.folded"

"$LLMPROF" record -F 199 -f speedscope -o "$WORK/record.json" -- "$app" --iterations 20 \
	>/dev/null 2>"$WORK/err" || fail "record speedscope failed"
$CHECK speedscope "$WORK/record.json" --schema "$SPEEDSCOPE_SCHEMA" || fail "speedscope invalid"
grep -q '"type":"evented","name":"GPU 0 stream' "$WORK/record.json" || fail "no GPU stream profile"

"$app" --seconds 5 >"$WORK/attach.out" &
target=$!
BACKGROUND_PIDS="$BACKGROUND_PIDS $target"
sleep 1.5
env -u LD_LIBRARY_PATH -u LLMPROF_CUPTI_LIBRARY "$LLMPROF" attach -p $target -d 1.5 -F 199 -o "$WORK/attach.folded" 2>"$WORK/err" ||
	fail "attach failed: $(cat "$WORK/err")"
$CHECK folded "$WORK/attach.folded" >/dev/null || fail "attach: invalid folded"
check_gpu "$WORK/attach.folded"
wait $target || fail "the attached app failed after the profile"
grep -q '^checksum ' "$WORK/attach.out" || fail "attached app output incomplete"

"$LLMPROF" record --no-gpu -o "$WORK/nogpu.folded" -- "$app" --iterations 10 >/dev/null 2>&1 ||
	fail "--no-gpu failed"
if grep -q '\[gpu\]' "$WORK/nogpu.folded"; then fail "--no-gpu still has GPU frames"; fi
echo PASS
