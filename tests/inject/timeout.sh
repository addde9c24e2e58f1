#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# A start function that does not return in time is cut off: the injector
# gives up after its timeout (no hang), puts the thread back and lets it
# go, and the target's interrupted sleep still lasts its full time.
. "$INJECT_TESTS/common.sh"

start_target "$TARGETS/target_sleep" libc 250 "$WORK/ready"
wait_file "$WORK/ready"
sleep 0.2
start=$(date +%s%N)
inject $TARGET_PID "$WORK/ran;sleep=10000" --timeout-ms 500
took=$(( ($(date +%s%N) - start) / 1000000 ))
[ "$INJECT_STATUS" = 1 ] || fail "a stuck start function did not fail the injection"
[ "$(field err)" = -110 ] || fail "not ETIMEDOUT: $RESULT"
[ $took -lt 2500 ] || fail "the injector took $took ms to give up"
expect_released $TARGET_PID
[ -e "$WORK/ran" ] && fail "the payload finished"
wait_exit $TARGET_PID 0
diff -u <(seq -f 'tick %g' 250; echo done) "$WORK/target.out" || fail "output changed"
echo PASS
