#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# Whole PyTorch jobs recorded as a user would (record --mode wall -F 99 -f
# speedscope), each compared with what the job measured itself
# (ddp_job.py: DDP over gloo, two ranks, two DataLoader workers each):
#   spawn data    torch.multiprocessing.spawn, slow tokenising: ranks named
#                 ranks, data loading found at the loop's call (workers
#                 forked: spawned ones import torch each, which under the
#                 profiler takes longer than CI should);
#   env data      the same started torchrun-style (env_launch.sh);
#   env straggler rank 1 does two more steps' work: named by the summary,
#                 report --findings and --by-process, its extra time near
#                 the job's (where the job measured the other rank waiting
#                 20% of its loop or more; never below 10%);
#   env healthy   no straggler (symmetric ranks lead each other by turns,
#                 not steadily) unless the job measured one rank steadily
#                 behind (other load on a 2-core machine), then that rank
#                 at the job's lead; data loading only where the job
#                 measured a wait near the rule's 10 % (a loaded machine).
#   env persistent  (jobs.sh loader) the data-bound job with
#                 persistent_workers=True over two epochs: its two workers
#                 per rank named as such across the epochs, the loop's
#                 wait within 0.10 of the job's.
#   env inline    (jobs.sh inline) no workers, the loop loads its batches
#                 itself: slow tokenising named as loading in the training
#                 process within 0.10 of the job's data share, at the
#                 loop's call; fast tokenising: no data-loading finding.
# check_job.py holds the comparisons and prints the figures.
. "$TESTS_SOURCE/lib/testlib.sh"
need_root
PY=/usr/bin/python3
JOB=$TESTS_SOURCE/jobs/ddp_job.py
"$PY" -c 'import torch.distributed' 2>/dev/null || skip "no torch.distributed for $PY"

job() { # NAME EXPECT LAUNCH ARGS...
	local name=$1 expect=$2 launch=$3
	shift 3
	if [ "$launch" = spawn ]; then
		set -- "$PY" "$JOB" --launch spawn "$@"
	else
		set -- sh "$TESTS_SOURCE/jobs/env_launch.sh" "$PY" "$JOB" --launch env "$@"
	fi
	"$LLMPROF" record --mode wall -F 99 -f speedscope -o "$WORK/$name.json" -- "$@" \
		--truth "$WORK/$name.truth" >/dev/null 2>"$WORK/$name.err" ||
		fail "record of $name failed: $(cat "$WORK/$name.err")"
	python3 "$TESTS_SOURCE/jobs/check_job.py" "$LLMPROF" "$WORK/$name.json" \
		"$WORK/$name.truth" "$WORK/$name.err" "$expect" || fail "$name: $(cat "$WORK/$name.err")"
	echo "$name: $SECONDS s"
}

if [ "${1:-}" = inline ]; then
	job env-inline data env --workers 0 --data slow --rounds 800 --steps 16
	job env-inline-healthy healthy env --workers 0 --steps 20
	echo PASS
	exit 0
fi
if [ "${1:-}" = loader ]; then
	job env-persistent data env --data slow --rounds 6000 --steps 20 --persistent
	echo PASS
	exit 0
fi
job spawn-data data spawn --data slow --rounds 6000 --steps 20 --loader-start fork
job env-data data env --data slow --rounds 6000 --steps 20
# 60 steps: 3 to a slice of the straggler's steadiness test (20 slices of
# the span); at 30, a slice's lead hung on whether 1 or 2 of the others'
# waits began in it, and the planted lead (0.4 of the loop) came out at t
# 2.6, under the rule's 2.7, in 1 run of about 8.
job env-straggler straggler:1 env --straggler 1 --extra-steps 2 --steps 60
job env-healthy healthy env --steps 40
echo PASS
