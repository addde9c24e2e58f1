#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# The target exiting mid-profile ends the profile normally: exit 0, a note,
# and a complete, valid file in both formats.  The target lives 2.5 s:
# attach takes up to a second to load its BPF on a busy machine, and a
# target gone by then "exited before it could be profiled" (exit 1).
. "$TESTS_SOURCE/lib/testlib.sh"
need_root

for format in folded speedscope; do
	start_bg "$FIXTURES/ground_truth" 2.5
	sleep 0.2
	"$LLMPROF" attach -p "$BG_PID" -d 30 -F 499 -f $format -o "$WORK/out.$format" \
		2>"$WORK/err" || fail "attach exited $? when the target exited: $(cat "$WORK/err")"
	grep -q "exited" "$WORK/err" || fail "no note that the target exited"
	if [ $format = folded ]; then
		$CHECK shares "$WORK/out.folded" --self burn_a=50 --tolerance 8 || fail "shares"
	else
		$CHECK speedscope "$WORK/out.speedscope" --schema "$SPEEDSCOPE_SCHEMA" ||
			fail "speedscope invalid"
	fi
	ls "$WORK" | grep -q '\.tmp\.' && fail "temporary file left behind"
done
echo PASS
