#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# llmprof record and attach on the mock CUDA stack, end to end: the agent
# goes in from llmprof's own image, the launch probe gives each kernel,
# memcpy and memset the CPU stack that launched it, GPU time matches the
# mock's programmed durations, a second attach works, and the application's
# output is unchanged.  MODE (record, attach, launch_rate, record_nofp, or
# unnamed: the agent's kernel-name table full) is the first argument.
. "$TESTS_SOURCE/lib/testlib.sh"
need_root
mode=$1
export LLMPROF_CUPTI_LIBRARY=$MOCK_CUPTI

# check_folded FILE [ITERATIONS]: every GPU leaf under the function that
# launched it; with ITERATIONS, microseconds per iteration as programmed,
# else only the ratios between kernels.
check_folded() {
	python3 - "$@" <<'PY' || fail "$1: $(grep gpu "$1" | head -20)"
import os, sys
path = sys.argv[1]
iterations = int(sys.argv[2]) if len(sys.argv) > 2 else 0
# leaf: (launching function, microseconds per iteration)
want = {
    "gemm_kernel": ("run_gemm", 2000),
    "softmax_kernel": ("run_softmax", 1000),
    "flash::attention_fwd<128>": ("run_attention", 500),
    "layernorm_kernel": ("run_graph_step", 300),
    "mlp_kernel": ("run_graph_step", 400),
    "residual_add": ("run_graph_step", 200),
    "memcpy HtoD": ("upload_batch", None),
    "memcpy DtoH": ("download_result", None),
    "memset": ("clear_tail", None),
}
# GRAPH_UNATTRIBUTED: a session after the process's first on a CUPTI before
# 13.1 Update 1, whose graph kernels' correlation ids are wrong: they must
# be unattributed, never under another launch.
graph_unattributed = os.environ.get("GRAPH_UNATTRIBUTED")
# A second process of the tree, with correlation ids of its own: its
# kernels under its own launcher, or unattributed while the tree is not
# sampled, never under the first process's launches with the same ids.
child = os.environ.get("WANT_CHILD")
child_us = mixed = stray = 0
total, under = {}, {}
for line in open(path):
    stack, _, weight = line.rstrip("\n").rpartition(" ")
    frames = stack.split(";")
    if not frames[-1].startswith("[gpu] "):
        continue
    # A launch stack is the launching thread's, whole: from _start, with
    # no frame before it or that no module holds (a walk that went on
    # from another's state ended in a word of the stack's top).
    if "main" in frames and (frames[1] != "_start" or any(f.startswith("[unknown") for f in frames)):
        stray += int(weight)
        print("stray frames:", line.strip(), file=sys.stderr)
    leaf = frames[-1][6:]
    if child and leaf == "child_kernel":
        child_us += int(weight)
        if "child_step" not in frames and "[unattributed]" not in frames:
            mixed += int(weight)
        continue
    # Copies name their host memory; the mock's is pageable.
    if leaf.startswith("memcpy "):
        assert leaf.endswith(" (pageable)"), leaf
        leaf = leaf[: -len(" (pageable)")]
    total[leaf] = total.get(leaf, 0) + int(weight)
    launcher = want.get(leaf, ("", None))[0]
    if graph_unattributed and launcher == "run_graph_step":
        launcher = "[unattributed]"
    if launcher in frames:
        under[leaf] = under.get(leaf, 0) + int(weight)
bad = []
for leaf, (launcher, us) in want.items():
    t, u = total.get(leaf, 0), under.get(leaf, 0)
    if graph_unattributed and launcher == "run_graph_step":
        if not t or u != t:
            bad.append(f"{leaf}: {t - u} of {t} us not unattributed")
        continue
    # At attach, launches made before the probe was in are unattributed.
    if not t or u < (0.97 if iterations else 0.9) * t:
        bad.append(f"{leaf}: {u} of {t} us under {launcher}")
    if us and iterations and abs(t / iterations / us - 1) > 0.10:
        bad.append(f"{leaf}: {t / iterations:.0f} us per iteration, programmed {us}")
if not iterations and total.get("softmax_kernel"):
    for leaf, ratio in (("gemm_kernel", 2.0), ("flash::attention_fwd<128>", 0.5)):
        got = total.get(leaf, 0) / total["softmax_kernel"]
        if abs(got / ratio - 1) > 0.10:
            bad.append(f"{leaf}/softmax_kernel = {got:.2f}, programmed {ratio}")
if stray:
    bad.append(f"{stray} us on stacks with stray frames")
if child and (not child_us or mixed):
    bad.append(f"child_kernel: {mixed} of {child_us} us under the other process's launches")
for b in bad:
    print("FAIL:", b, file=sys.stderr)
sys.exit(1 if bad else 0)
PY
}

"$MOCK_APP" --iterations 3 >"$WORK/reference" 2>/dev/null || fail "mock_app alone failed"

if [ "$mode" = record_nofp ]; then
	# The libraries and the app have no frame pointers, the libraries no
	# symbols but .dynsym: every launch stack must still reach main.
	for lib in "$(dirname "$MOCK_CUPTI")"/libcu*.so.13; do
		! readelf -S "$lib" | grep -q '\.symtab' || fail "$lib is not stripped"
		readelf -S "$lib" | grep -q '\.eh_frame ' || fail "$lib has no .eh_frame"
	done
	"$LLMPROF" record -o "$WORK/nofp.folded" -- "$MOCK_APP" --seconds 2 \
		>"$WORK/app.out" 2>"$WORK/app.err" || fail "record exited $?: $(tail "$WORK/app.err")"
	cmp -s "$WORK/app.out" "$WORK/reference" || fail "the application's output changed"
	iterations=$(sed -n 's/^iterations //p' "$WORK/app.err")
	check_folded "$WORK/nofp.folded" "$iterations"
	python3 - "$WORK/nofp.folded" <<'PY' || fail "GPU leaves whose stacks do not reach main"
import sys
total = cut = 0
for line in open(sys.argv[1]):
    stack, _, weight = line.rstrip("\n").rpartition(" ")
    frames = stack.split(";")
    if frames[-1].startswith("[gpu] "):
        total += int(weight)
        if "main" not in frames:
            cut += int(weight)
            print("no main:", line.strip(), file=sys.stderr)
sys.exit(1 if not total or cut > 0.01 * total else 0)
PY
	echo PASS
	exit 0
fi

if [ "$mode" = launch_rate ]; then
	# At 2 launch stacks a second (graph launches 1), nearly every launch
	# takes none: every GPU leaf must still be whole under the function
	# that launched it, at its programmed time per iteration, and no thread
	# may take more stacks than its two buckets allow in the time it ran.
	start=$(date +%s%N)
	"$LLMPROF" record --launch-stack-rate 2 -o "$WORK/rate.folded" -- "$MOCK_APP" --seconds 2 \
		>"$WORK/app.out" 2>"$WORK/app.err" || fail "record exited $?: $(tail "$WORK/app.err")"
	elapsed_ns=$(($(date +%s%N) - start))
	cmp -s "$WORK/app.out" "$WORK/reference" || fail "the application's output changed"
	iterations=$(sed -n 's/^iterations //p' "$WORK/app.err")
	check_folded "$WORK/rate.folded" "$iterations"
	line=$(grep "launch stacks:" "$WORK/app.err") || fail "no launch stacks line: $(cat "$WORK/app.err")"
	read -r taken skipped < <(echo "$line" | sed -n 's/.*: \([0-9]*\) taken, \([0-9]*\) launches.*/\1 \2/p')
	# One launching thread: a burst of 16 on each bucket, then 2 + 1 a second.
	limit=$((2 * 16 + 3 * elapsed_ns / 1000000000 + 3 + 2))
	[ -n "$taken" ] && [ "$taken" -le "$limit" ] && [ "$skipped" -gt "$taken" ] ||
		fail "$taken stacks taken (at most $limit in $((elapsed_ns / 1000000)) ms), $skipped skipped"
	! grep -q "unattributed" "$WORK/app.err" || fail "$(grep unattributed "$WORK/app.err")"
	echo "taken $taken skipped $skipped limit $limit iterations $iterations"
	"$LLMPROF" record --launch-stack-rate -1 -- true 2>"$WORK/bad.err"
	rc=$?
	[ "$rc" = 2 ] && grep -q -- "--launch-stack-rate" "$WORK/bad.err" ||
		fail "--launch-stack-rate -1: exit $rc, $(cat "$WORK/bad.err")"
	echo PASS
	exit 0
fi

if [ "$mode" = launch_governor ]; then
	# Every launch takes its stack (--launch-stack-rate 0) until the
	# overhead governor, at a budget no run holds, slows the clock by N:
	# from then on 1 launch in N takes one.  Every GPU leaf must still be
	# whole under the function that launched it, at its programmed time.
	"$LLMPROF" record -v -F 999 --max-overhead 0.01 --launch-stack-rate 0 \
		-o "$WORK/governed.folded" -- "$MOCK_APP" --seconds 4 \
		>"$WORK/app.out" 2>"$WORK/app.err" || fail "record exited $?: $(tail "$WORK/app.err")"
	cmp -s "$WORK/app.out" "$WORK/reference" || fail "the application's output changed"
	iterations=$(sed -n 's/^iterations //p' "$WORK/app.err")
	check_folded "$WORK/governed.folded" "$iterations"
	slowing=$(sed -n 's/.*GPU launch stacks \([0-9]*\) times rarer.*/\1/p' "$WORK/app.err" | tail -1)
	[ -n "$slowing" ] && [ "$slowing" -gt 1 ] ||
		fail "the governor did not make launch stacks rarer: $(grep -i overhead "$WORK/app.err")"
	line=$(grep "launch stacks:" "$WORK/app.err") || fail "no launch stacks line: $(cat "$WORK/app.err")"
	read -r taken skipped < <(echo "$line" | sed -n 's/.*: \([0-9]*\) taken, \([0-9]*\) launches.*/\1 \2/p')
	# The first second is judged before the clock slows, and every launch
	# takes its stack till then: of 4 s, at least a quarter thinned.
	[ -n "$taken" ] && [ $((4 * skipped)) -ge $((taken + skipped)) ] ||
		fail "governed launch stacks: $line"
	echo "launch stacks $slowing times rarer at the end: $taken taken, $skipped thinned;" \
		"$(grep -o 'overhead governor:.*' "$WORK/app.err")"
	echo PASS
	exit 0
fi

if [ "$mode" = unnamed ]; then
	# 136 kernels named 64 KiB each: the agent keeps 8 MiB of names, which
	# the six short names of a step (121 bytes) and 127 long ones fill, so
	# the 9 others are sent without a name at every launch.  The summary,
	# -v and the profile's facts say how many, as many as the trace has
	# kernels of no name.
	want=$((3 * 9))
	"$LLMPROF" record -v -f chrome -o "$WORK/unnamed.json" -- "$MOCK_APP" --iterations 3 \
		--long-names 136 >"$WORK/app.out" 2>"$WORK/app.err" ||
		fail "record exited $?: $(tail "$WORK/app.err")"
	cmp -s "$WORK/app.out" "$WORK/reference" || fail "the application's output changed"
	grep -q "dropped: 0 records in the agents; $want kernels without a name" "$WORK/app.err" ||
		fail "summary: $(grep -A20 'GPU summary' "$WORK/app.err")"
	grep -q "GPU agent of pid [0-9]*: dropped 0 activity records.* $want kernels without a name" \
		"$WORK/app.err" || fail "-v: $(grep 'GPU agent of pid' "$WORK/app.err")"
	python3 - "$WORK/unnamed.json" "$want" <<'PY' || fail "the trace's kernels without a name"
import json, sys
doc = json.load(open(sys.argv[1]))
events = doc["traceEvents"] if isinstance(doc, dict) else doc
kernels = [e for e in events if e.get("cat") == "gpu.kernel" and e.get("ph") == "X"]
unnamed = [e for e in kernels if "[unknown kernel]" in e["name"]]
long = [e for e in kernels if e["name"].startswith("_Z0") or "kkkk" in e["name"]]
print(f"{len(kernels)} kernels, {len(unnamed)} without a name, {len(long)} long names")
if len(unnamed) != int(sys.argv[2]) or len(long) != 3 * 127:
    sys.exit(1)
PY
	"$LLMPROF" record -f html -o "$WORK/unnamed.html" -- "$MOCK_APP" --iterations 3 --long-names 136 \
		>/dev/null 2>"$WORK/html.err" || fail "record -o html exited $?: $(tail "$WORK/html.err")"
	grep -q "GPU records lost\",\"0 dropped in the agents, $want kernels without a name" \
		"$WORK/unnamed.html" || fail "no GPU loss fact in the HTML report"
	echo PASS
	exit 0
fi

if [ "$mode" = record ]; then
	"$LLMPROF" record -o "$WORK/record.folded" -- "$MOCK_APP" --seconds 2 \
		>"$WORK/app.out" 2>"$WORK/app.err" || fail "record exited $?: $(tail "$WORK/app.err")"
	cmp -s "$WORK/app.out" "$WORK/reference" || fail "the application's output changed"
	iterations=$(sed -n 's/^iterations //p' "$WORK/app.err")
	if [ -z "$iterations" ] || [ "$iterations" -le 10 ]; then
		fail "iterations: $iterations"
	fi
	grep -q "GPU summary" "$WORK/app.err" || fail "no GPU summary"
	check_folded "$WORK/record.folded" "$iterations"

	# Sampled often, the CPU sampler interrupts the launch probe in the
	# middle of its stack walk thousands of times: each walk keeps its
	# own state (3 runs of 4 gave stacks with stray frames while they
	# shared it).
	"$LLMPROF" record -F 4999 -o "$WORK/often.folded" -- "$MOCK_APP" --seconds 2 \
		>/dev/null 2>"$WORK/app.err" || fail "record -F 4999 exited $?: $(tail "$WORK/app.err")"
	iterations=$(sed -n 's/^iterations //p' "$WORK/app.err")
	check_folded "$WORK/often.folded" "$iterations"

	# A process tree: a child with its own agent, whose correlation ids
	# are the parent's over again; then one that closed the descriptors
	# it inherited before it started.
	for spawn in --spawn-child --spawn-child-closed; do
		"$LLMPROF" record -o "$WORK/tree.folded" -- "$MOCK_APP" --seconds 2 $spawn \
			>"$WORK/app.out" 2>"$WORK/app.err" ||
			fail "record $spawn exited $?: $(tail "$WORK/app.err")"
		! grep "cannot inject" "$WORK/app.err" || fail "$spawn: a process could not load the agent"
		grep -q "^child iterations [1-9]" "$WORK/app.err" || fail "$spawn: the child did not run"
		iterations=$(sed -n 's/^iterations //p' "$WORK/app.err")
		WANT_CHILD=1 check_folded "$WORK/tree.folded" "$iterations"
		grep -q "GPU summary (2 agents)" "$WORK/app.err" ||
			fail "$spawn: $(grep -A3 'GPU summary' "$WORK/app.err")"
	done

	# The timeline: GPU streams on the threads' clock, kernels as long as
	# programmed.
	"$LLMPROF" record -f speedscope -o "$WORK/record.json" -- "$MOCK_APP" --seconds 1 \
		>/dev/null 2>"$WORK/app.err" || fail "record -f speedscope exited $?"
	wall=$(sed -n 's/.*profiled PID [0-9]* for \([0-9.]*\) s.*/\1/p' "$WORK/app.err")
	[ -n "$wall" ] || fail "no duration in: $(cat "$WORK/app.err")"
	python3 - "$WORK/record.json" "$wall" <<'PY' || fail "speedscope GPU streams"
import json, sys
doc = json.load(open(sys.argv[1]))
# The target's GPU work all ends before it exits, which ends the profile.
wall_us = float(sys.argv[2]) * 1e6 + 10000
names = [f["name"] for f in doc["shared"]["frames"]]
streams = [p for p in doc["profiles"] if p["type"] == "evented" and p["name"].startswith("GPU")]
gemm = []
for p in streams:
    opened = {}
    for e in p["events"]:
        if e["type"] == "O":
            opened[e["frame"]] = e["at"]
        else:
            start = opened.pop(e["frame"])
            if not 0 <= start <= e["at"] <= wall_us:
                sys.exit(f"event {names[e['frame']]} at {start}-{e['at']} outside 0-{wall_us}")
            if "gemm_kernel" in names[e["frame"]]:
                gemm.append(e["at"] - start)
if not streams or not gemm:
    sys.exit("no GPU stream or no gemm_kernel on it")
bad = [d for d in gemm if abs(d / 2000 - 1) > 0.10]
if bad:
    sys.exit(f"gemm_kernel spans {bad[:5]} us, programmed 2000")
PY
	echo PASS
	exit 0
fi

[ "$mode" = attach ] || fail "mode $mode"
# The targets run until the test is done with them (a loaded machine can
# make the attaches take long), at most two minutes.
start_bg "$MOCK_APP" --seconds 120 --until "$WORK/stop-first" >"$WORK/app.out" 2>"$WORK/app.err"
sleep 0.5
# Three attach/detach cycles in one process: later ones start the agent
# copy that is loaded already (one copy in the maps), and the launch probe
# is on that copy, so every round has its kernels under their launches;
# but for the graph's kernels after the first round where CUPTI is older
# than 13.1 Update 1 (API 130101; the mock reports the headers' 130001
# unless told).
graph_fixed=$(( ${MOCK_CUPTI_VERSION:-130001} >= 130101 ))
for round in 1 2 3; do
	"$LLMPROF" attach -p "$BG_PID" -d 1.5 -o "$WORK/attach$round.folded" 2>"$WORK/llmprof$round.err" ||
		fail "attach $round exited $?: $(tail "$WORK/llmprof$round.err")"
	grep -q "GPU summary" "$WORK/llmprof$round.err" ||
		fail "attach $round: no GPU data: $(cat "$WORK/llmprof$round.err")"
	if [ "$round" = 1 ] || [ "$graph_fixed" = 1 ]; then
		check_folded "$WORK/attach$round.folded"
	else
		grep -q "13.1 Update 1.*graph kernels unattributed" "$WORK/llmprof$round.err" ||
			fail "attach $round: no reason for unattributed graph kernels"
		GRAPH_UNATTRIBUTED=1 check_folded "$WORK/attach$round.folded"
	fi
	kill -0 "$BG_PID" 2>/dev/null || fail "the target died after attach $round"
	copies=$(grep '/memfd:llmprof-agent' /proc/$BG_PID/maps | awk '{print $5}' | sort -u | wc -l)
	[ "$copies" = 1 ] || fail "attach $round: $copies agent copies in the target"
done
# Two CUDA processes at once: each gets its own agent, and each one's
# kernels stay under its own launches.
FIRST=$BG_PID
start_bg "$MOCK_APP" --seconds 120 --until "$WORK/stop-second" >"$WORK/app2.out" 2>"$WORK/app2.err"
SECOND=$BG_PID
sleep 1
"$LLMPROF" attach -p "$FIRST,$SECOND" --per-process -d 2.5 -o "$WORK/pair.folded" \
	2>"$WORK/pair.err" || fail "attach -p A,B exited $?: $(tail "$WORK/pair.err")"
grep -q "GPU summary (2 agents)" "$WORK/pair.err" ||
	fail "attach -p A,B: not two agents: $(grep -A2 'GPU summary' "$WORK/pair.err")"
for pid in "$FIRST" "$SECOND"; do
	grep "^[^;]* \[$pid\];" "$WORK/pair.folded" >"$WORK/one.folded"
	sed -i "s/^[^;]* \[$pid\];/mock_app;/" "$WORK/one.folded"
	grep -q '\[gpu\] gemm_kernel' "$WORK/one.folded" ||
		fail "no GPU kernels of process $pid: $(cat "$WORK/pair.err"; cut -d';' -f1 "$WORK/pair.folded" | sort | uniq -c)"
	if [ "$pid" = "$FIRST" ] && [ "$graph_fixed" = 0 ]; then
		GRAPH_UNATTRIBUTED=1 check_folded "$WORK/one.folded"
	else
		check_folded "$WORK/one.folded"
	fi
done
# The CUDA process named second, after one without CUDA: it still gets
# the agent (the launch program is loaded for the whole selection).
sleep 30 &
plain=$!
BACKGROUND_PIDS="$BACKGROUND_PIDS $plain"
"$LLMPROF" attach -p "$plain,$SECOND" -d 1.5 -o "$WORK/mixed.folded" 2>"$WORK/mixed.err" ||
	fail "attach -p PLAIN,CUDA exited $?: $(tail "$WORK/mixed.err")"
grep -q "GPU summary (1 agent)" "$WORK/mixed.err" && grep -q '\[gpu\] gemm_kernel' "$WORK/mixed.folded" ||
	fail "attach -p PLAIN,CUDA: no GPU data: $(tail "$WORK/mixed.err")"
kill "$plain" 2>/dev/null
touch "$WORK/stop-first" "$WORK/stop-second"
wait "$SECOND" || fail "the second target exited $?"
wait "$FIRST" || fail "the target exited $?: $(tail "$WORK/app.err")"
cmp -s "$WORK/app.out" "$WORK/reference" || fail "the application's output changed"
echo PASS
