#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# --no-python leaves the interpreter's native frames; speedscope output
# gives Python frames their file and the line each frame was at.
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

"$LLMPROF" attach -p "$BG_PID" -d 1.5 -F 499 -f speedscope -o "$WORK/on.json" 2>"$WORK/on.err" ||
	fail "attach -f speedscope failed: $(cat "$WORK/on.err")"
$CHECK speedscope "$WORK/on.json" --schema "$SPEEDSCOPE_SCHEMA" || fail "invalid speedscope"
line=$(grep -n 'return burn(50)' "$PYTHON_FIXTURES/shares.py" | cut -d: -f1)
python3 - "$WORK/on.json" "$line" "$PYTHON_FIXTURES/shares.py" <<'CHECK' || fail "speedscope frames"
import json
import sys

doc = json.load(open(sys.argv[1]))
frames = [f for f in doc["shared"]["frames"] if f["name"].endswith("(shares.py)_[p]")]
if not frames:
    sys.exit("no Python frames")
for f in frames:
    if f.get("file") != sys.argv[3]:
        sys.exit(f"{f['name']}: file {f.get('file')!r}, expected {sys.argv[3]!r}")
lines = {f.get("line") for f in frames if f["name"] == "burn_a (shares.py)_[p]"}
if lines != {int(sys.argv[2])}:
    sys.exit(f"burn_a at lines {lines}, expected {{{sys.argv[2]}}}")
CHECK
echo PASS
