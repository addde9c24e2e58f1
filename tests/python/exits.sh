#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# The interpreter exits mid-profile: the profile ends there, complete, with
# its Python frames (their code objects were read while it ran).
. "$TESTS_SOURCE/lib/testlib.sh"
. "$TESTS_SOURCE/python/pylib.sh"
need_root
PY=$1
need_python "$PY"

start_bg "$PY" "$PYTHON_FIXTURES/shares.py" 1.5
sleep 0.3
"$LLMPROF" attach -p "$BG_PID" -d 30 -F 999 -o "$WORK/exits.folded" 2>"$WORK/exits.err" ||
	fail "attach failed: $(cat "$WORK/exits.err")"
grep -q "exited" "$WORK/exits.err" || fail "no note that the target exited"
$CHECK folded "$WORK/exits.folded" || fail "invalid folded output"
$CHECK shares "$WORK/exits.folded" --total "$(pyframe burn_a shares.py)=50" \
	--total "$(pyframe share_bc shares.py)=50" --tolerance 5 ||
	fail "the Python frames are not all there"
echo PASS
