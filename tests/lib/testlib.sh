# SPDX-License-Identifier: GPL-2.0
# Shared by the shell tests: environment from CTest, failure, cleanup.
# CTest sets LLMPROF (the binary), FIXTURES (built fixtures), TESTS_SOURCE.
set -u
CHECK="python3 ${TESTS_SOURCE}/lib/check_profile.py"
WORK=$(mktemp -d "${TMPDIR:-/tmp}/llmprof-test.XXXXXX")
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
	exit 1
}

# Skips (CTest SKIP_RETURN_CODE 77) only where the machine truly lacks it.
skip() {
	echo "SKIP: $*" >&2
	exit 77
}

need_root() {
	[ "$(id -u)" = 0 ] || skip "needs root for BPF"
}

# start_bg CMD...: runs CMD in the background; its PID is in $BG_PID.
start_bg() {
	"$@" &
	BG_PID=$!
	BACKGROUND_PIDS="$BACKGROUND_PIDS $BG_PID"
}

# expect_status WANT CMD...: runs CMD, checks its exit status.
expect_status() {
	local want=$1 got
	shift
	"$@"
	got=$?
	[ "$got" = "$want" ] || fail "'$*' exited $got, expected $want"
}
