#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# A target that dies during the injection (its start function exits, or it
# is killed while the call runs) makes the injector fail with ESRCH at
# once, without hanging.
. "$INJECT_TESTS/common.sh"

start_target "$TARGETS/target_sleep" libc 500 "$WORK/ready"
wait_file "$WORK/ready"
inject $TARGET_PID "$WORK/ran;exit" --timeout-ms 3000
[ "$INJECT_STATUS" = 1 ] && [ "$(field err)" = -3 ] || fail "exit during the call: $RESULT"
wait_exit $TARGET_PID 7

rm -f "$WORK/ready" "$WORK/ran"
start_target "$TARGETS/target_sleep" libc 500 "$WORK/ready"
wait_file "$WORK/ready"
"$INJECT_TOOL" --timeout-ms 5000 $TARGET_PID "$PAYLOAD" payload_start "$WORK/ran;started;sleep=3000" \
	>"$WORK/result" 2>"$WORK/tool.err" &
TOOL=$!
wait_started "$WORK/ran"
start=$(date +%s%N)
kill -9 $TARGET_PID
wait $TOOL
status=$?
took=$(( ($(date +%s%N) - start) / 1000000 ))
RESULT=$(cat "$WORK/result")
[ $status = 1 ] && [ "$(field err)" = -3 ] || fail "killed during the call: $RESULT"
[ $took -lt 1000 ] || fail "the injector took $took ms to notice"
echo PASS
