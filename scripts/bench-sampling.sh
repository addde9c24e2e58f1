#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# What random intervals cost against fixed ones, and whether they keep the
# rate: at each frequency, two llmprof sessions on one CPU-bound program at
# once, one with fixed and one with random intervals, so both see the same
# CPU time of it.  Prints, for each, the samples per F*seconds and random's
# samples per fixed's; the BPF program's runs per second (every tick, on
# every CPU) and its time per run and per second (kernel.bpf_stats_enabled
# counters, as bpftool prog show prints them, over DURATION - 2 s from half a
# second after both are attached: each run is a timer tick on one CPU);
# random's runs per fixed's; and the periods random sets per second (each a
# call into one CPU) and its thread's wake-ups per second (llmprof -v's
# count over the whole session), so that random's interrupts per fixed's
# are (runs + periods set + wake-ups) / fixed's runs.  Medians of RUNS.
#
#   scripts/bench-sampling.sh
#
# RUNS (3), DURATION (seconds, 5, at least 3), FREQUENCIES ("99 999 4999"), LLMPROF
# (build/cmd/llmprof), TARGET (build/fixtures/ground_truth) and
# TARGET_PREFIX (e.g. "chrt -f 1", so that other load on the machine leaves
# the target 95 % of a CPU) come from the environment.  Needs root and
# bpftool.
set -eu
cd "$(dirname "$0")/.."
LLMPROF=${LLMPROF:-build/cmd/llmprof}
TARGET=${TARGET:-build/fixtures/ground_truth}
TARGET_PREFIX=${TARGET_PREFIX:-}
RUNS=${RUNS:-3}
SECONDS_EACH=${DURATION:-5}
FREQUENCIES=${FREQUENCIES:-99 999 4999}
[ "$(id -u)" = 0 ] || { echo "bench-sampling.sh: needs root" >&2; exit 2; }
[ -x "$LLMPROF" ] && [ -x "$TARGET" ] || { echo "bench-sampling.sh: build first" >&2; exit 2; }
command -v bpftool >/dev/null || { echo "bench-sampling.sh: needs bpftool" >&2; exit 2; }
WORK=$(mktemp -d "${TMPDIR:-/tmp}/bench-sampling.XXXXXX")
STATS_WAS=$(sysctl -n kernel.bpf_stats_enabled 2>/dev/null || echo 0)
BG=""
cleanup() {
	[ -n "$BG" ] && kill "$BG" 2>/dev/null
	sysctl -q -w kernel.bpf_stats_enabled="$STATS_WAS" 2>/dev/null || true
	[ -n "${KEEP:-}" ] || rm -rf "$WORK"
}
trap cleanup EXIT
sysctl -q -w kernel.bpf_stats_enabled=1

# prog_fd PID: the descriptor through which llmprof PID holds its
# sample_cpu program (bpftool names it; others may be profiling too).
prog_fd() {
	local fd id
	for fd in $(ls -l /proc/"$1"/fd 2>/dev/null | awk '/bpf-prog/ { print $9 }'); do
		id=$(awk '/^prog_id:/ { print $2 }' /proc/"$1"/fdinfo/"$fd" 2>/dev/null)
		[ -n "$id" ] && bpftool prog show id "$id" 2>/dev/null | grep -q "name sample_cpu" &&
			echo "$fd" && return
	done
	return 0
}

# prog_stats PID FD: "RUNS NS" so far, the counters bpftool prog show
# prints, read from the descriptor's fdinfo.
prog_stats() {
	awk '/^run_cnt:/ { c = $2 } /^run_time_ns:/ { t = $2 } END { print c + 0, t + 0 }' \
		/proc/"$1"/fdinfo/"$2"
}

# session SAMPLING F: starts llmprof on $BG; its pid in PID.
session() {
	"$LLMPROF" attach -v -p "$BG" -d "$SECONDS_EACH" -F "$2" --sampling "$1" -o /dev/null \
		2>"$WORK/$1.err" &
	PID=$!
}

# wait_prog PID: the descriptor of its sample_cpu program once loaded.
wait_prog() {
	local fd
	for _ in $(seq 200); do
		fd=$(prog_fd "$1")
		[ -n "$fd" ] && echo "$fd" && return
		sleep 0.05
	done
	echo "bench-sampling.sh: no sample_cpu program" >&2
	exit 1
}

# one F: fixed and random on one target at once, so both see the same
# CPU time of it; a line "F SAMPLING SAMPLES SECONDS RUNS NS WALL_NS DRAWS WAKE_UPS"
# each.
one() {
	local f=$1 fixed_pid fixed_fd random_pid random_fd f1 f2 r1 r2 t1 t2 samples seconds
	# Killed once both sessions end: the cap only has to outlast their start-up,
	# which a loaded machine can stretch to several seconds.
	$TARGET_PREFIX "$TARGET" $((SECONDS_EACH + 60)) >/dev/null &
	BG=$!
	sleep 0.3
	# Started together, so that their summaries cover the same time.
	session fixed "$f"
	fixed_pid=$PID
	session random "$f"
	random_pid=$PID
	fixed_fd=$(wait_prog "$fixed_pid")
	random_fd=$(wait_prog "$random_pid")
	# From half a second after both are attached, for DURATION - 2 s.
	sleep 0.5
	f1=$(prog_stats "$fixed_pid" "$fixed_fd")
	r1=$(prog_stats "$random_pid" "$random_fd")
	t1=$(date +%s%N)
	sleep $((SECONDS_EACH - 2))
	f2=$(prog_stats "$fixed_pid" "$fixed_fd")
	r2=$(prog_stats "$random_pid" "$random_fd")
	t2=$(date +%s%N)
	wait "$fixed_pid" "$random_pid"
	kill "$BG" 2>/dev/null || true
	wait "$BG" 2>/dev/null || true
	BG=""
	for sampling in fixed random; do
		read -r samples seconds < <(sed -n \
			's/.*for \([0-9.]*\) s at .*: \([0-9]*\) samples.*/\2 \1/p' "$WORK/$sampling.err")
		# Fixed sessions, and llmprof before its random clock drew periods
		# again, print no such line.
		draws=0 wake_ups=0
		read -r draws wake_ups < <(sed -n \
			's/.*sampling clock: \([0-9]*\) periods drawn in \([0-9]*\) wake-ups.*/\1 \2/p' \
			"$WORK/$sampling.err") || true
		if [ $sampling = fixed ]; then set -- $f1 $f2; else set -- $r1 $r2; fi
		echo "$f $sampling $samples $seconds $(($3 - $1)) $(($4 - $2)) $((t2 - t1))" \
			"${draws:-0} ${wake_ups:-0}"
	done
}

for f in $FREQUENCIES; do
	for run in $(seq "$RUNS"); do
		one "$f" >>"$WORK/results"
	done
done

python3 - "$WORK/results" "$(nproc)" <<'PY'
import statistics, sys
runs = {}
for line in open(sys.argv[1]):
    f, sampling, samples, seconds, n, ns, wall, draws, wake_ups = line.split()
    f, wall = int(f), int(wall) / 1e9
    runs.setdefault((f, sampling), []).append(
        dict(rate=int(samples) / (f * float(seconds)), samples=int(samples) / float(seconds),
             runs=int(n) / wall, ns=int(ns) / wall, draws=int(draws) / float(seconds),
             wake_ups=int(wake_ups) / float(seconds)))
med = lambda key, rows: statistics.median(r[key] for r in rows)
print(f"{sys.argv[2]} CPUs; medians of {len(next(iter(runs.values())))} runs, fixed and random "
      "on one target at once")
print(f"{'Hz':>5} {'sampling':<8} {'samples/(F*s)':>13} {'random/fixed':>12} {'runs/s':>8} "
      f"{'ns/run':>7} {'BPF us/s':>9} {'sets/s':>7} {'wake-ups/s':>10} {'interrupts random/fixed':>23}")
for f in sorted({k[0] for k in runs}):
    fixed, random = runs[(f, "fixed")], runs[(f, "random")]
    # Per run, then the median, so that each pair shares its target.
    ratio = statistics.median(r["samples"] / x["samples"] for r, x in zip(random, fixed))
    interrupts = statistics.median((r["runs"] + r["draws"] + r["wake_ups"]) / x["runs"]
                                   for r, x in zip(random, fixed))
    for name, rows in (("fixed", fixed), ("random", random)):
        tail = (f"{ratio:>12.4f}", f"{interrupts:>23.3f}") if name == "random" \
            else (f"{'-':>12}", f"{'-':>23}")
        print(f"{f:>5} {name:<8} {med('rate', rows):>13.4f} {tail[0]} {med('runs', rows):>8.0f} "
              f"{med('ns', rows) / med('runs', rows):>7.0f} {med('ns', rows) / 1e3:>9.0f} "
              f"{med('draws', rows):>7.0f} {med('wake_ups', rows):>10.0f} {tail[1]}")
PY
