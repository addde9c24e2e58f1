#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# A target whose seccomp filter would kill it on (or refuse) a system call
# the injection needs is refused with the reason before any call is made,
# and runs on unharmed; a filter on an unrelated call does not get in the way.
. "$INJECT_TESTS/common.sh"

refused() { # ACTION SYSCALL WORDS
	rm -f "$WORK/ready" "$WORK/ran"
	start_target "$TARGETS/target_seccomp" "$1" "$2" 100 "$WORK/ready"
	wait_file "$WORK/ready"
	inject $TARGET_PID "$WORK/ran"
	[ "$INJECT_STATUS" = 1 ] && [ "$(field err)" = -95 ] ||
		fail "a filter that $3 $2 was not refused: $RESULT"
	grep -q "seccomp filter of process $TARGET_PID $3 on $2" "$WORK/tool.err" ||
		fail "no reason naming the filter and $2: $(cat "$WORK/tool.err")"
	[ -e "$WORK/ran" ] && fail "the payload ran"
	expect_released $TARGET_PID
	wait_exit $TARGET_PID 0
	diff -u <(seq -f 'tick %g' 0 100; echo done) "$WORK/target.out" || fail "output changed"
}

refused kill memfd_create "kills the process"
refused kill mmap "kills the process"
refused errno memfd_create "refuses"

rm -f "$WORK/ready" "$WORK/ran"
start_target "$TARGETS/target_seccomp" kill reboot 100 "$WORK/ready"
wait_file "$WORK/ready"
inject $TARGET_PID "$WORK/ran"
expect_injected
expect_ran "$WORK/ran" $TARGET_PID
wait_exit $TARGET_PID 0
diff -u <(seq -f 'tick %g' 0 100; echo done) "$WORK/target.out" || fail "output changed"
echo PASS
