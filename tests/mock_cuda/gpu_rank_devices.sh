#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# Two ranks that each see their GPU as device 0 (CUDA_VISIBLE_DEVICES per
# rank) are two GPUs: on the mock CUDA stack, rank 0 runs its loop for 1 s
# and rank 1 for 3 s, both on mock device 0, under one record.  The GPU
# summary gives each rank's device 0 its own busy figure, named with the
# rank and pid, equal to the union of that process's GPU spans in the Chrome
# trace; the trace has a GPU track per process, each span's launch flow
# from that process; gpu-idle names the idle rank's GPU.
. "$TESTS_SOURCE/lib/testlib.sh"
need_root
export LLMPROF_CUPTI_LIBRARY=$MOCK_CUPTI

"$LLMPROF" record -f chrome -o "$WORK/ranks.json" -- sh -c \
	"RANK=0 '$MOCK_APP' --seconds 1 >/dev/null & RANK=1 '$MOCK_APP' --seconds 3 >/dev/null; wait" \
	2>"$WORK/err" || fail "record exited $?: $(tail "$WORK/err")"
python3 - "$WORK/ranks.json" "$WORK/err" <<'PY' || fail "$(grep -A4 'GPU summary' "$WORK/err")"
import json, re, sys
trace = json.load(open(sys.argv[1]))["traceEvents"]
err = open(sys.argv[2]).read()
bad = []
rows = re.findall(r"^  device 0 of mock_app \[rank (\d)\], pid (\d+): busy ([\d.]+)% of ([\d.]+) s wall time$", err, re.M)
if sorted(r[0] for r in rows) != ["0", "1"]:
    sys.exit("summary rows: %s" % rows)
if re.search(r"^  device 0: busy", err, re.M):
    bad.append("a device 0 row without its process")
# The GPU tracks: name -> pid of the track, and the union of its spans.
names = {e["pid"]: e["args"]["name"] for e in trace
         if e.get("ph") == "M" and e.get("name") == "process_name" and e["args"]["name"].startswith("GPU ")}
spans = {}
for e in trace:
    if e.get("ph") == "X" and e["pid"] in names:
        spans.setdefault(e["pid"], []).append((e["ts"], e["ts"] + e["dur"]))
def union(v):
    total, end = 0.0, None
    for s, t in sorted(v):
        if end is None or s > end:
            total += t - s
            end = t
        elif t > end:
            total += t - end
            end = t
    return total
busy = {}
for rank, pid, share, wall in rows:
    name = "GPU 0 (mock_app [rank %s], pid %s)" % (rank, pid)
    track = [p for p, n in names.items() if n == name]
    if len(track) != 1:
        bad.append("no track %r in %s" % (name, sorted(names.values())))
        continue
    us = union(spans.get(track[0], []))
    busy[rank] = float(share)
    if abs(100 * us / (float(wall) * 1e6) - float(share)) > 0.15:
        bad.append("rank %s: busy %s%% in the summary, %.2f%% in its track" % (rank, share, 100 * us / (float(wall) * 1e6)))
    # Each span's launch flow starts on that rank's own process.
    flows = {e["id"]: e for e in trace if e.get("ph") == "s"}
    for e in trace:
        if e.get("ph") == "f" and e["pid"] == track[0] and flows[e["id"]]["pid"] != int(pid):
            bad.append("rank %s: a span launched from pid %s" % (rank, flows[e["id"]]["pid"]))
            break
if len(names) != 2:
    bad.append("GPU tracks: %s" % sorted(names.values()))
if busy and not busy["1"] > 2 * busy["0"]:
    bad.append("rank 1 (3 s) not busier than rank 0 (1 s): %s" % busy)
if not re.search(r"The GPU of mock_app \[rank 0\], pid \d+ \(GPU 0\) is idle", err):
    bad.append("gpu-idle does not name rank 0's GPU")
for b in bad:
    print("FAIL:", b, file=sys.stderr)
sys.exit(1 if bad else 0)
PY
grep "device 0 of" "$WORK/err"
echo PASS
