#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# What llmprof costs a real training job: tests/jobs/ddp_job.py (DDP over
# gloo, two ranks, two DataLoader workers each, started torchrun-style) run
# alternately alone and under `llmprof record` (--mode wall -F 99, the
# default a user of the findings runs, and --mode cpu), RUNS times each.
# The job measures itself: its loop's wall time and the shares of it in
# next(batches), compute and all-reduce.  Prints each run's figures (rank
# 0's and rank 1's mean), then per configuration the median loop time, its
# ratio to the job alone and the median shares, so that "the same job
# figures with and without llmprof" is a number.  With LLMPROF_BASE naming
# another llmprof binary (an older build), its --mode wall runs join the
# rotation as "base", for a before/after in the same run.
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
for run in $(seq 1 "$runs"); do
	for config in "${configs[@]}"; do
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
print("%-5s run %s: loop %.2f s, data %.3f, compute %.3f, comm %.3f" % (
    sys.argv[2], sys.argv[3], mean("loop_s"), mean("data_share"),
    mean("compute_share"), mean("comm_share")))
EOF
	done
done
python3 - "$work" "$runs" "${configs[@]}" <<'EOF'
import json, statistics, sys
work, runs, configs = sys.argv[1], int(sys.argv[2]), sys.argv[3:]
def medians(config):
    figures = {"loop_s": [], "data_share": [], "compute_share": [], "comm_share": []}
    for run in range(1, runs + 1):
        rows = [json.loads(l) for l in open("%s/%s.%d.truth" % (work, config, run)) if l.strip()]
        for key in figures:
            figures[key].append(sum(r[key] for r in rows) / len(rows))
    return {k: statistics.median(v) for k, v in figures.items()}
def loop(config, run):
    rows = [json.loads(l) for l in open("%s/%s.%d.truth" % (work, config, run)) if l.strip()]
    return sum(r["loop_s"] for r in rows) / len(rows)
alone = medians("alone")
print("\nmedians of %d runs (ranks' mean); round ratio: the median of each"
      " round's loop over the alone run's of that round" % runs)
print("%-6s %8s %7s %7s %7s %8s %7s" % ("", "loop s", "ratio", "round", "data", "compute",
                                         "comm"))
for config in configs:
    m = medians(config)
    rounds = statistics.median(loop(config, r) / loop("alone", r) for r in range(1, runs + 1))
    print("%-6s %8.2f %7.3f %7.3f %7.3f %8.3f %7.3f" % (
          config, m["loop_s"], m["loop_s"] / alone["loop_s"], rounds, m["data_share"],
          m["compute_share"], m["comm_share"]))
EOF
