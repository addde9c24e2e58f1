#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# A training loop that saves a checkpoint (torch.save, then fsync) every
# few steps, recorded as a user would (record --mode wall -F 99 -f
# speedscope) and compared with what the job measured itself
# (checkpoint_job.py):
#   often   every 4th step: file-io names save() within 0.10 of the
#           job's share of its loop in it, with its fsync and writes;
#   rarely  every 50th step: no file-io finding.
# check_checkpoint.py holds the comparisons and prints the figures.
. "$TESTS_SOURCE/lib/testlib.sh"
need_root
PY=/usr/bin/python3
"$PY" -c 'import torch' 2>/dev/null || skip "no torch for $PY"
# fsync must reach a device: not a tmpfs.
DIR=$WORK
[ "$(stat -f -c %T "$DIR")" = tmpfs ] && DIR=$(mktemp -d /var/tmp/llmprof-test.XXXXXX)
[ "$DIR" = "$WORK" ] || trap 'rm -rf "$DIR"; cleanup' EXIT

job() { # NAME EXPECT ARGS...
	local name=$1 expect=$2
	shift 2
	"$LLMPROF" record --mode wall -F 99 -f speedscope -o "$WORK/$name.json" -- \
		"$PY" "$TESTS_SOURCE/jobs/checkpoint_job.py" --dir "$DIR" "$@" \
		--truth "$WORK/$name.truth" >/dev/null 2>"$WORK/$name.err" ||
		fail "record of $name failed: $(cat "$WORK/$name.err")"
	python3 "$TESTS_SOURCE/jobs/check_checkpoint.py" "$LLMPROF" "$WORK/$name.json" \
		"$WORK/$name.truth" "$expect" || fail "$name: $(cat "$WORK/$name.err")"
	echo "$name: $SECONDS s"
}

job often io --every 4 --steps 24
job rarely quiet --every 50 --steps 100
echo PASS
