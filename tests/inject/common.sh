# SPDX-License-Identifier: GPL-2.0
# Shared by the injection tests: environment from CTest, work directory,
# background targets, waiting helpers.
set -u
WORK=$(mktemp -d "${TMPDIR:-/tmp}/llmprof-inject.XXXXXX")
BACKGROUND_PIDS=""

cleanup() {
	for pid in $BACKGROUND_PIDS; do
		kill -9 "$pid" 2>/dev/null
	done
	wait 2>/dev/null
	rm -rf "$WORK"
}
trap cleanup EXIT

fail() {
	echo "FAIL: $*" >&2
	[ -s "$WORK/tool.err" ] && sed 's/^/  tool: /' "$WORK/tool.err" >&2
	[ -s "$WORK/target.err" ] && sed 's/^/  target: /' "$WORK/target.err" >&2
	exit 1
}

skip() {
	echo "SKIP: $*" >&2
	exit 77
}

[ "$(id -u)" = 0 ] || skip "needs root (CAP_SYS_PTRACE) to trace the test targets"

# start_target CMD...: runs CMD in the background (stdout to target.out);
# its PID is in $TARGET_PID.
start_target() {
	echo "--- $*" >>"$WORK/target.err"
	"$@" >"$WORK/target.out" 2>>"$WORK/target.err" &
	TARGET_PID=$!
	BACKGROUND_PIDS="$BACKGROUND_PIDS $TARGET_PID"
}

# wait_file FILE: until FILE exists (5 s).
wait_file() {
	local i
	for i in $(seq 500); do
		[ -e "$1" ] && return 0
		sleep 0.01
	done
	fail "$1 never appeared"
}

# wait_exit PID WANT: waits for the background PID, checks its exit status.
wait_exit() {
	local got
	wait "$1"
	got=$?
	[ "$got" = "$2" ] || fail "process $1 exited $got, expected $2"
}

# wait_started FILE: until the payload's "started" option has recorded the
# start of its call in FILE (10 s).
wait_started() {
	local i
	for i in $(seq 1000); do
		grep -q '^started ' "$1" 2>/dev/null && return 0
		sleep 0.01
	done
	fail "the injected call never started"
}

# wait_traced PID: until a thread of PID is held in a ptrace stop (10 s).
wait_traced() {
	local i
	for i in $(seq 1000); do
		grep -q '^State:[[:space:]]*t' /proc/$1/task/*/status 2>/dev/null && return 0
		sleep 0.01
	done
	fail "the injector never held process $1 stopped"
}

# inject PID ARG [OPTIONS...]: injects the payload; its result line is in
# $RESULT and the status in $INJECT_STATUS.
inject() {
	local pid=$1 arg=$2
	shift 2
	RESULT=$("$INJECT_TOOL" "$@" "$pid" "$PAYLOAD" payload_start "$arg" 2>"$WORK/tool.err")
	INJECT_STATUS=$?
	echo "inject: $RESULT" >&2
}

# field NAME: a NAME=VALUE field of $RESULT.
field() {
	echo "$RESULT" | tr ' ' '\n' | sed -n "s/^$1=//p"
}

expect_injected() {
	[ "$INJECT_STATUS" = 0 ] || fail "injection failed ($INJECT_STATUS): $RESULT"
	[ "$(field result)" = 42 ] || fail "payload_start returned $(field result), not 42"
}

# expect_ran FILE PID: the payload recorded a run inside process PID.
expect_ran() {
	grep -q "^ran pid=$2 " "$1" || fail "payload did not run in process $2: $(cat "$1" 2>/dev/null)"
}

# expect_released PID: no thread of PID is traced or stopped any more.
expect_released() {
	local status text
	for status in /proc/$1/task/*/status; do
		text=$(cat "$status" 2>/dev/null) || continue # that thread just exited
		echo "$text" | grep -q '^TracerPid:[[:space:]]*0$' || fail "$status still has a tracer"
		echo "$text" | grep -q '^State:[[:space:]]*[tT]' && fail "$status is still stopped"
	done
	return 0
}
