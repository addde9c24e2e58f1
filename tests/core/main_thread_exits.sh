#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# A process whose main thread has called pthread_exit() (its /proc/PID/maps
# reads as empty) is still symbolized, through a live thread's maps: the
# worker's function is named, not [unknown+0x...].
. "$TESTS_SOURCE/lib/testlib.sh"
need_root

start_bg "$FIXTURES/main_exits" 4
sleep 0.5
[ -s /proc/$BG_PID/maps ] && skip "this kernel still shows the maps of an exited main thread"
"$LLMPROF" attach -p "$BG_PID" -d 1.5 -F 499 -o "$WORK/out.folded" 2>"$WORK/err" ||
	fail "attach failed: $(cat "$WORK/err")"
$CHECK folded "$WORK/out.folded" >/dev/null || fail "invalid folded output"
$CHECK has "$WORK/out.folded" ';worker_spin( |;)' ||
	fail "worker_spin not symbolized: $(sort -t' ' -k2 -nr "$WORK/out.folded" | head -3)"
echo PASS
