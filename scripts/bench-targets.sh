#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# What the size of the target set costs the sampler: a CPU-bound target
# profiled at 999 Hz alone, and with 10 and 100 more (sleeping) processes in
# the selection; prints the BPF time per run of the perf_event program
# (kernel.bpf_stats_enabled), which filters every tick with one hash lookup.
# Usage: scripts/bench-targets.sh [RUNS]   (root; default 3)
set -euo pipefail
cd "$(dirname "$0")/.."
runs=${1:-3}
build_dir=${BUILD_DIR:-build}
[ -x "$build_dir/cmd/llmprof" ] || BUILD_DIR=$build_dir scripts/build.sh >/dev/null
llmprof=$build_dir/cmd/llmprof
fixture=$build_dir/fixtures/ground_truth
sleepers=()
trap 'kill "${sleepers[@]}" 2>/dev/null; sysctl -qw kernel.bpf_stats_enabled=0' EXIT
sysctl -qw kernel.bpf_stats_enabled=1
for _ in $(seq 100); do
	sleep 600 &
	sleepers+=($!)
done

# run N: ns per program run with N extra processes selected.
run() {
	local n=$1 list target llmprof_pid stats
	"$fixture" 4 >/dev/null &
	target=$!
	list=$target
	for ((i = 0; i < n; i++)); do list="$list,${sleepers[$i]}"; done
	"$llmprof" attach -p "$list" -F 999 -d 3 -o /dev/null 2>/dev/null &
	llmprof_pid=$!
	sleep 2.5
	stats=$(bpftool prog show name sample_cpu | sed -n 's/.*run_time_ns \([0-9]*\) run_cnt \([0-9]*\).*/\1 \2/p' | tail -1)
	wait "$llmprof_pid" || true
	wait "$target" || true
	awk -v s="$stats" 'BEGIN { split(s, a, " "); printf "%.0f\n", a[2] ? a[1] / a[2] : 0 }'
}

median() { sort -n | awk '{ v[NR] = $1 } END { print (NR % 2 ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2) }'; }
printf '%-22s %16s\n' "selected processes" "BPF ns per run"
for n in 0 10 100; do
	for r in $(seq "$runs"); do run "$n"; done >"/tmp/bench-targets.$n"
	printf '%-22s %16s\n' "1 + $n" "$(median <"/tmp/bench-targets.$n")"
	rm -f "/tmp/bench-targets.$n"
done
echo "(median of $runs runs at 999 Hz; each run includes the samples of the CPU-bound target)"
