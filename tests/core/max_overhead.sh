#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# --max-overhead: at -F 4999 llmprof costs far more than 2 % of a busy
# program's CPU, so the governor slows the sampling, says so, and the
# samples taken after weigh what they stand for: the known shares
# (50/30/20) stay within 8 points and the total stays the asked rate's
# (the program's CPU time at 4999 Hz, within 30 %: where a loaded machine
# gives the target little CPU, the governor slows most, to few samples
# weighing many each); a budget of 100 % changes nothing; a share that is
# not one is refused with exit 2.
. "$TESTS_SOURCE/lib/testlib.sh"
need_root

# total FOLDED: the sum of the weights.
total() { awk '{ s += $NF } END { print s + 0 }' "$1"; }

"$LLMPROF" record -F 4999 --max-overhead 2 \
	-o "$WORK/governed.folded" -- "$FIXTURES/ground_truth" 6 >/dev/null 2>"$WORK/governed.err" ||
	fail "record --max-overhead failed: $(cat "$WORK/governed.err")"
grep -q "budget 2.0% (--max-overhead): sampling at" "$WORK/governed.err" ||
	fail "the governor did not slow the sampling: $(cat "$WORK/governed.err")"
# Fewer samples on purpose are no throttling by the kernel.
! grep -q "throttled" "$WORK/governed.err" || fail "$(grep throttled "$WORK/governed.err")"
$CHECK shares "$WORK/governed.folded" --self burn_a=50 --self burn_b=30 --self burn_c=20 \
	--tolerance 8 || fail "shares under the governor"
# The weights: some sample weighs more than one.
awk '$NF > 1 { found = 1 } END { exit !found }' "$WORK/governed.folded" ||
	fail "no sample weighs more than one after the rate was lowered"

# The target's CPU time, as the kernel counted it, against the weights'
# total at the asked rate.
"$LLMPROF" record -F 4999 --max-overhead 2 -f pprof -o "$WORK/governed.pb.gz" -- \
	sh -c "/usr/bin/time -f '%U %S' -o '$WORK/target.cpu' '$FIXTURES/ground_truth' 6 >/dev/null" \
	2>"$WORK/governed2.err" || fail "record of the timed target failed: $(cat "$WORK/governed2.err")"
"$LLMPROF" convert -f folded -o "$WORK/governed2.folded" "$WORK/governed.pb.gz" ||
	fail "convert failed"
cpu=$(awk '{ print $1 + $2 }' "$WORK/target.cpu")
got=$(total "$WORK/governed2.folded")
echo "target CPU ${cpu} s; weights ${got} samples; at 4999 Hz $(awk -v c="$cpu" 'BEGIN { print c * 4999 }')"
awk -v c="$cpu" -v g="$got" 'BEGIN { w = c * 4999; exit !(g >= 0.7 * w && g <= 1.3 * w) }' ||
	fail "weights total $got samples for ${cpu} s of CPU at 4999 Hz"

"$LLMPROF" record -F 999 --max-overhead 100 -o "$WORK/free.folded" -- "$FIXTURES/ground_truth" 3 \
	>/dev/null 2>"$WORK/free.err" || fail "record --max-overhead 100 failed: $(cat "$WORK/free.err")"
! grep -q "sampling at" "$WORK/free.err" || fail "a budget of 100% changed the rate: $(cat "$WORK/free.err")"

for bad in -1 101 abc 5x ""; do
	"$LLMPROF" record --max-overhead "$bad" -- true 2>"$WORK/bad.err"
	rc=$?
	[ "$rc" = 2 ] && [ "$(wc -l <"$WORK/bad.err")" = 1 ] && grep -q -- "--max-overhead" "$WORK/bad.err" ||
		fail "--max-overhead '$bad': exit $rc, $(cat "$WORK/bad.err")"
done
echo PASS
