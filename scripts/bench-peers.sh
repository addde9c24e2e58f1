#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# What a user pays for whole stacks, llmprof against its peers, side by side
# and interleaved: a C program without frame pointers (the 50/30/20
# ground-truth fixture built by gcc with -fomit-frame-pointer) and a Debian
# PyTorch MLP loop, each profiled by attaching for the same time with
#   llmprof       llmprof attach (its defaults: random intervals, BPF unwinder)
#   perf-g        perf record -g, then perf script
#   perf-dwarf    perf record --call-graph dwarf, then perf script
#   profile       libbpf-tools' profile -f, where LIBBPF_TOOLS names a
#                 directory with it built (a libbpf-tools checkout)
# For each, at each rate: its own CPU seconds (the recorder's and perf
# script's together, start to written stacks), its peak RSS, the share of
# samples whose stack reaches its thread's first frame (whole stacks), and
# for the C program the target's slowdown (its own timing of fixed work,
# against no profiler).
# Prints medians of RUNS and each one's ratio to perf-g's.
#
#   scripts/bench-peers.sh [RUNS]        (root; default 3)
#
# FREQUENCIES ("99 999"), SECONDS_EACH (4, the torch attach), ROUNDS (fixed
# work of the C program, 1500), BUILD_DIR (build) come from the environment.
set -euo pipefail
cd "$(dirname "$0")/.."
runs=${1:-3}
frequencies=${FREQUENCIES:-99 999}
seconds=${SECONDS_EACH:-4}
rounds=${ROUNDS:-1500}
build_dir=${BUILD_DIR:-build}
llmprof=$build_dir/cmd/llmprof
c_target=$build_dir/fixtures/ground_truth_nofp_gcc
torch_target=tests/unwind/fixtures/torch_mlp.py
[ "$(id -u)" = 0 ] || { echo "bench-peers.sh: needs root" >&2; exit 2; }
[ -x "$llmprof" ] && [ -x "$c_target" ] || { echo "bench-peers.sh: build first" >&2; exit 2; }
command -v perf >/dev/null || { echo "bench-peers.sh: needs perf (linux-perf)" >&2; exit 2; }
work=$(mktemp -d "${TMPDIR:-/tmp}/bench-peers.XXXXXX")
target=""
cleanup() {
	[ -n "$target" ] && kill "$target" 2>/dev/null
	rm -rf "$work"
}
trap cleanup EXIT

profilers=(llmprof perf-g perf-dwarf)
if [ -n "${LIBBPF_TOOLS:-}" ] && [ -x "$LIBBPF_TOOLS/profile" ]; then
	profilers+=(profile)
else
	echo "bench-peers.sh: libbpf-tools' profile left out (set LIBBPF_TOOLS to its directory)" >&2
fi
workloads=(c)
if /usr/bin/python3 -c 'import torch' 2>/dev/null; then
	workloads+=(torch)
else
	echo "bench-peers.sh: the torch loop left out (needs Debian's python3-torch)" >&2
fi

# timed NAME COMMAND...: runs it under /usr/bin/time, adding its user and
# system seconds to $work/NAME.cpu and its peak KiB to $work/NAME.rss.
timed() {
	local name=$1 user sys kib
	shift
	/usr/bin/time -f '%U %S %M' -o "$work/time" "$@"
	read -r user sys kib <"$work/time"
	python3 -c "print($(cat "$work/$name.cpu" 2>/dev/null || echo 0) + $user + $sys)" \
		>"$work/$name.cpu"
	[ "$kib" -gt "$(cat "$work/$name.rss" 2>/dev/null || echo 0)" ] && echo "$kib" >"$work/$name.rss"
	return 0
}

# perf_stacks DATA: perf script's stacks as folded lines, leaf last.
perf_stacks() {
	perf script -i "$1" -F ip,sym 2>/dev/null | awk '
		/^$/ { if (n) { s = f[n]; for (i = n - 1; i >= 1; i--) s = s ";" f[i]; print s " 1" } n = 0; next }
		{ f[++n] = $2 }
		END { if (n) { s = f[n]; for (i = n - 1; i >= 1; i--) s = s ";" f[i]; print s " 1" } }'
}

# whole FOLDED: the percentage of samples whose stack reaches its thread's
# first frame: main (or libc's start) for the main thread, start_thread or
# clone for the others.
whole() {
	awk '{ n = $NF; total += n; if ($0 ~ /(^|;)(main|_start|__libc_start_main[^;]*|__libc_start_call_main|start_thread|clone3?|__clone3?)(;| )/) hit += n }
	     END { printf "%.1f\n", total ? 100 * hit / total : 0 }' "$1"
}

# stop_at_exit PID NAME: SIGINT to the process running NAME once PID is gone
# (libbpf-tools' profile runs for a duration, not until its target exits).
stop_at_exit() {
	while kill -0 "$1" 2>/dev/null; do sleep 0.05; done
	pkill -INT -f "^$2" 2>/dev/null || true
}

# profile_once PROFILER F PID [SECONDS]: attaches for SECONDS, or until PID
# exits; leaves $work/PROFILER.folded.
profile_once() {
	local profiler=$1 f=$2 pid=$3 d=${4:-} out=$work/$1 graph=fp
	rm -f "$work/$profiler.cpu" "$work/$profiler.rss"
	case $profiler in
	llmprof)
		timed "$profiler" "$llmprof" attach -p "$pid" ${d:+-d "$d"} -F "$f" \
			-o "$out.folded" 2>/dev/null ;;
	perf-g | perf-dwarf)
		[ "$profiler" = perf-dwarf ] && graph=dwarf
		# Without a command perf records until the target exits.
		timed "$profiler" perf record -q -e cpu-clock -F "$f" --call-graph "$graph" -p "$pid" \
			-o "$out.data" ${d:+-- sleep "$d"} >/dev/null 2>&1
		timed "$profiler" bash -c "$(declare -f perf_stacks); perf_stacks '$out.data' >'$out.folded'"
		rm -f "$out.data" ;;
	profile)
		local stopper=""
		if [ -z "$d" ]; then
			stop_at_exit "$pid" "$LIBBPF_TOOLS/profile" &
			stopper=$!
		fi
		timed "$profiler" "$LIBBPF_TOOLS/profile" -F "$f" -f -p "$pid" "${d:-3600}" \
			>"$out.folded" 2>/dev/null
		[ -z "$stopper" ] || wait "$stopper" ;;
	esac
}

# one WORKLOAD F PROFILER: a line "WORKLOAD F PROFILER CPU KIB WHOLE TARGET_S".
one() {
	local workload=$1 f=$2 profiler=$3 target_s=-
	if [ "$workload" = c ]; then
		"$c_target" 0 "$rounds" >"$work/target.out" &
		target=$!
		if [ "$profiler" = none ]; then
			wait "$target"
		else
			profile_once "$profiler" "$f" "$target"
			wait "$target" || true
		fi
		target_s=$(awk '{ print $4 }' "$work/target.out")
		target=""
	else
		/usr/bin/python3 "$torch_target" $((seconds + 30)) >/dev/null &
		target=$!
		sleep 3
		profile_once "$profiler" "$f" "$target" "$seconds"
		kill "$target" 2>/dev/null || true
		wait "$target" 2>/dev/null || true
		target=""
	fi
	if [ "$profiler" = none ]; then
		echo "$workload $f none 0 0 - $target_s"
	else
		echo "$workload $f $profiler $(cat "$work/$profiler.cpu") $(cat "$work/$profiler.rss")" \
			"$(whole "$work/$profiler.folded") $target_s"
	fi
}

for ((run = 1; run <= runs; run++)); do
	for workload in "${workloads[@]}"; do
		for f in $frequencies; do
			[ "$workload" = c ] && one c "$f" none >>"$work/results"
			for profiler in "${profilers[@]}"; do
				one "$workload" "$f" "$profiler" >>"$work/results"
			done
		done
	done
	echo "bench-peers: run $run/$runs done" >&2
done

python3 - "$work/results" "$runs" <<'PY'
import statistics, sys
rows = {}
for line in open(sys.argv[1]):
    workload, f, profiler, cpu, kib, whole, target = line.split()
    rows.setdefault((workload, int(f), profiler), []).append(
        (float(cpu), int(kib), whole, target))
med = statistics.median
print(f"medians of {sys.argv[2]} interleaved runs; x = ratio to perf-g's")
print(f"{'workload':<8} {'Hz':>4} {'profiler':<11} {'own CPU s':>9} {'x':>6} {'peak MiB':>8} "
      f"{'x':>6} {'whole':>10} {'slowdown':>8}")
for (workload, f, profiler), runs in sorted(rows.items()):
    if profiler == "none":
        continue
    base = rows.get((workload, f, "perf-g"))
    cpu, kib = med(r[0] for r in runs), max(r[1] for r in runs)
    whole = med(float(r[2]) for r in runs)
    slowdown = "-"
    none = rows.get((workload, f, "none"))
    if none and runs[0][3] != "-":
        slowdown = f"{med(float(r[3]) for r in runs) / med(float(r[3]) for r in none):.4f}"
    cpu_x = f"{cpu / med(r[0] for r in base):.2f}" if base else "-"
    kib_x = f"{kib / max(r[1] for r in base):.2f}" if base else "-"
    print(f"{workload:<8} {f:>4} {profiler:<11} {cpu:>9.3f} {cpu_x:>6} {kib / 1024:>8.1f} "
          f"{kib_x:>6} {whole:>9.1f}% {slowdown:>8}")
PY
