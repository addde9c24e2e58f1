#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# The injector is killed with SIGKILL while it holds the target's thread:
# stopped before any call (the kernel detaches it and its interrupted sleep
# resumes), and inside the start function of the payload (the call runs to
# its end and returns into the landing frame, which puts back registers,
# FPU state, signal mask and errno by itself).  Either way the target runs
# on to a normal exit with unchanged output and computation.
. "$INJECT_TESTS/common.sh"

start_target "$TARGETS/target_sleep" libc 200 "$WORK/ready"
wait_file "$WORK/ready"
"$INJECT_TOOL" --hold-ms 5000 $TARGET_PID "$PAYLOAD" payload_start "$WORK/ran" \
	>"$WORK/result" 2>"$WORK/tool.err" &
TOOL=$!
wait_traced $TARGET_PID
sleep 0.3
kill -9 $TOOL
wait $TOOL
[ $? = 137 ] || fail "the injector was not killed"
sleep 0.05
expect_released $TARGET_PID
[ -e "$WORK/ran" ] && fail "the payload ran"
wait_exit $TARGET_PID 0
diff -u <(seq -f 'tick %g' 200; echo done) "$WORK/target.out" || fail "output changed"

# killed_in_call TARGET MODE LENGTH: kills the injector inside the start
# function.
killed_in_call() {
	rm -f "$WORK/ready" "$WORK/ran"
	start_target "$TARGETS/$1" $2 $3 "$WORK/ready"
	wait_file "$WORK/ready"
	sleep 0.1
	"$INJECT_TOOL" $TARGET_PID "$PAYLOAD" payload_start "$WORK/ran;started;sleep=200" \
		>"$WORK/result" 2>"$WORK/tool.err" &
	TOOL=$!
	wait_started "$WORK/ran"
	kill -9 $TOOL
	wait $TOOL
	[ $? = 137 ] || fail "$1: the injector was not killed"
	sleep 0.4
	expect_released $TARGET_PID
	expect_ran "$WORK/ran" $TARGET_PID
}

# Computing, with live SSE and x87 values, a rounding mode and errno.
killed_in_call target_compute app 1500
wait_exit $TARGET_PID 0
[ "$(cat "$WORK/target.out")" = "compute ok" ] || fail "compute: output changed: $(cat "$WORK/target.out")"
# Asleep: the interrupted sleep runs again, neither EINTR nor cut short.
killed_in_call target_sleep libc 300
wait_exit $TARGET_PID 0
diff -u <(seq -f 'tick %g' 300; echo done) "$WORK/target.out" || fail "sleep: output changed"
echo PASS
