#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# A stack deeper than the stack copy (40 frames of 256 bytes, a 4096-byte
# copy): --unwind dwarf completes it from the frame-pointer chain, all 40
# levels of the recursion and main above them; the default (auto: in BPF,
# no copy) has them all too; libdw on the copy alone ends where the copy
# ends (--unwind compare counts those stacks as deeper in BPF).
. "$TESTS_SOURCE/lib/testlib.sh"
need_root

"$LLMPROF" record --unwind dwarf,4096 -F 999 -o "$WORK/auto.folded" -- \
	"$FIXTURES/unwind_deep" 1.5 2>"$WORK/err" || fail "record --unwind dwarf,4096 failed: $(cat "$WORK/err")"
$CHECK shares "$WORK/auto.folded" --self spin=100 --total main=100 --tolerance 3 ||
	fail "auto: the stack beyond the copy is missing"
levels=$(python3 -c '
import sys
stack, _, _ = max((l.rpartition(" ") for l in open(sys.argv[1])), key=lambda t: int(t[2]))
print(stack.split(";").count("deep"))' "$WORK/auto.folded")
[ "$levels" = 40 ] || fail "auto: $levels levels of deep() in the commonest stack, expected 40"

"$LLMPROF" record -F 999 -o "$WORK/default.folded" -- "$FIXTURES/unwind_deep" 1 \
	2>"$WORK/err" || fail "record failed: $(cat "$WORK/err")"
$CHECK shares "$WORK/default.folded" --self spin=100 --total main=100 --tolerance 3 ||
	fail "default: the stack is not whole"

"$LLMPROF" record -v --unwind compare,4096 -F 999 -o /dev/null -- \
	"$FIXTURES/unwind_deep" 1 2>"$WORK/err" || fail "record --unwind compare,4096 failed: $(cat "$WORK/err")"
deeper=$(sed -n 's/.*unwind compare: [0-9]* samples:.* \([0-9.]*\)% deeper in BPF.*/\1/p' "$WORK/err")
[ -n "$deeper" ] || fail "no comparison in -v: $(cat "$WORK/err")"
echo "the copy alone: $deeper % of the stacks end before BPF's"
awk -v d="$deeper" 'BEGIN { exit !(d >= 90) }' ||
	fail "compare: only $deeper % of the stacks went deeper than a 4096-byte copy"
echo PASS
