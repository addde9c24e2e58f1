#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# A target that is computing (not in a system call) when seized, with live
# SSE and x87 values and a non-default rounding mode: after five injections
# every round still gives the same bits.  In libc mode it is often inside
# malloc or memset, where the injector must wait until it is elsewhere.
. "$INJECT_TESTS/common.sh"

for mode in app libc; do
	rm -f "$WORK/ready" "$WORK/ran"
	start_target "$TARGETS/target_compute" $mode 4000 "$WORK/ready"
	wait_file "$WORK/ready"
	computing=0
	for i in 1 2 3 4 5; do
		sleep 0.2
		inject $TARGET_PID "$WORK/ran"
		expect_injected
		[ "$(field syscall)" = -1 ] && computing=$((computing + 1))
	done
	[ $computing -ge 3 ] || fail "$mode: only $computing of 5 stops caught it computing"
	wait_exit $TARGET_PID 0
	[ "$(cat "$WORK/target.out")" = "compute ok" ] || fail "$mode: output changed"
	[ "$(grep -c "^ran pid=$TARGET_PID " "$WORK/ran")" = 5 ] || fail "$mode: payload did not run 5 times"
done
echo PASS
