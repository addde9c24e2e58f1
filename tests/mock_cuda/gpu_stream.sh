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
# Summed over its stacks: now and then the unwinder gives a launch stack a
# stray frame, and the call site's time is then on two lines.
gemm=$(awk '/run_gemm;.*\[gpu\] gemm_kernel [0-9]+$/ { sum += $NF } END { print sum + 0 }' \
	"$WORK/whole.folded")
[ "$gemm" = $((2000 * N)) ] || fail "gemm's time in the whole run: $gemm us: $(cat "$WORK/whole.folded")"
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
# The busy share is the timeline's, up to where it was cut, not the kept
# records' time over the whole run (that gave 0.7 % busy and a false "GPU
# idle 99 %").  The start-up before the first kernel weighs more in the
# short window than in the whole run, hence a quarter, not equality.
busy() { sed -n 's/.*device 0.*busy \([0-9.]*\)% of \([0-9.]*\) s.*/\1 \2/p' "$1" | head -1; }
read -r whole_busy whole_wall < <(busy "$WORK/whole.err")
read -r cut_busy cut_wall < <(busy "$WORK/cut.err")
[ -n "$whole_busy" ] && [ -n "$cut_busy" ] || fail "no busy share: $(cat "$WORK/cut.err")"
awk -v w="$whole_wall" -v c="$cut_wall" 'BEGIN { exit !(c < w) }' ||
	fail "the cut run's busy share is over $cut_wall s, the whole run's $whole_wall s"
awk -v w="$whole_busy" -v c="$cut_busy" 'BEGIN { exit !(c >= w / 4) }' ||
	fail "busy $cut_busy% with a cut timeline against $whole_busy% whole"
echo "ok: $RECORDS records, 50 on the timeline, $(wc -l <"$WORK/cut.folded") stacks alike"
