#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# A dlopen that runs past the deadline holds the loader lock: it is never
# cut off, but left to finish in the target, which returns to its own work
# through the landing frame; a second injection then loads normally.
. "$INJECT_TESTS/common.sh"

PAYLOAD_CTOR_RECORD="$WORK/ctor" PAYLOAD_CTOR_SLEEP_MS=1200 \
	start_target "$TARGETS/target_threads" 6000 "$WORK/ready"
wait_file "$WORK/ready"
inject $TARGET_PID "$WORK/ran" --timeout-ms 300
[ "$INJECT_STATUS" = 1 ] && [ "$(field err)" = -110 ] || fail "a slow dlopen did not time out: $RESULT"
grep -q "dlopen did not return in time; it was left to finish" "$WORK/tool.err" ||
	fail "no note that the dlopen was left to finish"
expect_released $TARGET_PID
for i in $(seq 500); do
	grep -q "^ctor done pid=$TARGET_PID " "$WORK/ctor" 2>/dev/null && break
	sleep 0.01
done
grep -q "^ctor done pid=$TARGET_PID " "$WORK/ctor" 2>/dev/null ||
	fail "the dlopen that was let go never finished"
[ -e "$WORK/ran" ] && fail "the start function ran after a timed-out dlopen"
inject $TARGET_PID "$WORK/ran"
expect_injected
expect_ran "$WORK/ran" $TARGET_PID
wait_exit $TARGET_PID 0
[ "$(cat "$WORK/target.out")" = "threads ok" ] || fail "output changed: $(cat "$WORK/target.out")"
echo PASS
