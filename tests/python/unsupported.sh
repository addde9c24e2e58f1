#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# A Python llmprof cannot read (older than 3.10) is reported once, and the
# profile goes on with native frames.  $1: such an interpreter.
. "$TESTS_SOURCE/lib/testlib.sh"
. "$TESTS_SOURCE/python/pylib.sh"
need_root
PY=$1
need_python "$PY"

start_bg "$PY" "$PYTHON_FIXTURES/shares.py" 4
sleep 0.3
"$LLMPROF" attach -p "$BG_PID" -d 1.5 -F 499 -o "$WORK/old.folded" 2>"$WORK/old.err" ||
	fail "attach failed: $(cat "$WORK/old.err")"
[ "$(grep -c "warning: .*Python $(python_minor "$PY")" "$WORK/old.err")" = 1 ] ||
	fail "expected one warning about Python $(python_minor "$PY"): $(cat "$WORK/old.err")"
no_stack "$WORK/old.folded" '_\[p\]' "Python frames from an unsupported interpreter"
$CHECK has "$WORK/old.folded" '_PyEval_EvalFrameDefault' || fail "native frames are missing"
echo PASS
