#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# CPU-profiling overhead, side by side and interleaved: a fixed-work program
# (the 50/30/20 ground-truth fixture) with no profiler, llmprof at 99 and
# 999 Hz, perf record -g, and bcc's profile.  Prints one table: the target's
# slowdown (median of its own timing, as a ratio to no profiler), each
# profiler's CPU seconds and peak memory, and its ground-truth error (the
# largest deviation of the three shares from 50/30/20, in points).
# Usage: scripts/bench-cpu.sh [RUNS] [ROUNDS]   (root; default 5 runs)
set -euo pipefail
cd "$(dirname "$0")/.."
runs=${1:-5}
rounds=${2:-1500}
build_dir=${BUILD_DIR:-build}
[ -x "$build_dir/cmd/llmprof" ] || BUILD_DIR=$build_dir scripts/build.sh >/dev/null
llmprof=$build_dir/cmd/llmprof
fixture=$build_dir/fixtures/ground_truth
[ -x "$fixture" ] || cmake --build "$build_dir" --target fixture_ground_truth >/dev/null
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

configs=(none llmprof-99 llmprof-999 perf-99 bcc-99)
command -v perf >/dev/null || configs=("${configs[@]/perf-99/}")
notes=()
# bcc compiles its BPF at run time against the running kernel's headers;
# where there are none it cannot run at all, and the table says so.
if ! command -v profile-bpfcc >/dev/null; then
	configs=("${configs[@]/bcc-99/}")
	notes+=("bcc profile: not installed")
elif ! timeout 60 profile-bpfcc -F 99 -p $$ 1 >/dev/null 2>"$work/bcc.err"; then
	configs=("${configs[@]/bcc-99/}")
	notes+=("bcc profile: cannot run here: $(grep -m1 -i -e 'unable' -e 'error' "$work/bcc.err" || tail -1 "$work/bcc.err")")
fi

# shares_error FOLDED: the largest |share - truth| of burn_a/b/c, in points.
shares_error() {
	python3 - "$1" <<'PY'
import sys
self = {}
total = 0
for line in open(sys.argv[1]):
    stack, _, count = line.rstrip("\n").rpartition(" ")
    frames = [f for f in stack.split(";") if not f.endswith("_[k]")]
    count = int(count)
    total += count
    self[frames[-1]] = self.get(frames[-1], 0) + count
truth = {"burn_a": 50, "burn_b": 30, "burn_c": 20}
print("%.2f" % max(abs(100.0 * self.get(k, 0) / max(total, 1) - v) for k, v in truth.items()))
PY
}

# run_one CONFIG: prints "target_seconds profiler_cpu_seconds peak_kib error".
# Every profiler attaches to the running target and ends when it exits, so
# its CPU time is its own.
run_one() {
	local config=$1 out=$work/$1 target_log=$work/target.log pid profiler
	"$fixture" 0 "$rounds" >"$target_log" &
	pid=$!
	case $config in
	none)
		wait $pid
		echo "$(awk '{print $4}' "$target_log") 0 0 -"
		return
		;;
	llmprof-*)
		/usr/bin/time -f '%U %S %M' -o "$work/time" \
			"$llmprof" attach -p $pid -F "${config#llmprof-}" -o "$out.folded" 2>/dev/null &
		profiler=$!
		wait $pid
		wait $profiler
		;;
	perf-99)
		/usr/bin/time -f '%U %S %M' -o "$work/time" \
			perf record -q -e cpu-clock -F 99 -g -p $pid -o "$out.data" >/dev/null 2>&1 &
		profiler=$!
		wait $pid
		wait $profiler || true
		# perf's own CPU includes writing perf.data; turning it into stacks
		# (perf script) is not counted, as flamegraph users run it later.
		perf script -i "$out.data" -F ip,sym 2>/dev/null | awk '
			/^$/ { if (leaf != "") print leaf " 1"; leaf = ""; next }
			leaf == "" { leaf = $2 }' >"$out.folded"
		;;
	bcc-99)
		/usr/bin/time -f '%U %S %M' -o "$work/time" \
			profile-bpfcc -F 99 -f -p $pid >"$out.folded" 2>/dev/null &
		profiler=$!
		wait $pid
		kill -INT $(pgrep -P $profiler) 2>/dev/null || true
		wait $profiler || true
		;;
	esac
	read -r user sys kib <"$work/time"
	echo "$(awk '{print $4}' "$target_log") $(echo "$user + $sys" | bc -l) $kib $(shares_error "$out.folded")"
}

command -v bc >/dev/null || { echo "bench-cpu: needs bc (apt-get install bc)" >&2; exit 1; }
for ((i = 1; i <= runs; i++)); do
	for config in "${configs[@]}"; do
		[ -n "$config" ] || continue
		echo "$config $(run_one "$config")" >>"$work/results"
	done
	echo "bench-cpu: round $i/$runs done" >&2
done

python3 - "$work/results" <<'PY'
import statistics, sys
rows = {}
for line in open(sys.argv[1]):
    config, target, cpu, kib, err = line.split()
    rows.setdefault(config, []).append((float(target), float(cpu), int(kib), err))
base = statistics.median(r[0] for r in rows["none"])
print(f"{'profiler':<14}{'target s':>10}{'slowdown':>10}{'own CPU s':>11}{'peak MiB':>10}{'error pp':>10}")
for config, runs in rows.items():
    target = statistics.median(r[0] for r in runs)
    cpu = statistics.median(r[1] for r in runs)
    mib = max(r[2] for r in runs) / 1024
    errs = [float(r[3]) for r in runs if r[3] != "-"]
    err = f"{statistics.median(errs):.2f}" if errs else "-"
    print(f"{config:<14}{target:>10.3f}{target / base:>10.4f}{cpu:>11.3f}{mib:>10.1f}{err:>10}")
print(f"(medians of {len(rows['none'])} interleaved runs; slowdown = target time / no-profiler time)")
PY
for note in "${notes[@]}"; do
	echo "note: $note"
done
