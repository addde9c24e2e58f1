#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# The attach policy: a target without CUDA is reported as such and nothing
# is injected (it is never even traced); one whose maps show libcudart and
# libcupti is reported with its libcupti path and is injected.
. "$INJECT_TESTS/common.sh"

start_target "$TARGETS/target_sleep" libc 100 "$WORK/ready"
wait_file "$WORK/ready"
out=$("$INJECT_TOOL" --has-cuda $TARGET_PID) || fail "--has-cuda failed"
[ "$out" = "cuda=0 cupti=-" ] || fail "plain target reported as '$out'"
inject $TARGET_PID "$WORK/ran" --require-cuda
[ "$INJECT_STATUS" = 3 ] || fail "--require-cuda on a target without CUDA exited $INJECT_STATUS"
grep -q "nothing injected" "$WORK/tool.err" || fail "no note that nothing was injected"
[ -e "$WORK/ran" ] && fail "the payload ran in a target without CUDA"
expect_released $TARGET_PID
wait_exit $TARGET_PID 0
diff -u <(seq -f 'tick %g' 100; echo done) "$WORK/target.out" || fail "output changed"

rm -f "$WORK/ready"
LD_PRELOAD="$FAKE_CUDA/libcudart.so.12 $FAKE_CUDA/libcupti.so.12" \
	start_target "$TARGETS/target_sleep" libc 100 "$WORK/ready"
wait_file "$WORK/ready"
out=$("$INJECT_TOOL" --has-cuda $TARGET_PID) || fail "--has-cuda failed"
[ "$out" = "cuda=1 cupti=$FAKE_CUDA/libcupti.so.12" ] || fail "CUDA target reported as '$out'"
inject $TARGET_PID "$WORK/ran" --require-cuda
expect_injected
expect_ran "$WORK/ran" $TARGET_PID
wait_exit $TARGET_PID 0
diff -u <(seq -f 'tick %g' 100; echo done) "$WORK/target.out" || fail "output changed"
echo PASS
