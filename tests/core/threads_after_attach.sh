#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# Threads created after attach are profiled; --per-thread names them.
. "$TESTS_SOURCE/lib/testlib.sh"
need_root

start_bg "$FIXTURES/threads" 1 3
sleep 0.3
"$LLMPROF" attach -p "$BG_PID" -d 3 -F 499 --per-thread -o "$WORK/threads.folded" \
	2>"$WORK/err" || fail "attach failed: $(cat "$WORK/err")"
$CHECK folded "$WORK/threads.folded" || fail "invalid folded output"
for i in 0 1 2; do
	$CHECK has "$WORK/threads.folded" "^threads;late-worker-$i/[0-9]+;.*late_thread_work" ||
		fail "thread late-worker-$i missing"
done
grep -q ", 4 threads" "$WORK/err" || grep -q ", 3 threads" "$WORK/err" ||
	fail "summary thread count: $(grep profiled "$WORK/err")"
echo PASS
