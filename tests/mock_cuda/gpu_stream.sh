#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# A run with many more GPU records than the timeline keeps
# (LLMPROF_GPU_TIMELINE_RECORDS lowered): llmprof says the timeline was cut
# and how many records there were, every stack's GPU time is that of a run
# that kept them all (a kernel launched from two call sites of one thread
# too, each site's), and the application's output is unchanged.
. "$TESTS_SOURCE/lib/testlib.sh"
need_root
[ -x "$MOCK_APP" ] || skip "mock CUDA stack not built (no CUPTI headers)"
export LLMPROF_CUPTI_LIBRARY=$MOCK_CUPTI
N=200
# Per iteration the mock runs 6 kernels, 2 copies and a memset.
RECORDS=$((9 * N))

# run NAME [ARGS]: record the mock, GPU stacks only, into $WORK/NAME.*;
# ARGS go to llmprof record, those after -- to the mock.
run() {
	local name=$1 app=()
	shift
	while [ $# -gt 0 ] && [ "$1" != -- ]; do app+=("$1"); shift; done
	[ $# -gt 0 ] && shift
	"$LLMPROF" record -F 99 --view gpu "${app[@]}" -o "$WORK/$name.folded" -- "$MOCK_APP" \
		--iterations $N "$@" >"$WORK/$name.out" 2>"$WORK/$name.err" ||
		fail "record ($name) failed: $(cat "$WORK/$name.err")"
	grep -q '^checksum ' "$WORK/$name.out" || fail "$name: the application did not finish: $(cat "$WORK/$name.out")"
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
# same_time WHOLE CUT: the GPU time of every call site alike in the two
# runs; exact but for the first copy, which may start before the profile
# and is cut at its start by a few ns that vary from run to run: 1 us of
# rounding.
same_time() {
	same_sites "$WORK/$1.folded" >"$WORK/$1.sites"
	same_sites "$WORK/$2.folded" >"$WORK/$2.sites"
	python3 - "$WORK/$1.sites" "$WORK/$2.sites" <<'PY' ||
import sys
def load(path):
    return {s: int(w) for s, _, w in (l.rstrip("\n").rpartition(" ") for l in open(path))}
whole, cut = load(sys.argv[1]), load(sys.argv[2])
bad = [s for s in whole.keys() | cut.keys() if abs(whole.get(s, -9) - cut.get(s, 9)) > 1]
for s in bad:
    print(f"{s}: whole {whole.get(s)}, cut {cut.get(s)}")
sys.exit(1 if bad else 0)
PY
		fail "GPU time per stack differs with a cut timeline ($2)"
}
same_time whole cut
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

# gemm_kernel from two call sites of one thread (2000 and 500 us a step),
# every launch with its stack: past the cut each site keeps its own time.
run sites_whole --launch-stack-rate 0 -- --two-sites
LLMPROF_GPU_TIMELINE_RECORDS=50 run sites_cut --launch-stack-rate 0 -- --two-sites
grep -q "timeline keeps the first 50 of $((RECORDS + N))" "$WORK/sites_cut.err" ||
	fail "two sites: no timeline line: $(cat "$WORK/sites_cut.err")"
for site in run_gemm:2000 run_gemm_again:500; do
	got=$(awk -v f="${site%:*}" '$0 ~ ";" f ";.*\\[gpu\\] gemm_kernel [0-9]+$" { sum += $NF } END { print sum + 0 }' \
		"$WORK/sites_cut.folded")
	[ "$got" = $((${site#*:} * N)) ] ||
		fail "${site%:*}'s gemm_kernel past the cut: $got us, launched $((${site#*:} * N)): $(grep gemm "$WORK/sites_cut.folded"; grep -A30 "GPU summary" "$WORK/sites_cut.err")"
done
same_time sites_whole sites_cut
echo "ok: $RECORDS records, 50 on the timeline, $(wc -l <"$WORK/cut.folded") stacks alike; two call sites exact"
