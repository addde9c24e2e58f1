#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# What the unwind cache saves an attach: llmprof attach -v -d 3 to one
# target, run in turn with an empty cache (every file compiled, entries
# written), with the cache those runs filled (rows read), and with
# --no-unwind-cache (compiled, nothing written), RUNS rounds interleaved.
# Prints per mode the medians of llmprof's own CPU (user + sys, from
# /usr/bin/time), its peak RSS, the CPU -v gives to compiling rows and to
# reading entries, the files compiled and read, and attach's warm-up (from
# its first samples until the files they ran through have their rows).
#
# Usage: scripts/bench-unwind-cache.sh [RUNS] [WORKLOAD]   (root; default 3)
#   WORKLOAD c      build/fixtures/ground_truth (default)
#   WORKLOAD torch  Debian's python3 after import torch, in a loop
set -euo pipefail
cd "$(dirname "$0")/.."
runs=${1:-3}
workload=${2:-c}
build_dir=${BUILD_DIR:-build}
[ -x "$build_dir/cmd/llmprof" ] || BUILD_DIR=$build_dir scripts/build.sh >/dev/null
llmprof=$build_dir/cmd/llmprof
work=$(mktemp -d)
trap 'kill $target 2>/dev/null; rm -rf "$work"' EXIT

case $workload in
c) "$build_dir/fixtures/ground_truth" $((runs * 3 * 10 + 10)) >/dev/null & ;;
torch)
	/usr/bin/python3 -c '
import torch, time
x = torch.randn(256, 256)
end = time.time() + float(__import__("sys").argv[1])
while time.time() < end:
    x = torch.tanh(x @ x) / 16' $((runs * 3 * 10 + 20)) &
	;;
*) echo "unknown workload $workload" >&2; exit 2 ;;
esac
target=$!
sleep 5

# one MODE ROUND: an attach; appends "mode cpu rss compile read compiled
# read_files ready" to $work/rows.
one() {
	local mode=$1 dir=$work/cache options=()
	case $mode in
	first) rm -rf "$dir" ;;
	off) options=(--no-unwind-cache) ;;
	esac
	LLMPROF_CACHE_DIR=$dir /usr/bin/time -f '%U %S %M' -o "$work/time" \
		"$llmprof" attach -v -p "$target" -d 3 "${options[@]}" -o /dev/null 2>"$work/err"
	local line ready
	line=$(grep 'unwind rows:' "$work/err" | tail -1)
	ready=$(sed -n 's/.*warm-up: [0-9]* samples in \([0-9.]*\) s.*/\1/p' "$work/err" | tail -1)
	read -r user sys rss <"$work/time"
	echo "$mode $(awk -v u="$user" -v s="$sys" 'BEGIN { print u + s }') $rss" \
		"$(sed -n 's/.*compiled (\([0-9.]*\) s of CPU).*/\1/p' <<<"$line")" \
		"$(sed -n 's/.*read from the cache.*(\([0-9.]*\) s of CPU), [0-9]* compiled.*/\1/p' <<<"$line")" \
		"$(sed -n 's/.*), \([0-9]*\) compiled.*/\1/p' <<<"$line")" \
		"$(sed -n 's/.*unwind rows: \([0-9]*\) files read.*/\1/p' <<<"$line")" \
		"$ready" >>"$work/rows"
}
for round in $(seq "$runs"); do
	one first "$round"
	one cached "$round"
	one off "$round"
done
echo "$workload, $runs rounds, medians (llmprof attach -v -d 3 -p PID, /usr/bin/time):"
printf '%-7s %9s %9s %11s %9s %9s %6s %10s\n' mode "CPU s" "RSS MiB" "compile s" "read s" compiled read "warm-up s"
for mode in first cached off; do
	awk -v m="$mode" '$1 == m' "$work/rows" | python3 -c '
import statistics, sys
rows = [l.split() for l in sys.stdin]
med = lambda i: statistics.median(float(r[i]) for r in rows)
print("%-7s %9.2f %9.1f %11.3f %9.3f %9d %6d %10.2f" % (sys.argv[1], med(1), med(2) / 1024,
      med(3), med(4), med(5), med(6), med(7)))' "$mode"
done
