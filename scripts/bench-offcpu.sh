#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# Off-CPU overhead on a context-switch storm, interleaved: perf bench sched
# pipe (two threads of one process passing a token, one switch per message)
# with no profiler, llmprof --off-cpu, llmprof --mode wall and bcc's
# offcputime attached to it.  Prints the target's cost per message (median,
# and as a ratio to no profiler), and for llmprof the BPF time per run of its
# sched_switch program (kernel.bpf_stats_enabled), the waits recorded and the
# short ones only counted; "+exit" is the run time of the syscall-exit
# program (on every syscall of every thread of the machine) per switch.
# TARGET_PREFIX runs the storm under a command: "taskset -c 0" keeps both
# threads on one CPU, so that every message is a switch and no CPU's idle
# wake-up latency is in the figure; LLMPROF_ARGS are added to llmprof's
# (--off-cpu-min 1: every wait recorded).
# Usage: scripts/bench-offcpu.sh [RUNS] [MESSAGES]   (root; default 5, 200000)
set -euo pipefail
cd "$(dirname "$0")/.."
runs=${1:-5}
messages=${2:-200000}
build_dir=${BUILD_DIR:-build}
[ -x "$build_dir/cmd/llmprof" ] || BUILD_DIR=$build_dir scripts/build.sh >/dev/null
llmprof=$build_dir/cmd/llmprof
work=$(mktemp -d)
trap 'rm -rf "$work"; sysctl -qw kernel.bpf_stats_enabled=0' EXIT
command -v perf >/dev/null || { echo "perf is not installed" >&2; exit 1; }
sysctl -qw kernel.bpf_stats_enabled=1

configs=(none llmprof-off-cpu llmprof-wall bcc-offcputime)
notes=()
if ! command -v offcputime-bpfcc >/dev/null; then
	configs=("${configs[@]/bcc-offcputime/}")
	notes+=("bcc offcputime: not installed")
elif ! timeout 60 offcputime-bpfcc -p $$ 1 >/dev/null 2>"$work/bcc.err"; then
	configs=("${configs[@]/bcc-offcputime/}")
	notes+=("bcc offcputime: cannot run here: $(grep -m1 -i -e 'unable' -e 'error' "$work/bcc.err" || tail -1 "$work/bcc.err")")
fi

# run CONFIG N: one storm under CONFIG; appends "usecs_per_op [ns_per_run waits short]".
run() {
	local config=$1 n=$2 pid prof="" stats="" exit_ns="" usecs
	${TARGET_PREFIX:-} perf bench sched pipe -T -l "$messages" >"$work/bench.$n" 2>&1 &
	pid=$!
	case $config in
	llmprof-off-cpu) "$llmprof" attach -p "$pid" --off-cpu ${LLMPROF_ARGS:-} -o "$work/p.folded" 2>"$work/p.err" & prof=$! ;;
	llmprof-wall) "$llmprof" attach -p "$pid" --mode wall -F 999 ${LLMPROF_ARGS:-} -o "$work/p.folded" 2>"$work/p.err" & prof=$! ;;
	bcc-offcputime) offcputime-bpfcc -p "$pid" -f 600 >"$work/p.folded" 2>/dev/null & prof=$! ;;
	esac
	if [ -n "$prof" ] && [ "${config#llmprof}" != "$config" ]; then
		# Until the program is attached, the storm is not measured.
		for _ in $(seq 200); do
			bpftool prog show name offcpu_switch >/dev/null 2>&1 && break
			sleep 0.01
		done
	fi
	wait "$pid" || true
	if [ "${config#llmprof}" != "$config" ]; then
		stats=$(bpftool prog show name offcpu_switch 2>/dev/null |
			sed -n 's/.*run_time_ns \([0-9]*\) run_cnt \([0-9]*\).*/\1 \2/p' | head -1)
		exit_ns=$({ bpftool prog show name offcpu_syscall_exit 2>/dev/null || true; } |
			sed -n 's/.*run_time_ns \([0-9]*\) run_cnt.*/\1/p' | head -1)
	fi
	[ -n "$prof" ] && kill -INT "$prof" 2>/dev/null
	[ -n "$prof" ] && wait "$prof" 2>/dev/null || true
	usecs=$(sed -n 's/^ *\([0-9.]*\) usecs\/op$/\1/p' "$work/bench.$n")
	if [ "${config#llmprof}" != "$config" ]; then
		local waits short
		waits=$(sed -n 's/.* in \([0-9]*\) waits.*/\1/p' "$work/p.err")
		short=$(sed -n 's/.*waits (\([0-9]*\) shorter.*/\1/p' "$work/p.err")
		read -r t c <<<"${stats:-0 1}"
		echo "$usecs $(awk -v t="$t" -v c="$c" 'BEGIN { printf "%.0f", c ? t / c : 0 }') ${waits:-?} ${short:-?} $(awk -v t="${exit_ns:-0}" -v c="$c" 'BEGIN { printf "%.0f", c ? t / c : 0 }')"
	else
		echo "$usecs"
	fi >>"$work/$config"
}

for n in $(seq "$runs"); do
	for config in "${configs[@]}"; do
		[ -n "$config" ] && run "$config" "$n"
	done
done

median() { sort -n | awk '{ v[NR] = $1 } END { print (NR % 2 ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2) }'; }
base=$(cut -d' ' -f1 "$work/none" | median)
printf '%-18s %12s %8s %14s %7s %10s %12s\n' config "us/message" ratio "BPF ns/switch" "+exit" waits "short-only"
for config in "${configs[@]}"; do
	[ -n "$config" ] || continue
	us=$(cut -d' ' -f1 "$work/$config" | median)
	if [ "${config#llmprof}" != "$config" ]; then
		printf '%-18s %12s %8.2f %14s %7s %10s %12s\n' "$config" "$us" "$(awk -v a="$us" -v b="$base" 'BEGIN { print a / b }')" \
			"$(cut -d' ' -f2 "$work/$config" | median)" "$(cut -d' ' -f5 "$work/$config" | median)" \
			"$(cut -d' ' -f3 "$work/$config" | median)" "$(cut -d' ' -f4 "$work/$config" | median)"
	else
		printf '%-18s %12s %8.2f %14s %7s %10s %12s\n' "$config" "$us" "$(awk -v a="$us" -v b="$base" 'BEGIN { print a / b }')" - - - -
	fi
done
echo "(median of $runs interleaved runs of $messages messages each)"
for note in "${notes[@]}"; do echo "$note"; done
