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
# A launch stack the unwinder now and then starts with a stray frame
# ([unknown+0x7ffc...] under the process) is the same call site.
same_sites() {
	sed 's/;\[unknown+0x[0-9a-f]*\];/;/' "$1" |
		awk '{ w = $NF; $NF = ""; sum[$0] += w } END { for (s in sum) print s sum[s] }' | sort
}
# Exact but for the first copy, which may start before the profile and is
# cut at its start by a few ns that vary from run to run: 1 us of rounding.
same_sites "$WORK/whole.folded" >"$WORK/whole.sites"
same_sites "$WORK/cut.folded" >"$WORK/cut.sites"
python3 - "$WORK/whole.sites" "$WORK/cut.sites" <<'PY' ||
import sys
def load(path):
    return {s: int(w) for s, _, w in (l.rstrip("\n").rpartition(" ") for l in open(path))}
whole, cut = load(sys.argv[1]), load(sys.argv[2])
bad = [s for s in whole.keys() | cut.keys() if abs(whole.get(s, -9) - cut.get(s, 9)) > 1]
for s in bad:
    print(f"{s}: whole {whole.get(s)}, cut {cut.get(s)}")
sys.exit(1 if bad else 0)
PY
	fail "GPU time per stack differs with a cut timeline"
echo "ok: $RECORDS records, 50 on the timeline, $(wc -l <"$WORK/cut.folded") stacks alike"
