#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# Symmetric ranks, recorded RUNS times (default 10), alternately started by
# torch.multiprocessing.spawn and torchrun-style: counts the runs in which
# the summary, report --findings or report --by-process claims a straggler
# or data loading that the job did not measure itself (check_job.py
# healthy), and prints each run's straggler figure.  Not in CI (a
# few minutes); run as root from the build tree:
#   LLMPROF=build/cmd/llmprof tests/jobs/false_positives.sh [RUNS]
# KEEP=DIR keeps each run's profile, truth and summary in DIR.
set -u
RUNS=${1:-10}
LLMPROF=${LLMPROF:-llmprof}
HERE=$(cd "$(dirname "$0")" && pwd)
if [ -n "${KEEP:-}" ]; then
	WORK=$KEEP
	mkdir -p "$WORK"
else
	WORK=$(mktemp -d "${TMPDIR:-/tmp}/llmprof-fp.XXXXXX")
	trap 'rm -rf "$WORK"' EXIT
fi
claims=0
for run in $(seq 1 "$RUNS"); do
	if [ $((run % 2)) = 1 ]; then
		set -- /usr/bin/python3 "$HERE/ddp_job.py" --launch spawn --loader-start fork
	else
		set -- sh "$HERE/env_launch.sh" /usr/bin/python3 "$HERE/ddp_job.py" --launch env
	fi
	"$LLMPROF" record --mode wall -F 99 -f speedscope -o "$WORK/$run.json" -- "$@" \
		--steps 60 --truth "$WORK/$run.truth" >/dev/null 2>"$WORK/$run.err" || {
		echo "run $run: record failed: $(tail -3 "$WORK/$run.err")"
		exit 1
	}
	if python3 "$HERE/check_job.py" "$LLMPROF" "$WORK/$run.json" "$WORK/$run.truth" \
		"$WORK/$run.err" healthy >"$WORK/$run.out" 2>&1; then
		echo "run $run ($1): $(cat "$WORK/$run.out")"
	else
		claims=$((claims + 1))
		echo "run $run ($1): CLAIM: $(head -1 "$WORK/$run.out" | cut -c1-700) $(tail -2 "$WORK/$run.out")"
	fi
	grep -q 'Straggler:\|waits for data' "$WORK/$run.err" &&
		echo "run $run: the summary claims: $(grep 'Straggler:\|waits for data' "$WORK/$run.err")"
done
echo "$claims of $RUNS runs claimed a straggler or data loading that the job did not measure"
[ "$claims" = 0 ]
