#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# A run with many more GPU records than the timeline keeps
# (LLMPROF_GPU_TIMELINE_RECORDS lowered): llmprof says the timeline was cut
# and how many records there were, every stack's GPU time is that of a run
# that kept them all, and the application's output is unchanged.
. "$TESTS_SOURCE/lib/testlib.sh"
need_root
[ -x "$MOCK_APP" ] || skip "mock CUDA stack not built (no CUPTI headers)"
export LLMPROF_CUPTI_LIBRARY=$MOCK_CUPTI
N=200
# Per iteration the mock runs 6 kernels, 2 copies and a memset.
RECORDS=$((9 * N))

# run NAME: record the mock, GPU stacks only, into $WORK/NAME.*
run() {
	"$LLMPROF" record -F 99 --view gpu -o "$WORK/$1.folded" -- "$MOCK_APP" --iterations $N \
		>"$WORK/$1.out" 2>"$WORK/$1.err" || fail "record ($1) failed: $(cat "$WORK/$1.err")"
	grep -q '^checksum ' "$WORK/$1.out" || fail "$1: the application did not finish: $(cat "$WORK/$1.out")"
}

run whole
LLMPROF_GPU_TIMELINE_RECORDS=50 run cut

grep -q "timeline keeps the first 50 of $RECORDS GPU records; GPU time of all $RECORDS is in the stacks" \
	"$WORK/cut.err" || fail "no timeline line: $(cat "$WORK/cut.err")"
if grep -q "timeline keeps" "$WORK/whole.err"; then
	fail "the whole run says its timeline was cut: $(cat "$WORK/whole.err")"
fi
cmp -s "$WORK/whole.out" "$WORK/cut.out" || fail "the application's output changed"
grep -q "run_gemm;.*\[gpu\] gemm_kernel $((2000 * N))\$" "$WORK/whole.folded" ||
	fail "gemm's time in the whole run: $(cat "$WORK/whole.folded")"
diff -u "$WORK/whole.folded" "$WORK/cut.folded" || fail "GPU time per stack differs with a cut timeline"
echo "ok: $RECORDS records, 50 on the timeline, $(wc -l <"$WORK/cut.folded") stacks alike"
