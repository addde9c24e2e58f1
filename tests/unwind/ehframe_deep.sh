#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# A 10,000-frame recursion without frame pointers under --unwind ehframe:
# the BPF unwinder walks 512 frames (511 levels of recurse() above spin())
# and marks the stack [truncated]; a 300-level recursion is whole, main
# and _start included.
. "$TESTS_SOURCE/lib/testlib.sh"
need_root

levels() {
	python3 -c '
import sys
stack, _, _ = max((l.rpartition(" ") for l in open(sys.argv[1])), key=lambda t: int(t[2]))
frames = stack.split(";")
print(frames.count("recurse"), "main" in frames, "[truncated]" in frames)' "$1"
}

"$LLMPROF" record --unwind ehframe -F 999 -o "$WORK/deep.folded" -- \
	"$FIXTURES/unwind_recursion" 2 10000 2>"$WORK/err" ||
	fail "record --unwind ehframe failed: $(cat "$WORK/err")"
read -r n main cut <<<"$(levels "$WORK/deep.folded")"
echo "10000 levels: $n levels of recurse() in the commonest stack, main $main, truncated $cut"
[ "$n" -ge 510 ] || fail "only $n levels of 10000"
[ "$cut" = True ] || fail "a cut stack is not marked [truncated]"
grep -q "deeper than 512 frames" "$WORK/err" ||
	fail "the summary does not say where stacks are cut: $(grep -i truncated "$WORK/err")"

"$LLMPROF" record --unwind ehframe -F 999 -o "$WORK/300.folded" -- \
	"$FIXTURES/unwind_recursion" 1.5 300 2>"$WORK/err" ||
	fail "record --unwind ehframe failed: $(cat "$WORK/err")"
read -r n main cut <<<"$(levels "$WORK/300.folded")"
[ "$n" = 300 ] && [ "$main" = True ] && [ "$cut" = False ] ||
	fail "300 levels: $n levels, main $main, truncated $cut"
$CHECK shares "$WORK/300.folded" --total main=100 --tolerance 3 || fail "300 levels: main missing"
echo PASS
