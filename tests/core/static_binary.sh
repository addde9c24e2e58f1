#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# The -DLLMPROF_STATIC=ON binary needs only glibc and profiles for real.
# scripts/test.sh builds it and names it in LLMPROF_STATIC_BINARY.
. "$TESTS_SOURCE/lib/testlib.sh"
binary=${LLMPROF_STATIC_BINARY:-}
[ -n "$binary" ] || skip "LLMPROF_STATIC_BINARY not set (scripts/test.sh sets it)"
[ -x "$binary" ] || fail "$binary is not built"
libs=$(ldd "$binary" | awk '{print $1}' | grep -v -e linux-vdso -e ld-linux -e '^libc\.so' \
	-e '^libm\.so' -e '^libpthread\.so' -e '^libdl\.so' -e '^librt\.so' || true)
[ -z "$libs" ] || fail "static binary links more than glibc: $libs"
need_root
"$binary" record -F 499 -o "$WORK/s.folded" -- "$FIXTURES/ground_truth" 1 >/dev/null 2>"$WORK/err" ||
	fail "static binary failed: $(cat "$WORK/err")"
$CHECK shares "$WORK/s.folded" --self burn_a=50 --tolerance 6 || fail "static binary shares"
# The agent travels inside the one file: GPU kernels with nothing else copied.
if [ -x "${MOCK_CUDA:-}/mock_app" ]; then
	LD_LIBRARY_PATH=$MOCK_CUDA/lib LLMPROF_CUPTI_LIBRARY=$MOCK_CUDA/lib/libcupti.so \
		"$binary" record -o "$WORK/g.folded" -- "$MOCK_CUDA/mock_app" --iterations 20 \
		>/dev/null 2>"$WORK/err" || fail "static binary GPU record failed: $(cat "$WORK/err")"
	$CHECK has "$WORK/g.folded" ';run_gemm;.*\[gpu\] gemm_kernel ' ||
		fail "static binary: no GPU kernels under their launch"
fi
echo PASS
