#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# What llmprof costs a real training job: tests/jobs/ddp_job.py (DDP over
# gloo, two ranks, two DataLoader workers each, started torchrun-style) run
# alone and under `llmprof record` (--mode wall -F 99, the default a user of
# the findings runs, and --mode cpu), RUNS rounds of one run each, in an
# order shuffled each round (BENCH_SEED, default 1) so that no configuration
# always follows another.  The job measures itself: its loop's wall time and
# the shares of it in next(batches), compute and all-reduce.  Prints each
# run's figures (rank 0's and rank 1's mean), then per configuration the
# median loop time, its ratio to the job alone, the median of each round's
# ratio (of the loop time, and of the median step's) with a 90 % bootstrap
# interval (other guests on a shared VM move the
# job alone by half its time between rounds, so a ratio is a number with an
# interval), and the median shares, so that "the same job figures with and
# without llmprof" is a number.  With LLMPROF_BASE naming another llmprof
# binary (an older build), its --mode wall runs join the rotation as "base",
# for a before/after in the same run.
# Usage: scripts/bench-jobs.sh [RUNS] [STEPS] [DATA]   (root; 3, 60, fast)
set -euo pipefail
cd "$(dirname "$0")/.."
runs=${1:-3}
steps=${2:-60}
data=${3:-fast}
build_dir=${BUILD_DIR:-build}
[ -x "$build_dir/cmd/llmprof" ] || BUILD_DIR=$build_dir scripts/build.sh >/dev/null
llmprof=$(realpath "$build_dir/cmd/llmprof")
py=/usr/bin/python3
"$py" -c 'import torch.distributed' 2>/dev/null || {
	echo "no torch.distributed for $py" >&2
	exit 1
}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

configs=(alone wall cpu)
base=${LLMPROF_BASE:-}
if [ -n "$base" ]; then
	[ -x "$base" ] || {
		echo "LLMPROF_BASE: $base is not an executable" >&2
		exit 2
	}
	configs+=(base)
fi
seed=${BENCH_SEED:-1}
for run in $(seq 1 "$runs"); do
	order=$(python3 -c 'import random, sys
random.seed(int(sys.argv[1]) * 1000 + int(sys.argv[2]))
names = sys.argv[3:]
random.shuffle(names)
print(" ".join(names))' "$seed" "$run" "${configs[@]}")
	for config in $order; do
		truth=$work/$config.$run.truth
		set -- sh tests/jobs/env_launch.sh "$py" tests/jobs/ddp_job.py --launch env \
			--data "$data" --steps "$steps" --truth "$truth"
		case $config in
		alone) "$@" >/dev/null 2>"$work/err" ;;
		wall | cpu)
			"$llmprof" record --mode "$config" -F 99 -o "$work/$config.$run.folded" \
				-- "$@" >/dev/null 2>"$work/err"
			;;
		base)
			"$base" record --mode wall -F 99 -o "$work/$config.$run.folded" \
				-- "$@" >/dev/null 2>"$work/err"
			;;
		esac || {
			echo "$config run $run failed: $(tail -3 "$work/err")" >&2
			exit 1
		}
		python3 - "$truth" "$config" "$run" <<'EOF'
import json, sys
rows = [json.loads(l) for l in open(sys.argv[1]) if l.strip()]
mean = lambda k: sum(r[k] for r in rows) / len(rows)
print("%-5s run %s: loop %.2f s, step %.1f ms, data %.3f, compute %.3f, comm %.3f" % (
    sys.argv[2], sys.argv[3], mean("loop_s"), 1000 * mean("step_median_s"),
    mean("data_share"), mean("compute_share"), mean("comm_share")))
EOF
	done
done
python3 - "$work" "$runs" "${configs[@]}" <<'EOF'
import json, random, statistics, sys
work, runs, configs = sys.argv[1], int(sys.argv[2]), sys.argv[3:]
def rows(config, run):
    return [json.loads(l) for l in open("%s/%s.%d.truth" % (work, config, run)) if l.strip()]
def mean(config, run, key):
    r = rows(config, run)
    return sum(x[key] for x in r) / len(r)
def medians(config):
    return {k: statistics.median(mean(config, run, k) for run in range(1, runs + 1))
            for k in ("loop_s", "data_share", "compute_share", "comm_share")}
def interval(values, rounds=2000):
    """A 90 % percentile-bootstrap interval of the median (fixed seed)."""
    draw = random.Random(1)
    picks = sorted(statistics.median(draw.choices(values, k=len(values)))
                   for _ in range(rounds))
    return picks[int(0.05 * rounds)], picks[int(0.95 * rounds) - 1]
def by_round(config, key):
    ratios = [mean(config, r, key) / mean("alone", r, key) for r in range(1, runs + 1)]
    low, high = interval(ratios)
    return "%5.3f [%.3f, %.3f]" % (statistics.median(ratios), low, high)
alone = medians("alone")
print("\nmedians of %d runs (ranks' mean).  loop round, step round: the median of"
      " each round's loop time (median step time) over the alone run's of that"
      " round, [its 90 %% bootstrap interval]" % runs)
print("%-6s %7s %6s %21s %21s %6s %7s %6s" % ("", "loop s", "ratio", "loop round",
                                              "step round", "data", "compute", "comm"))
for config in configs:
    m = medians(config)
    print("%-6s %7.2f %6.3f %21s %21s %6.3f %7.3f %6.3f" % (
          config, m["loop_s"], m["loop_s"] / alone["loop_s"], by_round(config, "loop_s"),
          by_round(config, "step_median_s"), m["data_share"], m["compute_share"],
          m["comm_share"]))
EOF
