#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# Threads with different Python stacks keep them apart; a Python function
# calling C (GIL released) shows the C frames right under it; C calling
# back into Python shows Python, C, Python; a thread that runs no Python
# keeps its native stack; calls in a tight loop leave no eval-loop frame
# beside Python frames.  $1: the interpreter.
. "$TESTS_SOURCE/lib/testlib.sh"
. "$TESTS_SOURCE/python/pylib.sh"
need_root
PY=$1
need_python "$PY"
build_extension "$PY" "$WORK/ext"

start_bg env PYTHONPATH="$WORK/ext" "$PY" "$PYTHON_FIXTURES/mixed.py" 5 >"$WORK/mixed.out"
wait_ready "$WORK/mixed.out"
"$LLMPROF" attach -v -p "$BG_PID" -d 2.5 -F 999 -o "$WORK/mixed.folded" 2>"$WORK/mixed.err" ||
	fail "attach failed: $(cat "$WORK/mixed.err")"
F=$WORK/mixed.folded
esc() { printf '%s' "$1" | sed 's/[][().]/\\&/g'; }

$CHECK has "$F" "$(esc "$(pyframe alpha_outer mixed.py);$(pyframe alpha_spin mixed.py)")" ||
	fail "thread alpha's Python stack is missing"
$CHECK has "$F" "$(esc "$(pyframe beta_outer mixed.py);$(pyframe beta_spin mixed.py)")" ||
	fail "thread beta's Python stack is missing"
no_stack "$F" 'alpha_.*beta_|beta_.*alpha_' "two threads' Python frames in one stack"
# An eval call just entered or about to return has no Python frame linked:
# it is not paired with the caller's frames, nor left beside them.
no_stack "$F" '_PyEval_EvalFrameDefault.*_\[p\]|_\[p\].*_PyEval_EvalFrameDefault' \
	"an eval frame is left beside Python frames"
$CHECK has "$F" "$(esc "$(pyframe call_native mixed.py)");native_spin;native_burn" ||
	fail "the C frames are not right under the Python function that called them"
# The callback's native frames come from unwinding through the interpreter;
# where that stops short, the Python frames still keep their order.
$CHECK has "$F" "$(esc "$(pyframe call_with_callback mixed.py)");(native_call_back;)?$(esc "$(pyframe callback_spin mixed.py)")" ||
	fail "Python called back from C is not under its caller: $(grep callback "$F" | head -3)"
if grep -q native_call_back "$F"; then
	$CHECK has "$F" "$(esc "$(pyframe call_with_callback mixed.py)");native_call_back;$(esc "$(pyframe callback_spin mixed.py)")" ||
		fail "interpreter frames around the C frame that calls back: $(grep native_call_back "$F" | head -3)"
else
	echo "note: unwinding never reached native_call_back: $(grep 'cut short' "$WORK/mixed.err")"
fi
$CHECK has "$F" 'native_thread_main;native_burn' || fail "the native thread is missing"
no_stack "$F" 'native_thread_main.*_\[p\]' "Python frames in the thread that runs no Python"
echo PASS
