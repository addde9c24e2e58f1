#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# A target stopped by job control (SIGSTOP) is refused with EBUSY and left
# stopped; after SIGCONT it runs on unchanged.  A SIGSTOP that arrives
# during an injection is held and takes effect when the thread is let go.
. "$INJECT_TESTS/common.sh"

start_target "$TARGETS/target_sleep" libc 100 "$WORK/ready"
wait_file "$WORK/ready"
kill -STOP $TARGET_PID
sleep 0.1
inject $TARGET_PID "$WORK/ran"
[ "$INJECT_STATUS" = 1 ] && [ "$(field err)" = -16 ] || fail "a stopped target was not refused: $RESULT"
grep -q '^State:[[:space:]]*T' /proc/$TARGET_PID/status || fail "the target is no longer stopped"
grep -q '^TracerPid:[[:space:]]*0$' /proc/$TARGET_PID/status || fail "the target is still traced"
kill -CONT $TARGET_PID
[ -e "$WORK/ran" ] && fail "the payload ran"
wait_exit $TARGET_PID 0
diff -u <(seq -f 'tick %g' 100; echo done) "$WORK/target.out" || fail "output changed"

rm -f "$WORK/ready"
start_target "$TARGETS/target_sleep" libc 100 "$WORK/ready"
wait_file "$WORK/ready"
rm -f "$WORK/ran"
"$INJECT_TOOL" $TARGET_PID "$PAYLOAD" payload_start "$WORK/ran;started;sleep=300" >"$WORK/result" 2>"$WORK/tool.err" &
TOOL=$!
wait_started "$WORK/ran"
kill -STOP $TARGET_PID
wait $TOOL
INJECT_STATUS=$?
RESULT=$(cat "$WORK/result")
expect_injected
expect_ran "$WORK/ran" $TARGET_PID
sleep 0.05
grep -q '^State:[[:space:]]*T' /proc/$TARGET_PID/status || fail "the SIGSTOP was lost"
kill -CONT $TARGET_PID
wait_exit $TARGET_PID 0
diff -u <(seq -f 'tick %g' 100; echo done) "$WORK/target.out" || fail "output changed after the stop"
echo PASS
