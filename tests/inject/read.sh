#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# A target blocked reading a pipe is injected three times; the writer sends
# the rest of the data afterwards.  The target reads exactly the bytes sent
# (same count and hash as without injection), sees no EINTR and exits 0.
# MODE=epoll (epoll.sh) waits in epoll_wait, which reports EINTR for a bare
# ptrace interrupt unless the injector restarts it; MODE=ppoll (ppoll.sh)
# in ppoll with a temporary signal mask, which must not outlive the call.
. "$INJECT_TESTS/common.sh"
MODE=${MODE:-read}

head -c 300000 /dev/urandom >"$WORK/data"
cat "$WORK/data" | "$TARGETS/target_read" $MODE "$WORK/ready0" >"$WORK/expected" ||
	fail "target_read failed without injection"
mkfifo "$WORK/fifo"
exec 3<>"$WORK/fifo"
"$TARGETS/target_read" $MODE "$WORK/ready" <"$WORK/fifo" >"$WORK/target.out" 2>"$WORK/target.err" 3>&- &
TARGET_PID=$!
BACKGROUND_PIDS=$TARGET_PID
wait_file "$WORK/ready"
head -c 1000 "$WORK/data" >&3
case $MODE in
read) want_nr=0 want_ret=-512 ;;     # read, ERESTARTSYS
epoll) want_nr=232 want_ret=-4 ;;    # epoll_wait, EINTR
ppoll) want_nr=271 want_ret=-514 ;;  # ppoll, ERESTARTNOHAND
esac
in_wait=0
for i in 1 2 3; do
	sleep 0.2
	inject $TARGET_PID "$WORK/ran" 3>&-
	expect_injected
	if [ "$(field syscall)" = $want_nr ] && [ "$(field ret)" = $want_ret ]; then
		in_wait=$((in_wait + 1))
	fi
done
[ $in_wait = 3 ] || fail "only $in_wait of 3 stops were in the blocked call"
tail -c +1001 "$WORK/data" >&3
exec 3>&-
wait_exit $TARGET_PID 0
diff -u "$WORK/expected" "$WORK/target.out" || fail "the target read something else"
expect_ran "$WORK/ran" $TARGET_PID
echo PASS
