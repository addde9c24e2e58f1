#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# A script whose threads are named in Python (threading.Thread(name=...)),
# left to threading's own name, or named by themselves in the kernel
# (prctl) only, profiled as speedscope: each thread profile carries the
# thread's Python name (the self-named one keeps its own); Python frames
# have no marks, are one frame per function (step() burns in three lines),
# and --lines gives one per line; the files pass speedscope's schema and
# read back as the folded frames; a Chrome trace of it names its thread
# tracks the same way.  $1: the interpreter.
. "$TESTS_SOURCE/lib/testlib.sh"
. "$TESTS_SOURCE/python/pylib.sh"
need_root
PY=$1
need_python "$PY"
script=$PYTHON_FIXTURES/named_threads.py

# Attached once the threads run (a loaded machine may take most of a short
# recording to start the interpreter).
start_bg "$PY" "$script" 30 >"$WORK/script.out"
wait_ready "$WORK/script.out"
for lines in "" --lines; do
	out=$WORK/threads${lines}.json
	"$LLMPROF" attach -p "$BG_PID" -d 1.5 -F 299 -f speedscope $lines -o "$out" \
		2>"$WORK/attach.err" || fail "attach $lines failed: $(cat "$WORK/attach.err")"
	if [ -f "$SPEEDSCOPE_SCHEMA" ]; then
		$CHECK speedscope "$out" --schema "$SPEEDSCOPE_SCHEMA" ||
			fail "invalid speedscope $lines"
	fi
	python3 - "$out" "$script" "$lines" <<'CHECK' || fail "speedscope $lines ($(python_minor "$PY"))"
import json
import re
import sys

doc = json.load(open(sys.argv[1]))
script, by_line = sys.argv[2], sys.argv[3] == "--lines"
names = [re.sub(r" \(pid \d+, tid \d+\)$", "", p["name"]) for p in doc["profiles"]]
for want in ("MainThread", "loader", "writer", "selfnamed"):
    if want not in names:
        sys.exit(f"no thread profile named {want!r}: {names}")
if not any(re.fullmatch(r"Thread-\d+ \(step\)", n) for n in names):
    sys.exit(f"no thread with threading's own name: {names}")
frames = doc["shared"]["frames"]
marked = [f["name"] for f in frames if f["name"].endswith("_[p]") or ".py)" in f["name"]]
if marked:
    sys.exit(f"Python frames with marks: {marked[:5]}")
steps = [f for f in frames if f["name"] == "step" and f.get("file") == script]
body = [i + 1 for i, text in enumerate(open(script)) if re.match(r"\s+x [-+^]= i$", text)]
if not by_line:
    if len(steps) != 1 or "line" in steps[0]:
        sys.exit(f"step is not one frame without a line: {steps}")
else:
    seen = {f.get("line") for f in steps}
    if len(steps) < 2 or not seen & set(body):
        sys.exit(f"--lines: step frames {steps}, expected some of lines {body}")
print(f"threads {names}; step frames: {len(steps)}")
CHECK
	"$LLMPROF" convert -f folded -o "$WORK/back.folded" "$out" || fail "read back $lines"
	grep -qF ";$(pyframe step named_threads.py)" "$WORK/back.folded" ||
		fail "step read back: $(head -3 "$WORK/back.folded")"
done
# The Chrome trace's thread tracks carry the same names.
"$LLMPROF" convert -f chrome -o "$WORK/threads.trace.json" "$WORK/threads.json" ||
	fail "convert -f chrome"
python3 - "$WORK/threads.trace.json" <<'CHECK' || fail "Chrome trace thread names"
import json
import sys

events = json.load(open(sys.argv[1]))["traceEvents"]
names = {e["args"]["name"] for e in events if e.get("ph") == "M" and e["name"] == "thread_name"}
missing = {"MainThread", "loader", "writer", "selfnamed"} - names
if missing:
    sys.exit(f"no thread track named {sorted(missing)}: {sorted(names)}")
CHECK
echo PASS
