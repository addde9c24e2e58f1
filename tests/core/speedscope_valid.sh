#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# Speedscope output validates against the schema shipped with speedscope,
# has a profile per thread, in-range frame indices, a real timeline.
. "$TESTS_SOURCE/lib/testlib.sh"
need_root

"$LLMPROF" record -F 499 -f speedscope -o "$WORK/p.json" -- "$FIXTURES/threads" 0.2 1 \
	>/dev/null 2>"$WORK/err" || fail "record failed: $(cat "$WORK/err")"
$CHECK speedscope "$WORK/p.json" --schema "$SPEEDSCOPE_SCHEMA" || fail "invalid"
python3 - "$WORK/p.json" <<'PY' || fail "speedscope content"
import json, sys
doc = json.load(open(sys.argv[1]))
profiles = [p for p in doc["profiles"] if p["type"] == "sampled"]
assert len(profiles) >= 3, f"expected a profile per busy thread, got {len(profiles)}"
assert doc["exporter"].startswith("llmprof"), doc["exporter"]
for p in profiles:
    assert p["unit"] == "microseconds", p["unit"]
    # The timeline spans the run: about 1.2 s for the busy threads.
    assert p["endValue"] <= 3e6, p["endValue"]
names = [f["name"] for f in doc["shared"]["frames"]]
assert "late_thread_work" in names, names[:20]
frame = doc["shared"]["frames"][names.index("late_thread_work")]
assert frame.get("file", "").endswith("threads.c") and frame.get("line", 0) > 0, frame
busy = max(profiles, key=lambda p: sum(p["weights"]))
assert 0.6e6 < sum(busy["weights"]) <= 1.5e6, sum(busy["weights"])
print("speedscope content ok")
PY
echo PASS
