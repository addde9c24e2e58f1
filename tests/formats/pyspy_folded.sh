#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# py-spy's folded stacks (`py-spy record -f raw`): its Python frames,
# "function (file.py:LINE)" without llmprof's mark, are Python functions with
# their file and line for Google's pprof (pprof -raw), speedscope and the
# findings; its roots ("process PID:\"CMD\"", "thread (TID): NAME") and the
# native frames of --native ("memcpy (libc.so.6)", "addmm (Blas.cpp:260)")
# stay native; and the file comes back byte for byte through folded,
# speedscope and pprof.  The input is written the way py-spy 0.4's
# src/flamegraph.rs, src/main.rs and src/native_stack_trace.rs write frames.
. "$TESTS_SOURCE/lib/testlib.sh"

# Sorted, as llmprof writes folded stacks.
cat >"$WORK/pyspy.folded" <<'FOLDED'
process 4242:"python train.py --epochs 3";process 4250:"python -m worker";thread (4250): MainThread;<module> (worker.py:7);serve (worker.py:30) 4
process 4242:"python train.py --epochs 3";thread (4242): MainThread;<module> (train.py:12);_find_and_load (<frozen importlib._bootstrap>:1176) 1
process 4242:"python train.py --epochs 3";thread (4242): MainThread;<module> (train.py:12);train (train.py:40);Module._call_impl (torch/nn/modules/module.py:1747);forward (model.py:88);PyEval_EvalFrameDefault (libpython3.11.so.1.0);at::native::addmm_out (Blas.cpp:260);0x7f3a2b4c5740 (?) 9
process 4242:"python train.py --epochs 3";thread (4242): MainThread;<module> (train.py:12);train (train.py:40);Module._call_impl (torch/nn/modules/module.py:1747);forward (model.py:88);std::function<void ()>::operator() (std_function.h:591) 2
process 4242:"python train.py --epochs 3";thread (4242): MainThread;<module> (train.py:12);train (train.py:41);load_batch (data.py:21);memcpy (libc.so.6) 5
process 4242:"python train.py --epochs 3";thread (4243): Thread-1 (prefetch);_bootstrap (threading.py:1002);run (threading.py:982);prefetch (data.py:50) 3
FOLDED

# Folded -> folded, -> speedscope -> folded, -> pprof -> folded.
"$LLMPROF" convert -f folded "$WORK/pyspy.folded" | cmp - "$WORK/pyspy.folded" ||
	fail "folded -> folded changed it: $("$LLMPROF" convert -f folded "$WORK/pyspy.folded")"
"$LLMPROF" convert -f speedscope -o "$WORK/pyspy.json" "$WORK/pyspy.folded" || fail "to speedscope"
"$LLMPROF" convert -f folded "$WORK/pyspy.json" | cmp - "$WORK/pyspy.folded" ||
	fail "folded -> speedscope -> folded changed it"
"$LLMPROF" convert -f pprof -o "$WORK/pyspy.pb.gz" "$WORK/pyspy.folded" || fail "to pprof"
"$LLMPROF" convert -f folded "$WORK/pyspy.pb.gz" | cmp - "$WORK/pyspy.folded" ||
	fail "folded -> pprof -> folded changed it"
"$PPROF" -proto "$WORK/pyspy.pb.gz" >"$WORK/go.pb.gz" 2>"$WORK/err" || fail "pprof -proto: $(cat "$WORK/err")"
"$LLMPROF" convert -f folded "$WORK/go.pb.gz" | cmp - "$WORK/pyspy.folded" ||
	fail "pprof's own encoding of it reads differently"

# Google's pprof: each Python frame a function of its own name, in its .py
# file, at its line; native frames by their whole text, without a file.
"$PPROF" -raw "$WORK/pyspy.pb.gz" >"$WORK/raw" 2>&1 || fail "pprof -raw: $(cat "$WORK/raw")"
python3 - "$WORK/raw" "$WORK/pyspy.folded" <<'CHECK' || fail "pprof -raw: $(cat "$WORK/raw")"
import re
import sys

raw, folded = open(sys.argv[1]).read(), open(sys.argv[2]).read()
# "     3: 0x0 M=1 forward model.py:88 s=0"
locations = set(re.findall(r"^ +\d+: 0x\w+ M=\d+ (.*) s=\d+(?:\(\))?$", raw, re.M))
frames = {f for line in folded.splitlines() for f in line.rsplit(" ", 1)[0].split(";")}
python = {f for f in frames if re.fullmatch(r".* \((.*\.py|<frozen .*>):\d+\)", f)}
want = {"forward (model.py:88)", "train (train.py:41)", "serve (worker.py:30)",
        "_find_and_load (<frozen importlib._bootstrap>:1176)",
        "Module._call_impl (torch/nn/modules/module.py:1747)"}
if not want <= python or len(python) != 12:
    sys.exit(f"the test's own Python frames: {sorted(python)}")
for text in sorted(python):
    name, file, line = re.fullmatch(r"(.*) \((.*):(\d+)\)", text).groups()
    if f"{name} {file}:{line}" not in locations:
        sys.exit(f"{text}: no location '{name} {file}:{line}' in {sorted(locations)}")
for text in sorted(frames - python):
    # pprof prints a location with no file and no line as "NAME :0".
    if not any(l.startswith(text + " ") for l in locations):
        sys.exit(f"native frame {text!r} is not a location of its own: {sorted(locations)}")
if any(".py" in l.split(" ")[0] for l in locations):
    sys.exit(f"a Python file in a function's name: {sorted(locations)}")
print(f"{len(python)} Python frames with their file and line in pprof -raw, "
      f"{len(frames - python)} native ones by their text")
CHECK

# Speedscope: the Python function alone, its file and line beside it.
python3 - "$WORK/pyspy.json" <<'CHECK' || fail "Python frames in speedscope"
import json
import sys

frames = json.load(open(sys.argv[1]))["shared"]["frames"]
forward = [f for f in frames if f["name"] == "forward"]
if forward != [{"name": "forward", "file": "model.py", "line": 88}]:
    sys.exit(f"forward: {forward}")
natives = [f for f in frames if f["name"] == "memcpy (libc.so.6)"]
if len(natives) != 1 or "file" in natives[0]:
    sys.exit(f"memcpy: {natives}")
CHECK

# The findings and the report point at the Python code.
"$LLMPROF" report --findings "$WORK/pyspy.folded" >"$WORK/findings" || fail "findings"
grep -qF 'where: serve (worker.py:30)' "$WORK/findings" ||
	fail "findings do not point at serve (worker.py:30): $(cat "$WORK/findings")"
"$LLMPROF" report -f json --top 0 "$WORK/pyspy.folded" >"$WORK/report.json" || fail "report"
grep -qF '"forward (model.py)_[p]"' "$WORK/report.json" ||
	fail "report does not name forward as a Python function: $(head -c 800 "$WORK/report.json")"
echo PASS
