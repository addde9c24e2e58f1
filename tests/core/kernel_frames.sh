#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# A syscall-heavy function shows kernel frames under it; --no-kernel drops them.
. "$TESTS_SOURCE/lib/testlib.sh"
need_root

"$LLMPROF" record -F 499 -o "$WORK/k.folded" -- "$FIXTURES/syscalls" 2 >/dev/null 2>"$WORK/err" ||
	fail "record failed: $(cat "$WORK/err")"
$CHECK has "$WORK/k.folded" ';main;syscall_heavy;[^;]*_\[k\];.*_\[k\] ' ||
	fail "no kernel frames under syscall_heavy"
$CHECK has "$WORK/k.folded" 'syscall_heavy;.*ksys_write_\[k\]' || fail "no ksys_write frame"
"$LLMPROF" record -F 499 --no-kernel -o "$WORK/u.folded" -- "$FIXTURES/syscalls" 1 \
	>/dev/null 2>"$WORK/err" || fail "record --no-kernel failed"
if grep -q '_\[k\]' "$WORK/u.folded"; then fail "--no-kernel output has kernel frames"; fi
$CHECK has "$WORK/u.folded" 'syscall_heavy' || fail "--no-kernel lost the user frames"
echo PASS
