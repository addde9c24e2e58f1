#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# SIGINT or SIGTERM mid-profile: exit 0 and the whole profile is written;
# the target keeps running.
. "$TESTS_SOURCE/lib/testlib.sh"
need_root

start_bg "$FIXTURES/ground_truth" 30
target=$BG_PID
for sig in INT TERM; do
	for format in folded speedscope; do
		"$LLMPROF" attach -p "$target" -F 499 -f $format -o "$WORK/out.$format" \
			2>"$WORK/err" &
		profiler=$!
		sleep 1.5
		kill -$sig $profiler
		wait $profiler || fail "llmprof exited $? after SIG$sig: $(cat "$WORK/err")"
		if [ $format = folded ]; then
			$CHECK shares "$WORK/out.folded" --self burn_a=50 --tolerance 8 ||
				fail "shares after SIG$sig"
		else
			$CHECK speedscope "$WORK/out.speedscope" --schema "$SPEEDSCOPE_SCHEMA" ||
				fail "speedscope after SIG$sig"
		fi
		kill -0 $target || fail "the target died"
	done
done
echo PASS
