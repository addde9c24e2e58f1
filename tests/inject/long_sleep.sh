#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# A 1 s nanosleep interrupted by an injection resumes with its remaining
# time (restart_syscall), neither cut short nor started over.
. "$INJECT_TESTS/common.sh"

start_target "$TARGETS/target_sleep" long 3 "$WORK/ready"
wait_file "$WORK/ready"
sleep 0.4
inject $TARGET_PID "$WORK/ran"
expect_injected
[ "$(field syscall)" = 230 ] && [ "$(field ret)" = -516 ] ||
	fail "not stopped in clock_nanosleep with ERESTART_RESTARTBLOCK: $RESULT"
sleep 0.9
inject $TARGET_PID "$WORK/ran" --hold-ms 200
expect_injected
wait_exit $TARGET_PID 0
diff -u <(printf 'tick 1\ntick 2\ntick 3\ndone\n') "$WORK/target.out" || fail "output changed"
echo PASS
