#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# The injector is killed with SIGKILL while it holds the target's thread
# stopped: the kernel detaches it, the thread resumes its interrupted sleep
# and the target runs on to a normal exit with unchanged output.
. "$INJECT_TESTS/common.sh"

start_target "$TARGETS/target_sleep" libc 200 "$WORK/ready"
wait_file "$WORK/ready"
"$INJECT_TOOL" --hold-ms 5000 $TARGET_PID "$PAYLOAD" payload_start "$WORK/ran" \
	>"$WORK/result" 2>"$WORK/tool.err" &
TOOL=$!
wait_traced $TARGET_PID
sleep 0.3
kill -9 $TOOL
wait $TOOL
[ $? = 137 ] || fail "the injector was not killed"
sleep 0.05
expect_released $TARGET_PID
[ -e "$WORK/ran" ] && fail "the payload ran"
wait_exit $TARGET_PID 0
diff -u <(seq -f 'tick %g' 200; echo done) "$WORK/target.out" || fail "output changed"
echo PASS
