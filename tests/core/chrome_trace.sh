#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# Chrome traces (-f chrome) as Perfetto reads them: with attach and record,
# the known CPU shares of the ground truth come out of the slice durations
# within 3 points; --mode wall puts off-CPU intervals on the thread track
# with their shares; ranks are process metadata; a speedscope profile
# converts to a trace with its own shares, a folded one (no times) is
# refused, as are views without a timeline.
. "$TESTS_SOURCE/lib/testlib.sh"
need_root
TRACE="python3 $TESTS_SOURCE/lib/check_chrome_trace.py"

ground_truth() { # TRACE
	$TRACE "$1" --self burn_a=50 --self burn_b=30 --self burn_c=20 --total share_bc=50 \
		--total main=100 --tolerance 3 || fail "shares of $1"
}

start_bg "$FIXTURES/ground_truth" 5
sleep 0.5
"$LLMPROF" attach -p "$BG_PID" -d 3 -F 999 -f chrome -o "$WORK/attach.trace.json" \
	2>"$WORK/attach.err" || fail "attach failed: $(cat "$WORK/attach.err")"
ground_truth "$WORK/attach.trace.json"
grep -q "wrote a Chrome trace" "$WORK/attach.err" || fail "the summary names no Chrome trace"
python3 - "$WORK/attach.trace.json" "$BG_PID" <<'PY' || fail "metadata"
import json, sys
events = json.load(open(sys.argv[1]))["traceEvents"]
pid = int(sys.argv[2])
names = {(e["name"], e["tid"]): e["args"]["name"] for e in events
         if e["ph"] == "M" and e["pid"] == pid}
assert names.get(("process_name", 0)) == "ground_truth", names
assert names.get(("thread_name", pid)) == "ground_truth", names
PY
kill "$BG_PID"

"$LLMPROF" record -F 999 -f chrome -o "$WORK/record.trace.json" -- "$FIXTURES/ground_truth" 3 \
	>/dev/null 2>"$WORK/record.err" || fail "record failed: $(cat "$WORK/record.err")"
ground_truth "$WORK/record.trace.json"

# Wall time: 40 % burning, 20 % each in three waits, which are off-CPU
# slices.  Start-up before main is in the trace too: 4 points.
"$LLMPROF" record --no-children --mode wall -F 999 -f chrome -o "$WORK/wall.trace.json" -- \
	"$FIXTURES/waits" 2 >/dev/null 2>"$WORK/wall.err" ||
	fail "record --mode wall failed: $(cat "$WORK/wall.err")"
$TRACE "$WORK/wall.trace.json" --off-cpu --total burn=40 --total sleep_a_while=20 \
	--total wait_pipe=20 --total wait_futex=20 --tolerance 4 || fail "wall-clock shares"
grep -q '"name":"\[off-cpu\] nanosleep","cat":"off-cpu"' "$WORK/wall.trace.json" ||
	fail "no nanosleep off-CPU slice"

# Ranks (torchrun's RANK) name their processes and order them.
"$LLMPROF" record -F 499 -f chrome -o "$WORK/ranks.trace.json" -- \
	sh "$TESTS_SOURCE/core/fixtures/launcher.sh" /usr/bin/python3 \
	"$TESTS_SOURCE/core/fixtures/rank.py" 20 >/dev/null 2>"$WORK/ranks.err" ||
	fail "record of the launcher failed: $(cat "$WORK/ranks.err")"
$TRACE "$WORK/ranks.trace.json" >/dev/null || fail "ranks trace invalid"
python3 - "$WORK/ranks.trace.json" <<'PY' || fail "rank metadata"
import json, sys
meta = [e for e in json.load(open(sys.argv[1]))["traceEvents"] if e["ph"] == "M"]
names = {e["pid"]: e["args"]["name"] for e in meta if e["name"] == "process_name"}
labels = {e["pid"]: e["args"]["labels"] for e in meta if e["name"] == "process_labels"}
order = {e["pid"]: e["args"]["sort_index"] for e in meta if e["name"] == "process_sort_index"}
for rank in range(3):
    pids = [pid for pid, label in labels.items() if label == f"rank {rank}"]
    assert len(pids) == 1, labels
    assert names[pids[0]] == f"python3 [rank {rank}]", names
    assert order[pids[0]] == rank, order
PY

# Conversion keeps the timeline of a speedscope profile.
"$LLMPROF" record -F 999 -f speedscope -o "$WORK/record.json" -- "$FIXTURES/ground_truth" 1 \
	>/dev/null 2>&1 || fail "record speedscope failed"
"$LLMPROF" convert -f chrome -o "$WORK/converted.trace.json" "$WORK/record.json" ||
	fail "convert -f chrome failed"
"$LLMPROF" convert -f folded -o "$WORK/record.folded" "$WORK/record.json" || fail "to folded"
# The same samples: the same shares as the profile's own weights.
$TRACE "$WORK/converted.trace.json" --match-folded "$WORK/record.folded" --tolerance 1 ||
	fail "converted shares differ from the profile's"
"$LLMPROF" convert -f chrome -o "$WORK/no.trace.json" "$WORK/record.folded" 2>"$WORK/err"
[ $? = 2 ] || fail "convert of folded input to chrome did not exit 2"
[ "$(wc -l <"$WORK/err")" = 1 ] && grep -q "has no times" "$WORK/err" ||
	fail "not a one-line error: $(cat "$WORK/err")"
[ -e "$WORK/no.trace.json" ] && fail "a trace was written for folded input"
"$LLMPROF" record --gpu-memory -f chrome -- true 2>"$WORK/err"
[ $? = 2 ] || fail "--gpu-memory -f chrome did not exit 2"
[ "$(wc -l <"$WORK/err")" = 1 ] || fail "not a one-line error: $(cat "$WORK/err")"
"$LLMPROF" merge -f chrome "$WORK/record.folded" 2>"$WORK/err"
[ $? = 2 ] || fail "merge -f chrome did not exit 2"
echo PASS
