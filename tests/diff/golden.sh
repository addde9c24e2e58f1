#!/bin/sh
# SPDX-License-Identifier: GPL-2.0
# Runs llmprof in the inputs directory and compares what it wrote to one
# stream with an expected file (diff -u), and its exit status with the
# expected one.  UPDATE_GOLDEN=1 rewrites the expected file instead;
# GOLDEN_STDIN names a file (in the inputs directory) for standard input.
#
# usage: golden.sh LLMPROF INPUTS EXPECTED STATUS stdout|stderr ARGS...
set -u
llmprof=$1 inputs=$2 expected=$3 want_status=$4 stream=$5
shift 5

out=$(mktemp) err=$(mktemp)
trap 'rm -f "$out" "$err"' EXIT
cd "$inputs" || exit 1
"$llmprof" "$@" <"${GOLDEN_STDIN:-/dev/null}" >"$out" 2>"$err"
status=$?

if [ "$stream" = stderr ]; then
	got=$err other=$out
else
	got=$out other=$err
fi
if [ "${UPDATE_GOLDEN:-}" = 1 ]; then
	cp "$got" "$expected"
	echo "updated $expected"
fi
failed=0
if ! diff -u "$expected" "$got"; then
	echo "FAIL: llmprof $* : $stream differs from $expected" >&2
	failed=1
fi
if [ "$status" != "$want_status" ]; then
	echo "FAIL: llmprof $* : exit status $status, expected $want_status" >&2
	failed=1
fi
if [ "$failed" = 1 ] && [ -s "$other" ]; then
	echo "--- the other stream:" >&2
	cat "$other" >&2
fi
exit $failed
