#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# A CPython process (threads contending for the GIL, the main thread in
# time.sleep) is injected ten times and finishes normally.  It lives long
# enough for ten injections on a loaded machine (each starts a process).
. "$INJECT_TESTS/common.sh"
command -v python3 >/dev/null || skip "python3 is not installed"

start_target python3 "$INJECT_TESTS/target_python.py" 12 "$WORK/ready"
wait_file "$WORK/ready"
for i in $(seq 10); do
	sleep 0.1
	inject $TARGET_PID "$WORK/ran;thread"
	expect_injected
	expect_released $TARGET_PID
done
wait_exit $TARGET_PID 0
[ "$(cat "$WORK/target.out")" = "python ok" ] || fail "output changed: $(cat "$WORK/target.out")"
[ "$(grep -c "^ran pid=$TARGET_PID " "$WORK/ran")" = 10 ] || fail "payload did not run 10 times"
echo PASS
