#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# The CPU/GPU timeline check of scripts/gpu-check.sh (tests/gpu/
# check_timeline.py) on Chrome traces of the mock CUDA stack, recorded and
# attached to: every span has its launch flow, starts after its launch and
# within the bound, and the counts are the application's.  The same checker must fail the trace
# when the launch times are corrupted (after the span, or far before it),
# when the flows are gone, and when a count is wrong.
. "$TESTS_SOURCE/lib/testlib.sh"
need_root
[ -x "$MOCK_APP" ] || skip "mock CUDA stack not built (no CUPTI headers)"
export LLMPROF_CUPTI_LIBRARY=$MOCK_CUPTI
CHECK_TIMELINE="python3 $TESTS_SOURCE/gpu/check_timeline.py"
N=40

"$LLMPROF" record -F 199 -f chrome -o "$WORK/trace.json" -- "$MOCK_APP" --iterations $N \
	>/dev/null 2>"$WORK/err" || fail "record failed: $(cat "$WORK/err")"
counts=()
for name in gemm_kernel softmax_kernel 'flash::attention_fwd<128>' layernorm_kernel mlp_kernel \
	residual_add memset 'memcpy HtoD' 'memcpy DtoH'; do
	counts+=(--count "$name=$N")
done
$CHECK_TIMELINE "$WORK/trace.json" --bound-ms 1000 "${counts[@]}" >"$WORK/good.out" ||
	fail "the mock's timeline: $(cat "$WORK/good.out")"
cat "$WORK/good.out"
grep -q "with a launch" "$WORK/good.out" || fail "no summary line"

# corrupt TRACE OUT MODE: the trace with its launch flows changed.
corrupt() {
	python3 - "$1" "$2" "$3" <<'PY'
import json, sys
doc = json.load(open(sys.argv[1]))
mode = sys.argv[3]
ends = {e["id"]: e["ts"] for e in doc["traceEvents"] if e["ph"] == "f"}
events = []
for e in doc["traceEvents"]:
    if e.get("cat") == "gpu.launch" and e["ph"] == "s":
        if mode == "after":
            e["ts"] = ends[e["id"]] + 50.0
        elif mode == "early":
            e["ts"] = ends[e["id"]] - 2.5e6
    if mode == "drop" and e.get("cat") == "gpu.launch":
        continue
    events.append(e)
doc["traceEvents"] = events
json.dump(doc, open(sys.argv[2], "w"))
PY
}
corrupt "$WORK/trace.json" "$WORK/after.json" after
if $CHECK_TIMELINE "$WORK/after.json" >"$WORK/after.out"; then
	fail "launches after their kernels passed: $(cat "$WORK/after.out")"
fi
grep -q 'before its launch' "$WORK/after.out" || fail "no 'before its launch': $(cat "$WORK/after.out")"

# Launches 2.5 s before their spans (before the profile's start, too).
corrupt "$WORK/trace.json" "$WORK/early.json" early
if $CHECK_TIMELINE "$WORK/early.json" --bound-ms 1000 >"$WORK/early.out"; then
	fail "launches 2.5 s before their kernels passed: $(cat "$WORK/early.out")"
fi
grep -q 'after its launch (bound 1000 ms)' "$WORK/early.out" || fail "the bound: $(cat "$WORK/early.out")"
if $CHECK_TIMELINE "$WORK/trace.json" --bound-ms 0.001 >"$WORK/tight.out"; then
	fail "a 1 us bound passed: $(cat "$WORK/tight.out")"
fi
grep -q 'after its launch (bound 0.001 ms)' "$WORK/tight.out" || fail "the bound: $(cat "$WORK/tight.out")"

corrupt "$WORK/trace.json" "$WORK/drop.json" drop
if $CHECK_TIMELINE "$WORK/drop.json" >"$WORK/drop.out"; then
	fail "a trace without launch flows passed: $(cat "$WORK/drop.out")"
fi
grep -q 'have a launch' "$WORK/drop.out" || fail "no missing-launch message: $(cat "$WORK/drop.out")"

if $CHECK_TIMELINE "$WORK/trace.json" --count "gemm_kernel=$((N + 1))" >"$WORK/count.out"; then
	fail "a wrong kernel count passed: $(cat "$WORK/count.out")"
fi
grep -q "gemm_kernel: $N spans, the program made $((N + 1))" "$WORK/count.out" ||
	fail "the count message: $(cat "$WORK/count.out")"
# The same agreement in a trace of an attach to a running process.
start_bg "$MOCK_APP" --seconds 8 >"$WORK/app.out" 2>"$WORK/app.err"
sleep 0.5
"$LLMPROF" attach -p "$BG_PID" -d 1.5 -f chrome -o "$WORK/attach.json" 2>"$WORK/attach.err" ||
	fail "attach failed: $(tail -3 "$WORK/attach.err")"
$CHECK_TIMELINE "$WORK/attach.json" --at-least gemm_kernel=1 >"$WORK/attach.out" ||
	fail "the attached mock's timeline: $(cat "$WORK/attach.out")"
cat "$WORK/attach.out"
echo PASS
