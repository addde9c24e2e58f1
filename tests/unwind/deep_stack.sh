#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# A stack deeper than the stack copy (40 frames of 256 bytes, a 4096-byte
# copy): --unwind auto completes it from the frame-pointer chain, all 40
# levels of the recursion and main above them; --unwind dwarf ends where the
# copy ends.
. "$TESTS_SOURCE/lib/testlib.sh"
need_root

"$LLMPROF" record --unwind auto,4096 -F 999 -o "$WORK/auto.folded" -- \
	"$FIXTURES/unwind_deep" 1.5 2>"$WORK/err" || fail "record --unwind auto,4096 failed: $(cat "$WORK/err")"
$CHECK shares "$WORK/auto.folded" --self spin=100 --total main=100 --tolerance 3 ||
	fail "auto: the stack beyond the copy is missing"
levels=$(python3 -c '
import sys
stack, _, _ = max((l.rpartition(" ") for l in open(sys.argv[1])), key=lambda t: int(t[2]))
print(stack.split(";").count("deep"))' "$WORK/auto.folded")
[ "$levels" = 40 ] || fail "auto: $levels levels of deep() in the commonest stack, expected 40"

"$LLMPROF" record --unwind dwarf,4096 -F 999 -o "$WORK/dwarf.folded" -- \
	"$FIXTURES/unwind_deep" 1 2>"$WORK/err" || fail "record --unwind dwarf,4096 failed: $(cat "$WORK/err")"
if $CHECK shares "$WORK/dwarf.folded" --total main=100 --tolerance 10 >/dev/null 2>&1; then
	fail "dwarf: a 4096-byte copy reached main through 10 KiB of stack?"
fi
echo PASS
