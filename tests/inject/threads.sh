#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# A multithreaded target (spinning, sleeping and joining threads with
# invariants) is injected five times: a thread quietly blocked in a sleep is
# preferred and a spinner never chosen; all invariants hold, and a thread
# the payload starts inherits a mask that blocks the application's signals.
# The target lives long enough for five injections on a loaded machine.
. "$INJECT_TESTS/common.sh"

start_target "$TARGETS/target_threads" 8000 "$WORK/ready"
wait_file "$WORK/ready"
spinners=" $(sed -n 's/^spinner //p' "$WORK/ready" | tr '\n' ' ')"
in_sleeper=0
for i in 1 2 3 4 5; do
	sleep 0.2
	inject $TARGET_PID "$WORK/ran;thread"
	expect_injected
	tid=$(field tid)
	case "$spinners" in *" $tid "*) fail "spinning thread $tid was chosen" ;; esac
	grep -q "^sleeper $tid$" "$WORK/ready" && [ "$(field syscall)" = 230 ] && in_sleeper=$((in_sleeper + 1))
	expect_released $TARGET_PID
done
# The main thread, blocked in pthread_join (futex), is acceptable too, but
# a thread in a quiet wait ranks first.
[ $in_sleeper -ge 3 ] || fail "only $in_sleeper of 5 injections chose a sleeping thread"
wait_exit $TARGET_PID 0
[ "$(cat "$WORK/target.out")" = "threads ok" ] || fail "output changed: $(cat "$WORK/target.out")"
[ "$(grep -c "^ran pid=$TARGET_PID " "$WORK/ran")" = 5 ] || fail "payload did not run 5 times"
# SIGINT (0x2), SIGUSR1 (0x200) and SIGALRM (0x2000) blocked, SIGSEGV (0x400) not.
for mask in $(sed -n 's/^thread .* sigblk=//p' "$WORK/ran"); do
	(( (0x$mask & 0x2202) == 0x2202 && (0x$mask & 0x400) == 0 )) ||
		fail "payload thread's mask $mask"
done
echo PASS
