#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# Known CPU shares (50/30/20, and 50 for the caller of the last two) come
# out within 3 percentage points, with attach and with record.
. "$TESTS_SOURCE/lib/testlib.sh"
need_root

check() {
	$CHECK shares "$1" --self burn_a=50 --self burn_b=30 --self burn_c=20 \
		--total share_bc=50 --total main=100 --tolerance 3 || fail "shares of $1"
}

start_bg "$FIXTURES/ground_truth" 6
sleep 0.5
"$LLMPROF" attach -p "$BG_PID" -d 4 -F 999 -o "$WORK/attach.folded" 2>"$WORK/attach.err" ||
	fail "attach failed: $(cat "$WORK/attach.err")"
check "$WORK/attach.folded"
grep -q "profiled PID $BG_PID" "$WORK/attach.err" || fail "no summary on stderr"
grep -q "burn_a" "$WORK/attach.err" || fail "summary lacks the top function"

"$LLMPROF" record -F 999 -o "$WORK/record.folded" -- "$FIXTURES/ground_truth" 3 \
	>"$WORK/record.out" 2>"$WORK/record.err" || fail "record failed: $(cat "$WORK/record.err")"
grep -q '^rounds ' "$WORK/record.out" || fail "the recorded command's output is missing"
check "$WORK/record.folded"
# From the first instruction: the program's entry is in the profile.
$CHECK has "$WORK/record.folded" '^ground_truth;' || fail "process frame missing"
echo PASS
