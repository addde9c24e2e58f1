#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# The Python row of the benchmark: a fixed-work CPython program's slowdown
# with llmprof recording it at 99 Hz, Python frames on and off, against no
# profiler (median of interleaved runs, as ratios); and what the BPF
# program costs per sample with and without the Python frame walk, at two
# Python stack depths (kernel.bpf_stats_enabled run times).
#
#   scripts/bench-python.sh [PYTHON]
#
# PYTHON defaults to pyenv's newest 3.10-3.13, else python3.  RUNS (7),
# ROUNDS (work per run) and LLMPROF (build/cmd/llmprof) come from the
# environment.  Needs root.
set -eu
cd "$(dirname "$0")/.."
LLMPROF=${LLMPROF:-build/cmd/llmprof}
RUNS=${RUNS:-7}
ROUNDS=${ROUNDS:-2000}
PY=${1:-}
if [ -z "$PY" ]; then
	PY=$(ls -d "${PYENV_ROOT:-$HOME/.pyenv}"/versions/3.1[0-3].*/bin/python3 2>/dev/null |
		sort -V | tail -1)
	PY=${PY:-python3}
fi
[ "$(id -u)" = 0 ] || { echo "bench-python.sh: needs root" >&2; exit 2; }
[ -x "$LLMPROF" ] || { echo "bench-python.sh: no $LLMPROF (build first)" >&2; exit 2; }
WORK=$(mktemp -d "${TMPDIR:-/tmp}/bench-python.XXXXXX")
STATS_WAS=$(sysctl -n kernel.bpf_stats_enabled 2>/dev/null || echo 0)
BG=""
cleanup() {
	[ -n "$BG" ] && kill "$BG" 2>/dev/null
	sysctl -q -w kernel.bpf_stats_enabled="$STATS_WAS" 2>/dev/null || true
	rm -rf "$WORK"
}
trap cleanup EXIT

# Fixed work through a Python stack of the given depth; prints its own
# elapsed time, which leaves out interpreter and profiler start-up.
cat >"$WORK/work.py" <<'EOF'
import sys
import time


def leaf(n):
    x = 0
    for i in range(n):
        x += i
    return x


def nest(depth, n):
    return leaf(n) if depth <= 0 else nest(depth - 1, n)


def main(rounds, depth):
    start = time.perf_counter()
    if rounds:
        for _ in range(rounds):
            nest(depth, 20000)
    else:
        while True:
            nest(depth, 20000)
    print(f"{time.perf_counter() - start:.6f}")


main(int(sys.argv[1]), int(sys.argv[2]))
EOF

run() { # MODE: prints the target's seconds
	case $1 in
	none) "$PY" "$WORK/work.py" "$ROUNDS" 8 ;;
	off) "$LLMPROF" record -F 99 --no-python -o /dev/null -- "$PY" "$WORK/work.py" "$ROUNDS" 8 \
		2>/dev/null ;;
	on) "$LLMPROF" record -F 99 -o /dev/null -- "$PY" "$WORK/work.py" "$ROUNDS" 8 2>/dev/null ;;
	esac
}

median() {
	sort -g | awk '{ v[NR] = $1 } END { print (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2 }'
}

echo "Python: $("$PY" -V 2>&1) ($PY); $RUNS interleaved runs of $ROUNDS rounds, 10 Python frames deep"
for i in $(seq "$RUNS"); do
	for mode in none off on; do
		run $mode >>"$WORK/$mode"
	done
done
base=$(median <"$WORK/none")
printf '%-34s %10s %10s\n' "target" "median s" "slowdown"
for mode in none off on; do
	m=$(median <"$WORK/$mode")
	case $mode in
	none) label="no profiler" ;;
	off) label="llmprof 99 Hz, --no-python" ;;
	on) label="llmprof 99 Hz, Python frames" ;;
	esac
	printf '%-34s %10.3f %10.4f\n' "$label" "$m" "$(echo "$m / $base" | bc -l)"
done

# BPF run time per sample: the same program with and without Python
# frames, while llmprof samples a busy interpreter at 999 Hz (fixed
# intervals, so that no run is a discarded tick of a random clock).
sample_programs() { # ids of the loaded sample_cpu programs
	bpftool prog show -j | python3 -c '
import json, sys
print(" ".join(str(p["id"]) for p in json.load(sys.stdin) if p.get("name") == "sample_cpu"))'
}

bpf_cost() { # DEPTH OPTIONS...: prints mean ns per program run
	local depth=$1 pid before
	shift
	"$PY" "$WORK/work.py" 0 "$depth" >/dev/null &
	BG=$!
	sleep 0.5
	before=$(sample_programs)
	"$LLMPROF" attach -p "$BG" -d 3 -F 999 --sampling fixed -o /dev/null "$@" 2>/dev/null &
	pid=$!
	sleep 2.5
	# Ours is the one that was not there before (others may be profiling).
	bpftool prog show -j | python3 -c '
import json, sys
before = set(int(i) for i in sys.argv[1].split())
for prog in json.load(sys.stdin):
    if prog.get("name") == "sample_cpu" and prog["id"] not in before and prog.get("run_cnt"):
        print("%.0f" % (prog["run_time_ns"] / prog["run_cnt"]))
        break
else:
    print("?")
' "$before"
	wait "$pid" || true
	kill "$BG" 2>/dev/null
	wait "$BG" 2>/dev/null || true
	BG=""
}

if sysctl -q -w kernel.bpf_stats_enabled=1 2>/dev/null && command -v bpftool >/dev/null; then
	printf '\n%-34s %10s %10s\n' "BPF program, 999 Hz" "ns/sample" "python ns"
	for depth in 8 48; do
		off=$(bpf_cost $depth --no-python)
		on=$(bpf_cost $depth)
		printf '%-34s %10s %10s\n' "$((depth + 2)) Python frames, --no-python" "$off" "-"
		printf '%-34s %10s %10s\n' "$((depth + 2)) Python frames, Python on" "$on" \
			"$(echo "$on - $off" | bc 2>/dev/null || echo ?)"
	done
else
	echo "(no kernel.bpf_stats_enabled or bpftool: BPF run times skipped)"
fi
