#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# GPU memory by allocating stack (--gpu-memory) with real uprobes on the mock
# libcuda/libcudart: peak, leaks and allocation totals of a fixture with
# known sizes, exact to the byte and under the functions that allocated;
# the failing call counted with its stack and not as memory; attach mid-run;
# process trees (record's children, attach -C, a fork without exec), each
# process accounted apart at the same addresses;
# every view in one speedscope file, read back alike by convert --view;
# and the real libcudart.so.13 probed on a machine without a GPU.
. "$TESTS_SOURCE/lib/testlib.sh"
need_root
scenario=${1:-record}
MiB=1048576
export LD_LIBRARY_PATH=$(dirname "$MEMORY_APP")/lib

# weight STACK_REGEX FILE: the summed weight of lines whose stack matches.
weight() {
	python3 - "$1" "$2" <<'PY'
import re, sys
total = 0
for line in open(sys.argv[2]):
    stack, _, count = line.rstrip("\n").rpartition(" ")
    if re.search(sys.argv[1], stack):
        total += int(count)
print(total)
PY
}
total() { awk '{ s += $NF } END { print s + 0 }' "$1"; }
expect() { # WHAT GOT WANT
	[ "$2" = "$3" ] || fail "$1: $2, expected $3"
}

check_views() { # PREFIX: PREFIX.peak PREFIX.leaks PREFIX.alloc
	local p=$1
	expect "peak total" "$(total "$p.peak")" $((112 * MiB))
	expect "peak weights" "$(weight ';main;load_weights;\[gpu-mem\] cudaMalloc 64\.0 MiB$' "$p.peak")" $((64 * MiB))
	expect "peak activations" "$(weight ';main;forward;alloc_activation;\[gpu-mem\] cudaMalloc 16\.0 MiB$' "$p.peak")" $((48 * MiB))
	expect "leaks total" "$(total "$p.leaks")" $((72 * MiB))
	expect "leaked workspace" "$(weight ';main;leak_workspace;\[gpu-mem\] cuMemAlloc 8\.0 MiB$' "$p.leaks")" $((8 * MiB))
	expect "leaked weights" "$(weight ';main;load_weights;' "$p.leaks")" $((64 * MiB))
	expect "alloc total" "$(total "$p.alloc")" $((120 * MiB))
	expect "alloc activations" "$(weight ';forward;alloc_activation;' "$p.alloc")" $((48 * MiB))
	# The runtime's cudaMalloc calls the driver's cuMemAlloc: one allocation.
	if grep -q 'cudaMalloc.*cuMemAlloc\|cuMemAlloc.*cudaMalloc\|load_weights;\[gpu-mem\] cuMemAlloc' "$p.alloc"; then
		fail "an allocation counted twice: $(cat "$p.alloc")"
	fi
	if grep -q 'try_huge_batch' "$p.alloc"; then fail "the failed allocation counted as memory"; fi
	grep -q "failed allocations:" "$p.err" || fail "no failures in the summary: $(cat "$p.err")"
	grep -q "1 x cudaMalloc of 1.0 TiB: cudaErrorMemoryAllocation (2) at try_huge_batch < main" "$p.err" ||
		fail "failure without its stack: $(cat "$p.err")"
	grep -q "GPU 0: peak 112.0 MiB at" "$p.err" || fail "no peak in the summary"
	grep -q "48.0 MiB  42.9%  3 x cudaMalloc at alloc_activation < forward < main" "$p.err" ||
		fail "top stacks at the peak: $(cat "$p.err")"
}

case $scenario in
record)
	for view in peak leaks alloc; do
		"$LLMPROF" record --no-gpu --view memory-$view -o "$WORK/r.$view" -- "$MEMORY_APP" \
			>"$WORK/app.out" 2>"$WORK/r.err" || fail "record --view memory-$view: $(cat "$WORK/r.err")"
		$CHECK folded "$WORK/r.$view" >/dev/null || fail "invalid folded memory-$view"
	done
	grep -q '^weights at 0x' "$WORK/app.out" || fail "the fixture's output changed"
	check_views "$WORK/r"
	# --gpu-memory alone is the peak view.
	"$LLMPROF" record --no-gpu --gpu-memory -o "$WORK/default" -- "$MEMORY_APP" >/dev/null 2>&1 ||
		fail "--gpu-memory failed"
	cmp -s <(sort "$WORK/default") <(sort "$WORK/r.peak") || fail "--gpu-memory is not the peak view"
	# One pprof holds every view as a sample type, the written one
	# pprof's default: Google's pprof picks each by name, and convert
	# --view gives each view's folded output as its own recording does.
	"$LLMPROF" record --no-gpu --gpu-memory -f pprof -o "$WORK/all.pb.gz" -- "$MEMORY_APP" \
		>/dev/null 2>"$WORK/all.err" || fail "record -f pprof: $(cat "$WORK/all.err")"
	if [ -x "${PPROF:-}" ]; then
		"$PPROF" -raw "$WORK/all.pb.gz" >"$WORK/all.raw" 2>&1 || fail "pprof -raw: $(head -3 "$WORK/all.raw")"
		grep -qx 'memory-peak/bytes\[dflt\] samples/count memory-leaks/bytes memory-alloc/bytes' "$WORK/all.raw" ||
			fail "sample types: $(grep -A1 '^Samples:' "$WORK/all.raw")"
		for pair in memory-peak:112MB memory-leaks:72MB memory-alloc:120MB; do
			"$PPROF" -sample_index=${pair%%:*} -top "$WORK/all.pb.gz" >"$WORK/top" 2>&1 ||
				fail "pprof -sample_index=${pair%%:*}: $(head -3 "$WORK/top")"
			grep -q "Total samples = ${pair#*:} *$" "$WORK/top" ||
				fail "pprof -sample_index=${pair%%:*}: $(grep Total "$WORK/top"), expected ${pair#*:}"
		done
	else
		echo "no pprof built: sample types not checked by pprof"
	fi
	for view in peak leaks alloc; do
		"$LLMPROF" convert --view memory-$view -f folded -o "$WORK/c.$view" "$WORK/all.pb.gz" ||
			fail "convert --view memory-$view"
		cmp -s <(sort "$WORK/c.$view") <(sort "$WORK/r.$view") ||
			fail "convert --view memory-$view differs from record --view memory-$view"
	done
	"$LLMPROF" convert --view memory-nope -f folded "$WORK/all.pb.gz" >/dev/null 2>"$WORK/nope.err"
	[ $? = 2 ] && grep -q "it has memory-peak, samples, memory-leaks, memory-alloc" "$WORK/nope.err" ||
		fail "convert --view of a missing value: $(cat "$WORK/nope.err")"
	# Bytes through speedscope, pprof, report and diff.
	"$LLMPROF" record --no-gpu --gpu-memory -f speedscope -o "$WORK/peak.json" -- "$MEMORY_APP" \
		>/dev/null 2>&1 || fail "speedscope failed"
	grep -q '"unit":"bytes"' "$WORK/peak.json" || fail "speedscope unit is not bytes"
	[ -f "$SPEEDSCOPE_SCHEMA" ] && { $CHECK speedscope "$WORK/peak.json" --schema "$SPEEDSCOPE_SCHEMA" || fail "speedscope invalid"; }
	"$LLMPROF" report "$WORK/peak.json" >"$WORK/report" || fail "report of speedscope bytes"
	grep -q "weight: *112.0 MiB" "$WORK/report" || fail "report does not say bytes: $(head "$WORK/report")"
	"$LLMPROF" diff "$WORK/r.peak" "$WORK/r.leaks" >"$WORK/diff" || true
	grep -q "112.0 MiB" "$WORK/diff" && grep -q "72.0 MiB" "$WORK/diff" || fail "diff without bytes: $(head -3 "$WORK/diff")"
	# The virtual memory calls, pinned host memory, stream-ordered and pitched.
	"$LLMPROF" record --no-gpu --view memory-alloc -o "$WORK/extras" -- "$MEMORY_APP" --extras \
		>/dev/null 2>"$WORK/extras.err" || fail "extras failed"
	expect "cuMemCreate" "$(weight ';grow_segment;\[gpu-mem\] cuMemCreate 2\.0 MiB$' "$WORK/extras")" $((2 * MiB))
	expect "pinned" "$(weight '^memory_app;\[gpu-mem\] host \(pinned\);.*;stage_pinned;\[gpu-mem\] cudaMallocHost 1\.0 MiB$' "$WORK/extras")" $MiB
	expect "async" "$(weight ';stream_ordered;\[gpu-mem\] cudaMallocAsync 4\.0 MiB$' "$WORK/extras")" $((4 * MiB))
	expect "pitch" "$(weight ';pitched;\[gpu-mem\] cudaMallocPitch 100\.0 KiB$' "$WORK/extras")" $((1024 * 100))
	grep -q "pinned host memory: peak 1.0 MiB" "$WORK/extras.err" || fail "no pinned host peak"
	;;
speedscope_views)
	# One speedscope file holds every view, as pprof does: a profile per
	# view named after it in its unit, valid by speedscope's schema;
	# convert --view reads each back as the view's own recording and the
	# pprof route give it.
	"$LLMPROF" record --no-gpu --gpu-memory -f speedscope -o "$WORK/all.json" -- "$MEMORY_APP" \
		>/dev/null 2>"$WORK/ss.err" || fail "record -f speedscope: $(cat "$WORK/ss.err")"
	if [ -f "$SPEEDSCOPE_SCHEMA" ]; then
		$CHECK speedscope "$WORK/all.json" --schema "$SPEEDSCOPE_SCHEMA" >/dev/null ||
			fail "speedscope invalid"
	else
		echo "no schema at $SPEEDSCOPE_SCHEMA: not validated"
	fi
	python3 - "$WORK/all.json" <<'PY' || fail "speedscope views"
import json, sys
doc = json.load(open(sys.argv[1]))
views = [(p["llmprofView"], p["unit"]) for p in doc["profiles"]]
assert views == [("memory-peak", "bytes"), ("samples", "none"), ("memory-leaks", "bytes"),
                 ("memory-alloc", "bytes")], views
for p in doc["profiles"]:
    assert p["name"].endswith(" \u2014 " + p["llmprofView"]), p["name"]
PY
	"$LLMPROF" record --no-gpu --gpu-memory -f pprof -o "$WORK/all.pb.gz" -- "$MEMORY_APP" \
		>/dev/null 2>"$WORK/pp.err" || fail "record -f pprof: $(cat "$WORK/pp.err")"
	# The same recording through both formats: pprof, then speedscope.
	"$LLMPROF" convert -f speedscope -o "$WORK/via.json" "$WORK/all.pb.gz" ||
		fail "convert pprof to speedscope"
	for view in memory-peak samples memory-leaks memory-alloc; do
		for input in all.json via.json all.pb.gz; do
			"$LLMPROF" convert --view $view -f folded -o "$WORK/$input.$view" "$WORK/$input" ||
				fail "convert --view $view $input"
		done
		cmp -s <(sort "$WORK/via.json.$view") <(sort "$WORK/all.pb.gz.$view") ||
			fail "--view $view: speedscope and pprof of one recording differ"
	done
	# Memory is exact to the byte, so two recordings agree on it.
	for view in peak leaks alloc; do
		cmp -s <(sort "$WORK/all.json.memory-$view") <(sort "$WORK/all.pb.gz.memory-$view") ||
			fail "--view memory-$view: record -f speedscope and -f pprof differ"
		cp "$WORK/all.json.memory-$view" "$WORK/v.$view"
	done
	cp "$WORK/ss.err" "$WORK/v.err"
	check_views "$WORK/v"
	"$LLMPROF" convert --view nope -f folded "$WORK/all.json" >/dev/null 2>"$WORK/nope.err"
	[ $? = 2 ] && grep -q "it has memory-peak, samples, memory-leaks, memory-alloc" "$WORK/nope.err" ||
		fail "convert --view of a missing value: $(cat "$WORK/nope.err")"
	;;
entry_points)
	# Allocations through the driver's entry points, as NCCL
	# (cuGetProcAddress) and PyTorch's expandable segments
	# (cudaGetDriverEntryPointByVersion) make them: the bytes the app says
	# it allocated are the allocation view's, those it did not free the
	# leak view's, each under the function that allocated it; first with
	# the exported functions handed out, then with the driver's internal
	# ones, which no exported symbol's probe sees.
	for internal in 0 1; do
		for view in alloc leaks; do
			MOCK_CUDA_INTERNAL_ENTRY_POINTS=$internal "$LLMPROF" record -v --no-gpu \
				--view memory-$view -o "$WORK/e$internal.$view" -- "$MEMORY_APP" \
				--entry-points >"$WORK/app.out" 2>"$WORK/e$internal.$view.err" ||
				fail "--entry-points: $(cat "$WORK/e$internal.$view.err")"
		done
		read -r allocated freed < <(sed -n 's/^entry points: allocated \([0-9]*\) bytes, freed \([0-9]*\) bytes$/\1 \2/p' "$WORK/app.out")
		[ -n "$freed" ] || fail "the app did not allocate: $(cat "$WORK/app.out")"
		what="internal entry points $internal"
		expect "$what: allocated" "$(total "$WORK/e$internal.alloc")" "$allocated"
		expect "$what: not freed" "$(total "$WORK/e$internal.leaks")" $((allocated - freed))
		expect "$what: cuMemAllocAsync_ptsz" "$(weight ';entry_points;\[gpu-mem\] cuMemAllocAsync 4\.0 MiB$' "$WORK/e$internal.alloc")" $((4 * MiB))
		expect "$what: cuMemCreate" "$(weight ';entry_points;\[gpu-mem\] cuMemCreate 2\.0 MiB$' "$WORK/e$internal.alloc")" $((2 * MiB))
		expect "$what: cuMemCreate kept" "$(weight ';entry_points;\[gpu-mem\] cuMemCreate 2\.0 MiB$' "$WORK/e$internal.leaks")" $((2 * MiB))
	done
	grep -q "GPU memory: cuMemCreate handed out at .*libcuda.so.1+0x[0-9a-f]*, not its exported function: probed there" "$WORK/e1.alloc.err" ||
		fail "no debug line for the internal entry points: $(grep 'GPU memory' "$WORK/e1.alloc.err")"
	;;
attach)
	start_bg "$MEMORY_APP" --wait >"$WORK/app.out"
	app=$BG_PID
	for i in $(seq 50); do grep -q ready "$WORK/app.out" && break; sleep 0.1; done
	for view in peak leaks alloc; do :; done
	"$LLMPROF" attach -p $app --no-gpu --view memory-alloc -o "$WORK/a.alloc" 2>"$WORK/a.err" &
	prof=$!
	for i in $(seq 100); do grep -q "profiling PID" "$WORK/a.err" && break; sleep 0.1; done
	grep -q "profiling PID" "$WORK/a.err" || fail "attach did not start: $(cat "$WORK/a.err")"
	kill -USR1 $app
	wait $prof || fail "attach failed: $(cat "$WORK/a.err")"
	expect "alloc total after attach" "$(total "$WORK/a.alloc")" $((120 * MiB))
	if grep -q allocate_early "$WORK/a.alloc"; then fail "memory from before attach has a stack"; fi
	grep -q "1 frees of memory allocated before the probes were in" "$WORK/a.err" ||
		fail "the free of early memory is not reported: $(cat "$WORK/a.err")"
	grep -Eq "before attach is not known|before attach\)" "$WORK/a.err" ||
		fail "the summary does not say what was allocated before attach"
	grep -q "GPU 0: peak 112.0 MiB" "$WORK/a.err" || [ -e /dev/nvidiactl ] || fail "attach peak: $(cat "$WORK/a.err")"
	;;
tree)
	# Two processes of one command, at the same addresses (no ASLR): each
	# its own peak, leaks and failure under its own root.
	for view in peak leaks; do
		setarch "$(uname -m)" -R "$LLMPROF" record --no-gpu --view memory-$view -o "$WORK/t.$view" -- \
			sh -c "RANK=0 '$MEMORY_APP' & RANK=1 '$MEMORY_APP'; wait" \
			>"$WORK/app.out" 2>"$WORK/t.$view.err" || fail "record sh -c: $(cat "$WORK/t.$view.err")"
	done
	[ "$(sort -u "$WORK/app.out" | wc -l)" = 1 ] || fail "the two processes' addresses differ: $(cat "$WORK/app.out")"
	for rank in 0 1; do
		root="^memory_app \[rank $rank\];"
		expect "rank $rank peak" "$(weight "$root" "$WORK/t.peak")" $((112 * MiB))
		expect "rank $rank peak weights" "$(weight "$root.*;main;load_weights;\[gpu-mem\] cudaMalloc 64\.0 MiB$" "$WORK/t.peak")" $((64 * MiB))
		expect "rank $rank peak activations" "$(weight "$root.*;main;forward;alloc_activation;\[gpu-mem\] cudaMalloc 16\.0 MiB$" "$WORK/t.peak")" $((48 * MiB))
		expect "rank $rank leaks" "$(weight "$root" "$WORK/t.leaks")" $((72 * MiB))
		expect "rank $rank leaked workspace" "$(weight "$root.*;main;leak_workspace;\[gpu-mem\] cuMemAlloc 8\.0 MiB$" "$WORK/t.leaks")" $((8 * MiB))
		grep -Eq "memory_app \[rank $rank\] \(PID [0-9]+\), GPU 0: peak 112.0 MiB at .*; 72.0 MiB still allocated" "$WORK/t.peak.err" ||
			fail "rank $rank's peak in the summary: $(cat "$WORK/t.peak.err")"
		grep -Eq "1 x cudaMalloc of 1.0 TiB: cudaErrorMemoryAllocation \(2\) at try_huge_batch < main.* in memory_app \[rank $rank\] \(PID" "$WORK/t.peak.err" ||
			fail "rank $rank's failure in the summary: $(cat "$WORK/t.peak.err")"
	done
	expect "peak total" "$(total "$WORK/t.peak")" $((224 * MiB))
	expect "leaks total" "$(total "$WORK/t.leaks")" $((144 * MiB))
	grep -q "unknown\|frees of memory allocated before" "$WORK/t.peak.err" && fail "frees mixed between processes: $(cat "$WORK/t.peak.err")"
	# A child forked, not exec'd, after the probes are in: nothing tells
	# llmprof of it before its first call, and it allocates at its
	# parent's addresses.
	"$LLMPROF" record --no-gpu --view memory-leaks -o "$WORK/f.leaks" -- "$MEMORY_APP" --fork \
		>"$WORK/fork.out" 2>"$WORK/f.err" || fail "record --fork: $(cat "$WORK/f.err")"
	[ "$(sort -u "$WORK/fork.out" | wc -l)" = 1 ] || fail "parent and child addresses differ: $(cat "$WORK/fork.out")"
	expect "parent and child leaks" "$(total "$WORK/f.leaks")" $((144 * MiB))
	expect "peaks of parent and child" "$(grep -Ec "memory_app.*\(PID [0-9]+\), GPU 0: peak 112.0 MiB at .*; 72.0 MiB still allocated" "$WORK/f.err")" 2
	grep -q "frees of memory allocated before" "$WORK/f.err" && fail "frees mixed between parent and child: $(cat "$WORK/f.err")"
	;;
attach_tree)
	# attach -C: a parent and its two children, each of which allocates
	# once told to; all three are probed from the libraries mapped at attach.
	start_bg sh -c "RANK=0 '$MEMORY_APP' --wait & RANK=1 '$MEMORY_APP' --wait & wait" >"$WORK/app.out"
	for i in $(seq 50); do [ "$(grep -c ready "$WORK/app.out")" = 2 ] && break; sleep 0.1; done
	[ "$(grep -c ready "$WORK/app.out")" = 2 ] || fail "the fixtures did not start"
	"$LLMPROF" attach -p $BG_PID -C --no-gpu --view memory-alloc -o "$WORK/a.alloc" 2>"$WORK/a.err" &
	prof=$!
	for i in $(seq 100); do grep -q "profiling PID" "$WORK/a.err" && break; sleep 0.1; done
	grep -q "profiling PID" "$WORK/a.err" || fail "attach did not start: $(cat "$WORK/a.err")"
	for child in $(pgrep -P $BG_PID); do kill -USR1 $child; done
	wait $prof || fail "attach failed: $(cat "$WORK/a.err")"
	for rank in 0 1; do
		expect "rank $rank allocated" "$(weight "^memory_app \[rank $rank\];" "$WORK/a.alloc")" $((120 * MiB))
		grep -Eq "memory_app \[rank $rank\] \(PID [0-9]+\), GPU 0: peak" "$WORK/a.err" ||
			fail "rank $rank in the summary: $(cat "$WORK/a.err")"
	done
	;;
real_cudart)
	runtime=$CUDA_ROOT/lib64/libcudart.so.13
	[ -e "$runtime" ] || skip "no $runtime"
	"$REAL_CUDART_APP" "$runtime" >"$WORK/plain.out" || fail "the program fails without llmprof"
	"$LLMPROF" record -v --no-gpu --gpu-memory -o "$WORK/real.folded" -- "$REAL_CUDART_APP" "$runtime" \
		>"$WORK/real.out" 2>"$WORK/real.err" || fail "record failed: $(cat "$WORK/real.err")"
	cmp -s "$WORK/plain.out" "$WORK/real.out" || fail "the program's result changed: $(cat "$WORK/real.out")"
	grep -Eq "functions probed in .*libcudart.so.13" "$WORK/real.err" || fail "libcudart not probed: $(cat "$WORK/real.err")"
	n=$(sed -n 's/.*debug: GPU memory: \([0-9]*\) functions probed in .*libcudart.so.13/\1/p' "$WORK/real.err")
	[ "${n:-0}" -ge 10 ] || fail "only ${n:-0} runtime functions resolved"
	if grep -q "cudaMalloc returned 0" "$WORK/real.out"; then
		skip "this machine has a GPU: the failure path is not exercised"
	fi
	grep -Eq "1 x cudaMalloc of 1.0 MiB: [A-Za-z]+ \([0-9]+\) at ask_for_memory < main" "$WORK/real.err" ||
		fail "the failed cudaMalloc is not counted with its stack: $(cat "$WORK/real.err")"
	;;
esac
echo PASS
