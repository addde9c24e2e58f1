#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# An image that is not a shared object, or lacks the start symbol, is
# refused before the target is touched (no thread is ever stopped).
. "$INJECT_TESTS/common.sh"

start_target "$TARGETS/target_sleep" libc 100 "$WORK/ready"
wait_file "$WORK/ready"
echo "not an ELF file" >"$WORK/bogus.so"
RESULT=$("$INJECT_TOOL" $TARGET_PID "$WORK/bogus.so" payload_start "$WORK/ran" 2>"$WORK/tool.err")
[ "$(field err)" = -8 ] || fail "a non-ELF image: $RESULT"
RESULT=$("$INJECT_TOOL" $TARGET_PID "$TARGETS/target_sleep" main "$WORK/ran" 2>"$WORK/tool.err")
[ "$(field err)" = -8 ] || fail "an executable: $RESULT"
RESULT=$("$INJECT_TOOL" $TARGET_PID "$PAYLOAD" no_such_function "$WORK/ran" 2>"$WORK/tool.err")
[ "$(field err)" = -2 ] || fail "a missing start symbol: $RESULT"
[ "$(field tid)" = 0 ] && [ "$(field attempts)" = 0 ] || fail "a thread was stopped: $RESULT"
[ -e "$WORK/ran" ] && fail "the payload ran"
wait_exit $TARGET_PID 0
diff -u <(seq -f 'tick %g' 100; echo done) "$WORK/target.out" || fail "output changed"
echo PASS
