#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# A Python frame is a function's name and its file in every format:
# py-spy's speedscope, llmprof's own folded Python stacks and a pprof file
# that Google's encoder wrote (python_pprof_gen.go) go folded -> pprof ->
# speedscope -> folded (and the other way round, and through pprof's own
# encoder) without a byte changed; Google's pprof and the speedscope file
# see each Python function as its name, unmarked, with its file (full paths
# kept); report and findings name the same functions and places from all.
. "$TESTS_SOURCE/lib/testlib.sh"
inputs=$TESTS_SOURCE/diff/inputs
gopath=/usr/share/gocode
command -v go >/dev/null || skip "no go command (golang-go)"
[ -d "$gopath/src/github.com/google/pprof/profile" ] ||
	skip "no pprof Go sources in $gopath (golang-github-google-pprof-dev)"

mkdir -p "$WORK/gen"
cp "$TESTS_SOURCE/formats/python_pprof_gen.go" "$WORK/gen/main.go"
(cd "$WORK/gen" && GOPATH=$gopath GO111MODULE=off GOFLAGS= GOCACHE=$WORK/gocache \
	go run main.go >"$WORK/google.pb.gz") 2>"$WORK/err" || fail "python_pprof_gen.go: $(cat "$WORK/err")"
"$LLMPROF" convert -f folded -o "$WORK/go.folded" "$WORK/google.pb.gz" || fail "read Google's pprof"
cat >"$WORK/go.expected" <<'FOLDED'
<module> (train.py)_[p];_find_and_load (<frozen importlib._bootstrap>)_[p] 1
<module> (train.py)_[p];train (train.py)_[p];Module._call_impl (torch/nn/modules/module.py)_[p];Model.forward (model.py)_[p] 7
<module> (train.py)_[p];train (train.py)_[p];load_batch (data.py)_[p] 3
Thread._bootstrap (threading.py)_[p];Thread.run (threading.py)_[p];prefetch (data.py)_[p];read 2
FOLDED
diff -u "$WORK/go.expected" "$WORK/go.folded" || fail "Python functions of Google's pprof"
"$LLMPROF" convert -f folded -o "$WORK/pyspy.folded" "$inputs/pyspy.speedscope.json" ||
	fail "read py-spy's speedscope"
cp "$TESTS_SOURCE/core/golden/python.folded" "$WORK/own.folded"

# pprof -raw's locations ("  1: 0x0 M=1 NAME FILE:LINE s=0"; pprof drops a
# name that is all "<...>") hold each Python frame of the folded text
# ("NAME (SHORT FILE)_[p]") as its name and a file that ends in SHORT FILE.
check_pprof_python() {
	python3 - "$1" "$2" <<'CHECK' || fail "$3: pprof does not see the Python functions with their files"
import re
import sys

raw, folded = open(sys.argv[1]).read(), open(sys.argv[2]).read()
locations = re.findall(r"^ +\d+: 0x\w+ M=\d+ (.*):\d+ s=\d+", raw, re.M)
texts = set()
for line in folded.splitlines():
    texts.update(f[:-4] for f in line.rsplit(" ", 1)[0].split(";") if f.endswith("_[p]"))
for text in sorted(texts):
    name, short = re.fullmatch(r"(.*) \((.*)\)", text).groups()
    if short == "python":
        name, short = "[unknown]", "<unknown>"
    if not any(l.startswith((name + " ", " ")) and l.endswith(short) for l in locations):
        sys.exit(f"{text}: no location of {name!r} in a file ending {short!r}")
if any("_[p]" in l or ".py)" in l for l in locations):
    sys.exit(f"a marked Python function in pprof -raw: {locations}")
print(f"{len(texts)} Python functions, each with its file in pprof -raw")
CHECK
}

for f in go pyspy own; do
	LC_ALL=C sort "$WORK/$f.folded" >"$WORK/a.folded"
	"$LLMPROF" convert -f pprof -o "$WORK/$f.pb.gz" "$WORK/a.folded" || fail "$f to pprof"
	"$LLMPROF" convert -f speedscope -o "$WORK/$f.json" "$WORK/$f.pb.gz" || fail "$f: pprof to speedscope"
	"$LLMPROF" convert -f folded "$WORK/$f.json" | cmp - "$WORK/a.folded" ||
		fail "$f: folded -> pprof -> speedscope -> folded changed it"
	"$LLMPROF" convert -f speedscope -o "$WORK/$f.direct.json" "$WORK/a.folded" || fail "$f to speedscope"
	"$LLMPROF" convert -f pprof -o "$WORK/$f.again.pb.gz" "$WORK/$f.direct.json" || fail "$f: speedscope to pprof"
	"$LLMPROF" convert -f folded "$WORK/$f.again.pb.gz" | cmp - "$WORK/a.folded" ||
		fail "$f: folded -> speedscope -> pprof -> folded changed it"
	"$PPROF" -proto "$WORK/$f.pb.gz" >"$WORK/$f.go.pb.gz" 2>"$WORK/err" || fail "$f: pprof -proto: $(cat "$WORK/err")"
	"$LLMPROF" convert -f folded "$WORK/$f.go.pb.gz" | cmp - "$WORK/a.folded" ||
		fail "$f: pprof's own encoding of it reads differently"
	"$PPROF" -raw "$WORK/$f.pb.gz" >"$WORK/raw" 2>&1 || fail "$f: pprof -raw: $(cat "$WORK/raw")"
	check_pprof_python "$WORK/raw" "$WORK/a.folded" "$f"
	# Speedscope names a Python function alone and gives its file.
	python3 - "$WORK/$f.json" <<'CHECK' || fail "$f: Python frames in speedscope"
import json
import sys

frames = json.load(open(sys.argv[1]))["shared"]["frames"]
python = [f for f in frames if "file" in f]
marked = [f["name"] for f in frames if f["name"].endswith("_[p]")]
if not python or marked:
    sys.exit(f"Python frames {python[:3]}, marked {marked[:3]}")
CHECK
	"$LLMPROF" report --top 0 "$WORK/a.folded" | tail -n +2 >"$WORK/folded.report"
	for g in "$WORK/$f.pb.gz" "$WORK/$f.json"; do
		"$LLMPROF" report --top 0 "$g" | tail -n +2 | diff -u "$WORK/folded.report" - ||
			fail "$f: report of $(basename "$g") and of its folded differ"
	done
done

# The full paths of Google's pprof survive pprof -> speedscope -> pprof.
"$LLMPROF" convert -f speedscope -o "$WORK/full.json" "$WORK/google.pb.gz" ||
	fail "google.pb.gz to speedscope"
grep -qF '"name":"Model.forward","file":"/home/user/job/model.py"' "$WORK/full.json" ||
	fail "speedscope lost the full path: $(head -c 600 "$WORK/full.json")"
"$LLMPROF" convert -f pprof -o "$WORK/full.pb.gz" "$WORK/full.json" || fail "full paths to pprof"
"$PPROF" -raw "$WORK/full.pb.gz" | grep -qE ' Model\.forward /home/user/job/model\.py:[0-9]+ ' ||
	fail "pprof lost the full path: $("$PPROF" -raw "$WORK/full.pb.gz" | grep -m2 forward)"

# Findings point at the same Python code, with its line where the format
# keeps one (pprof), from every format.
"$LLMPROF" report --findings "$WORK/google.pb.gz" >"$WORK/findings" ||
	fail "findings of google.pb.gz"
grep -qF 'where: Model.forward (model.py:12)' "$WORK/findings" ||
	fail "findings of Google's pprof: $(cat "$WORK/findings")"
for g in "$WORK/go.folded" "$WORK/go.json" "$WORK/full.json"; do
	"$LLMPROF" report --findings "$g" >"$WORK/findings" || fail "findings of $g"
	grep -qE 'where: Model\.forward \(model\.py(:12)?\)$' "$WORK/findings" ||
		fail "findings of $(basename "$g"): $(cat "$WORK/findings")"
done
echo PASS
