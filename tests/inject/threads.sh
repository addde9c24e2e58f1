#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# A multithreaded target (spinning, sleeping and joining threads with
# invariants) is injected five times: a thread quietly blocked in a sleep is
# chosen, never a spinner; all invariants hold, and a thread the payload
# starts inherits a mask that blocks the application's signals.
. "$INJECT_TESTS/common.sh"

start_target "$TARGETS/target_threads" 2500 "$WORK/ready"
wait_file "$WORK/ready"
for i in 1 2 3 4 5; do
	sleep 0.25
	inject $TARGET_PID "$WORK/ran;thread"
	expect_injected
	tid=$(field tid)
	[ "$tid" != $TARGET_PID ] || fail "the main thread, waiting in pthread_join, was chosen"
	[ "$(field syscall)" = 230 ] || fail "thread $tid was not in clock_nanosleep: $RESULT"
	expect_released $TARGET_PID
done
wait_exit $TARGET_PID 0
[ "$(cat "$WORK/target.out")" = "threads ok" ] || fail "output changed: $(cat "$WORK/target.out")"
[ "$(grep -c "^ran pid=$TARGET_PID " "$WORK/ran")" = 5 ] || fail "payload did not run 5 times"
# SIGUSR1 (bit 10), SIGINT (bit 2) and SIGALRM (bit 14) blocked; SIGSEGV (bit 11) not.
for mask in $(sed -n 's/^thread .* sigblk=//p' "$WORK/ran"); do
	(( (0x$mask & 0x2202) == 0x2202 && (0x$mask & 0x400) == 0 )) ||
		fail "payload thread's mask $mask"
done
echo PASS
