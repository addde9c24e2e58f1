#!/bin/sh
# SPDX-License-Identifier: GPL-2.0
# Runs a command and succeeds only if it exits with the given status.
# usage: expect_status.sh STATUS COMMAND ARGS...
want=$1
shift
"$@"
status=$?
if [ "$status" != "$want" ]; then
	echo "FAIL: $* exited $status, expected $want" >&2
	exit 1
fi
exit 0
