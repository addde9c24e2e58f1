#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# A target blocked in nanosleep (libc clock_nanosleep, the raw nanosleep
# system call, TIMER_ABSTIME) is injected eight times; every interrupted
# sleep restarts: none returns EINTR or ends early, the output is what it
# would be without injection, and the target exits 0.
. "$INJECT_TESTS/common.sh"

for mode in libc raw abs; do
	rm -f "$WORK/ready" "$WORK/ran"
	start_target "$TARGETS/target_sleep" $mode 300 "$WORK/ready"
	wait_file "$WORK/ready"
	case $mode in
	libc) want_nr=230 want_ret=-516 ;; # clock_nanosleep, ERESTART_RESTARTBLOCK
	raw) want_nr=35 want_ret=-516 ;;   # nanosleep, ERESTART_RESTARTBLOCK
	abs) want_nr=230 want_ret=-514 ;;  # clock_nanosleep, ERESTARTNOHAND
	esac
	in_sleep=0
	for i in $(seq 8); do
		# Irregular gaps, so the stops do not lock onto the 10 ms period.
		sleep 0.0$((RANDOM % 80 + 10))
		inject $TARGET_PID "$WORK/ran"
		expect_injected
		[ "$(field tid)" = $TARGET_PID ] || fail "$mode: injected thread $(field tid)"
		if [ "$(field syscall)" = $want_nr ] && [ "$(field ret)" = $want_ret ]; then
			in_sleep=$((in_sleep + 1))
		fi
		expect_released $TARGET_PID
	done
	# The thread runs for microseconds in each 10 ms, so most stops catch
	# it in the sleep (others, just after the wakeup, see its return value).
	[ $in_sleep -ge 3 ] || fail "$mode: only $in_sleep of 8 stops were inside the sleep"
	wait_exit $TARGET_PID 0
	diff -u <(seq -f 'tick %g' 300; echo done) "$WORK/target.out" || fail "$mode: output changed"
	[ "$(grep -c "^ran pid=$TARGET_PID " "$WORK/ran")" = 8 ] || fail "$mode: payload did not run 8 times"
done
echo PASS
