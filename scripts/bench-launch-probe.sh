#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# The cost of the GPU launch probe per kernel launch, on the mock CUDA
# stack's launch-bound loop (mock_app --bench N: N empty kernels launched
# back to back from one thread):
#
#   alone         no llmprof
#   no probe      record, the agent firing its probe about once a second
#                 (LLMPROF_AGENT_PROBE_RATE=1): the agent's own cost
#   every stack   the probe at every launch, a stack at every launch
#                 (LLMPROF_AGENT_PROBE_RATE=0, --launch-stack-rate 0)
#   rate-limited  the probe at every launch, stacks at the default 100 a
#                 second: the launches past the rate cost a trap and the
#                 bucket, no stack walk
#   default       the defaults (the agent fires at most 10000 a second)
#
# For each: the median over RUNS of the wall and the launching thread's CPU
# time per launch, the launches per second, and the launch probe's BPF run
# time per run (run_time_ns / run_cnt of on_gpu_launch, with
# kernel.bpf_stats_enabled set for the run and put back after).
#
# Usage: scripts/bench-launch-probe.sh [RUNS] [LAUNCHES]   (root; default 5
# runs of 200000 launches)
set -euo pipefail
cd "$(dirname "$0")/.."
runs=${1:-5}
launches=${2:-200000}
build_dir=${BUILD_DIR:-build}
[ -x "$build_dir/cmd/llmprof" ] || BUILD_DIR=$build_dir scripts/build.sh >/dev/null
cmake --build "$build_dir" --target mock_app mock_cupti >/dev/null
llmprof=$(realpath "$build_dir/cmd/llmprof")
app=$(realpath "$build_dir/tests/mock_cuda/mock_app")
export LLMPROF_CUPTI_LIBRARY=$(realpath "$build_dir/tests/mock_cuda/lib/libcupti.so")
work=$(mktemp -d)
stats_before=$(sysctl -n kernel.bpf_stats_enabled)
sysctl -q -w kernel.bpf_stats_enabled=1
trap 'sysctl -q -w kernel.bpf_stats_enabled=$stats_before; rm -rf "$work"' EXIT

median() { sort -n | awk '{ v[NR] = $1 } END { print v[int((NR + 1) / 2)] }'; }

# The run time and count of on_gpu_launch among the BPF programs PID holds.
probe_stats() {
	local ids
	ids=$(grep -h '^prog_id:' /proc/"$1"/fdinfo/* 2>/dev/null | awk '{ print $2 }' | sort -u |
		tr '\n' ' ')
	[ -n "$ids" ] || return 0
	bpftool -j prog show 2>/dev/null | python3 -c '
import json, sys
ids = set(int(i) for i in sys.argv[1].split())
for p in json.load(sys.stdin):
    if p["id"] in ids and p.get("name") == "on_gpu_launch":
        print(p.get("run_time_ns", 0), p.get("run_cnt", 0))
' "$ids"
}

# run NAME [ENV...] -- [LLMPROF OPTIONS...]: one run; NAME alone runs the app alone.
run() {
	local name=$1 pid line stats=""
	shift
	local env=() opts=()
	while [ $# -gt 0 ] && [ "$1" != -- ]; do env+=("$1"); shift; done
	[ $# -gt 0 ] && shift
	opts=("$@")
	if [ "$name" = alone ]; then
		env "${env[@]}" "$app" --bench "$launches" 2>"$work/err" >/dev/null
	else
		env "${env[@]}" "$llmprof" record --no-python "${opts[@]}" -o "$work/profile" -- \
			"$app" --bench "$launches" 2>"$work/err" >/dev/null &
		pid=$!
		while kill -0 "$pid" 2>/dev/null; do
			line=$(probe_stats "$pid")
			[ -n "$line" ] && stats=$line
			sleep 0.2
		done
		wait "$pid" || { echo "$name: llmprof failed:" >&2; cat "$work/err" >&2; exit 1; }
	fi
	line=$(grep '^bench ' "$work/err") || { echo "$name: no result:" >&2; cat "$work/err" >&2; exit 1; }
	echo "$line" | awk '{ print $4 }' >>"$work/$name.wall"
	echo "$line" | awk '{ print $6 }' >>"$work/$name.cpu"
	if [ -n "$stats" ]; then
		echo "$stats" | awk '{ if ($2) printf "%.1f %d\n", $1 / $2, $2 }' >>"$work/$name.bpf"
	fi
	grep -o 'launch stacks: [0-9]* taken' "$work/err" | awk '{ print $3 }' >>"$work/$name.taken" || true
}

names="alone no-probe every-stack rate-limited default"
for r in $(seq "$runs"); do
	run alone
	run no-probe LLMPROF_AGENT_PROBE_RATE=1 --
	run every-stack LLMPROF_AGENT_PROBE_RATE=0 -- --launch-stack-rate 0
	run rate-limited LLMPROF_AGENT_PROBE_RATE=0 --
	run default --
done

echo "kernel launches from one thread, median of $runs runs of $launches (mock CUDA stack):"
printf "  %-13s %10s %10s %12s %14s %10s\n" "" "wall ns" "CPU ns" "launches/s" "BPF ns/run" "BPF runs"
alone_cpu=$(median <"$work/alone.cpu")
for name in $names; do
	wall=$(median <"$work/$name.wall")
	cpu=$(median <"$work/$name.cpu")
	bpf="-" runs_seen="-"
	if [ -s "$work/$name.bpf" ]; then
		bpf=$(awk '{ print $1 }' "$work/$name.bpf" | median)
		runs_seen=$(awk '{ print $2 }' "$work/$name.bpf" | median)
	fi
	printf "  %-13s %10.1f %10.1f %12.0f %14s %10s\n" "$name" "$wall" "$cpu" \
		"$(awk -v w="$wall" 'BEGIN { print 1e9 / w }')" "$bpf" "$runs_seen"
done
for name in no-probe every-stack rate-limited default; do
	awk -v n="$name" -v a="$alone_cpu" -v c="$(median <"$work/$name.cpu")" \
		'BEGIN { printf "  %-13s %+8.1f ns CPU per launch against alone\n", n, c - a }'
done
