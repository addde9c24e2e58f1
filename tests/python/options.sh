#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# --no-python leaves the interpreter's native frames.
. "$TESTS_SOURCE/lib/testlib.sh"
. "$TESTS_SOURCE/python/pylib.sh"
need_root
PY=$1
need_python "$PY"

start_bg "$PY" "$PYTHON_FIXTURES/shares.py" 5
sleep 0.3
"$LLMPROF" attach -p "$BG_PID" -d 1 -F 499 --no-python -o "$WORK/off.folded" 2>"$WORK/off.err" ||
	fail "attach --no-python failed: $(cat "$WORK/off.err")"
no_stack "$WORK/off.folded" '_\[p\]' "Python frames with --no-python"
$CHECK has "$WORK/off.folded" '_PyEval_EvalFrameDefault' || fail "no eval frames with --no-python"

echo PASS
