#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# A real Python program profiled as pprof, read by Google's pprof: Python
# functions are named without marks ("step", "Thread.run"), with their
# Python file; thread labels carry Python's thread names; `pprof -top` and
# `pprof -traces` agree with llmprof's report and folded stacks of the same
# file; llmprof reads it back with the Python frames it wrote.
. "$TESTS_SOURCE/lib/testlib.sh"
need_root
PY=/usr/bin/python3
[ -x "$PY" ] || skip "no $PY"
PPROF_CHECK="python3 $TESTS_SOURCE/formats/pprof_check.py"
script=$TESTS_SOURCE/python/fixtures/named_threads.py

# Attached once the threads run, as a loaded machine may take most of a
# short recording to start the interpreter.
start_bg "$PY" "$script" 30 >"$WORK/script.out"
for _ in $(seq 200); do
	grep -q '^ready' "$WORK/script.out" && break
	sleep 0.1
done
grep -q '^ready' "$WORK/script.out" || fail "the script did not start"
"$LLMPROF" attach -p "$BG_PID" -d 1.5 -F 299 -f pprof -o "$WORK/py.pb.gz" 2>"$WORK/err" ||
	fail "attach failed: $(cat "$WORK/err")"
"$PPROF" -top -nodecount=1000000 "$WORK/py.pb.gz" >"$WORK/top" 2>&1 || fail "pprof -top: $(cat "$WORK/top")"
grep -Eq ' step$' "$WORK/top" || fail "no clean step in pprof -top: $(head -20 "$WORK/top")"
if grep -E '_\[p\]|\.py\)' "$WORK/top"; then
	fail "marked Python frames in pprof -top"
fi
"$PPROF" -traces "$WORK/py.pb.gz" >"$WORK/traces" 2>&1 || fail "pprof -traces"
grep -Eq '^ +Thread\.run$' "$WORK/traces" ||
	fail "no Thread.run in pprof -traces: $(head -30 "$WORK/traces")"
"$PPROF" -raw "$WORK/py.pb.gz" >"$WORK/raw" 2>&1 || fail "pprof -raw"
grep -qF "step $script:" "$WORK/raw" || fail "step has not its file: $(grep -m3 step "$WORK/raw")"
$PPROF_CHECK tags "$PPROF" "$WORK/py.pb.gz" thread=loader thread=writer thread=selfnamed \
	thread=MainThread || fail "thread labels"

"$LLMPROF" report -f json --top 0 "$WORK/py.pb.gz" >"$WORK/report.json" || fail "report"
# llmprof's report counts samples: pprof's first sample type.
PPROF_SAMPLE_INDEX=samples $PPROF_CHECK top "$PPROF" "$WORK/py.pb.gz" "$WORK/report.json" || fail "pprof -top vs report"
"$LLMPROF" convert -f folded -o "$WORK/py.folded" "$WORK/py.pb.gz" || fail "read back"
PPROF_SAMPLE_INDEX=samples $PPROF_CHECK traces "$PPROF" "$WORK/py.pb.gz" "$WORK/py.folded" || fail "pprof -traces vs folded"
grep -qF ';Thread.run (threading.py)_[p];step (named_threads.py)_[p]' "$WORK/py.folded" ||
	fail "Python frames read back: $(head -3 "$WORK/py.folded")"
echo PASS
