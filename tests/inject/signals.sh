#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# A target with its own handlers (SIGUSR1, SIGINT, queued SIGRTMIN, a 5 ms
# POSIX timer, SIGTRAP, SIGSEGV) receives signals before, during and after
# two injections: one that holds the thread stopped 300 ms before its calls
# and one whose start function runs 400 ms.  Asynchronous signals wait,
# blocked, in the kernel's queue; the SIGTRAP sent with kill is taken by
# the thread, held and re-delivered on detach.  Every handler runs the
# right number of times, queued values stay in order, no timer expiry is
# lost, and the target's SIGSEGV handler still works afterwards (our
# return trap never reached it).
. "$INJECT_TESTS/common.sh"

start_target "$TARGETS/target_signals" run "$WORK/ready"
wait_file "$WORK/ready"
for i in 1 2 3; do
	kill -USR1 $TARGET_PID
	sleep 0.03
done
kill -INT $TARGET_PID
sleep 0.03
kill -INT $TARGET_PID
sleep 0.03

# injection ARG TOOL_OPTIONS... in the background, then signals during it.
injection_with_signals() {
	local arg=$1 first_rt=$2
	shift 2
	"$INJECT_TOOL" "$@" $TARGET_PID "$PAYLOAD" payload_start "$arg" >"$WORK/result" 2>"$WORK/tool.err" &
	TOOL=$!
	if [ "${1:-}" = --hold-ms ]; then
		wait_traced $TARGET_PID
	else
		wait_started "$WORK/ran"
	fi
	kill -USR1 $TARGET_PID
	kill -INT $TARGET_PID
	"$TARGETS/target_signals" send $TARGET_PID $first_rt 10 || fail "sigqueue"
	kill -TRAP $TARGET_PID
	wait $TOOL
	INJECT_STATUS=$?
	RESULT=$(cat "$WORK/result")
	echo "inject: $RESULT" >&2
	expect_injected
}

injection_with_signals "$WORK/ran" 1 --hold-ms 300
[ "$(field signals)" = 1 ] || fail "the SIGTRAP was not held: $RESULT"
rm -f "$WORK/ran"
injection_with_signals "$WORK/ran;started;sleep=400;pending" 11
[ "$(field signals)" = 1 ] || fail "the SIGTRAP was not held: $RESULT"
grep -q "^ran pid=$TARGET_PID " "$WORK/ran" || fail "payload did not run"
# The signals sent during the second call were pending, not lost or early.
pending=$(sed -n 's/^pending .* signals //p' "$WORK/ran")
(( (0x$pending & 0x202) == 0x202 )) || fail "SIGUSR1 and SIGINT were not pending during the call: $pending"

sleep 0.1
kill -USR1 $TARGET_PID
sleep 0.03
kill -USR1 $TARGET_PID
sleep 0.05
kill -USR2 $TARGET_PID
wait_exit $TARGET_PID 0
diff -u <(printf 'usr1=7 int=4 rt=20 trap=2\nsegv=1\n') "$WORK/target.out" || fail "handlers ran a different number of times"
echo PASS
