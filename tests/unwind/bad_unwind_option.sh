#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# --unwind with a bad mode or size: a one-line error naming the option,
# exit status 2, nothing run.
. "$TESTS_SOURCE/lib/testlib.sh"

for value in bogus fp,4096 ehframe,4096 auto,4096 dwarf,abc dwarf,100 dwarf,100000 compare, '' dwarf16384; do
	"$LLMPROF" record --unwind "$value" -o "$WORK/out" -- true >/dev/null 2>"$WORK/err"
	status=$?
	[ $status = 2 ] || fail "--unwind '$value' exited $status, expected 2"
	[ "$(wc -l <"$WORK/err")" = 1 ] || fail "--unwind '$value': not one line: $(cat "$WORK/err")"
	grep -q -- '--unwind' "$WORK/err" || fail "--unwind '$value': error does not name the option"
	[ -e "$WORK/out" ] && fail "--unwind '$value' left a file"
done
for value in fp dwarf auto ehframe compare dwarf,8192 compare,65528; do
	"$LLMPROF" record --unwind "$value" --help >/dev/null 2>&1 ||
		fail "--unwind '$value' rejected"
done
echo PASS
