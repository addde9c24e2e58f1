#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# Python frames on off-CPU stacks: a thread waiting in queue.Queue.get and
# threads contending for the GIL, attached to with --off-cpu; the summary
# names both waits.  $1: the interpreter.
. "$TESTS_SOURCE/lib/testlib.sh"
. "$TESTS_SOURCE/python/pylib.sh"
need_root
PY=$1
need_python "$PY"

start_bg "$PY" "$PYTHON_FIXTURES/waits.py" 5
sleep 1
"$LLMPROF" attach -p "$BG_PID" -d 2.5 --off-cpu -o "$WORK/off.folded" 2>"$WORK/off.err" ||
	fail "attach --off-cpu failed: $(cat "$WORK/off.err")"
CONSUME="$(pyframe consume waits.py);$(pyframe Queue.get queue.py)"
$CHECK has "$WORK/off.folded" "$(printf '%s' "$CONSUME" | sed 's/[.()[]/\\&/g; s/\]/\\]/g').*;\[off-cpu\] futex [0-9]+$" ||
	fail "no queue wait under consume: $(grep -F consume "$WORK/off.folded" | head -3)"
$CHECK has "$WORK/off.folded" "$(pyframe contend waits.py | sed 's/[.()[]/\\&/g; s/\]/\\]/g').*;\[off-cpu\] (futex|preempted) [0-9]+$" ||
	fail "no wait under contend"
$CHECK has "$WORK/off.folded" "$(pyframe produce waits.py | sed 's/[.()[]/\\&/g; s/\]/\\]/g').*;\[off-cpu\] nanosleep [0-9]+$" ||
	fail "no sleep under produce"
grep -q 'waiting on a queue' "$WORK/off.err" || fail "the summary does not name the queue wait: $(cat "$WORK/off.err")"
grep -Eq 'waiting for the GIL.*under contend' "$WORK/off.err" ||
	fail "the summary does not name the GIL wait: $(cat "$WORK/off.err")"
# The findings see the GIL contention on the real profile.
"$LLMPROF" report --findings -f json "$WORK/off.folded" >"$WORK/findings.json" ||
	fail "report --findings failed"
python3 - "$WORK/findings.json" <<'PY' || fail "no GIL finding under contend: $(cat "$WORK/findings.json")"
import json, sys
d = json.load(open(sys.argv[1]))
gil = [f for f in d["findings"] if f["rule"] == "gil-contention"]
assert gil, "no gil-contention finding"
assert "contend (waits.py)" in json.dumps(gil[0]), gil[0]
PY
echo PASS
