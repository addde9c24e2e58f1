#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# Python frames carry the CPU shares of a script whose functions do 50, 30
# and 20 percent of its work, nested, within 3 points, with attach and with
# record; no eval-loop frame is left beside them; in speedscope output
# (--lines) they have their file and line.  $1: the interpreter.
# About 4,000 samples: 3 points is over 3 standard deviations of sampling
# error, with room for a neighbour that steals the CPU in bursts.
. "$TESTS_SOURCE/lib/testlib.sh"
. "$TESTS_SOURCE/python/pylib.sh"
need_root
PY=$1
need_python "$PY"

check() {
	$CHECK shares "$1" --total "$(pyframe burn_a shares.py)=50" \
		--total "$(pyframe burn_b shares.py)=30" --total "$(pyframe burn_c shares.py)=20" \
		--total "$(pyframe share_bc shares.py)=50" --total "$(pyframe main shares.py)=100" \
		--tolerance 3 || fail "shares of $1 ($(python_minor "$PY"))"
	no_stack "$1" '_PyEval_EvalFrameDefault.*_\[p\]|_\[p\].*_PyEval_EvalFrameDefault' \
		"an eval frame is left beside Python frames"
	grep -q "warning" "$2" && fail "warnings: $(cat "$2")"
	return 0
}

start_bg "$PY" "$PYTHON_FIXTURES/shares.py" 7.5
sleep 0.5
"$LLMPROF" attach -p "$BG_PID" -d 4 -F 999 -f speedscope --lines -o "$WORK/attach.json" \
	2>"$WORK/attach.err" || fail "attach failed: $(cat "$WORK/attach.err")"
$CHECK speedscope "$WORK/attach.json" --schema "$SPEEDSCOPE_SCHEMA" || fail "invalid speedscope"
check_lines "$WORK/attach.json"
"$LLMPROF" convert -f folded -o "$WORK/attach.folded" "$WORK/attach.json" ||
	fail "cannot convert the speedscope profile"
check "$WORK/attach.folded" "$WORK/attach.err"

"$LLMPROF" record -F 999 -o "$WORK/record.folded" -- "$PY" "$PYTHON_FIXTURES/shares.py" 3.5 \
	>"$WORK/record.out" 2>"$WORK/record.err" || fail "record failed: $(cat "$WORK/record.err")"
grep -q '^rounds ' "$WORK/record.out" || fail "the recorded script's output is missing"
# From the first instruction: the interpreter's start-up and exit are in
# the profile too, outside main; the shares hold within main.
$CHECK shares "$WORK/record.folded" --total "$(pyframe main shares.py)=95" --tolerance 5 ||
	fail "main is not most of the recorded profile"
grep -F "$(pyframe main shares.py)" "$WORK/record.folded" >"$WORK/record-main.folded"
check "$WORK/record-main.folded" "$WORK/record.err"
$CHECK has "$WORK/record.folded" '_bootstrap' || fail "no Python frames in the start-up"
echo PASS
