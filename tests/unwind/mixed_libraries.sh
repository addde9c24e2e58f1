#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# A call chain main -> nofp_middle (a library without frame pointers) ->
# fp_leaf (a library with frame pointers and no unwind tables): the CFI
# unwinds nofp_middle, the frame pointer unwinds fp_leaf, and the stack
# comes out whole.  Frame pointers alone lose main, nofp_middle's caller.
. "$TESTS_SOURCE/lib/testlib.sh"
need_root

for mode in auto dwarf; do
	"$LLMPROF" record --unwind $mode -F 999 -o "$WORK/$mode.folded" -- \
		"$FIXTURES/unwind_mixed" 1.5 >/dev/null 2>"$WORK/err" ||
		fail "record --unwind $mode failed: $(cat "$WORK/err")"
	$CHECK shares "$WORK/$mode.folded" --self fp_leaf=100 --total nofp_middle=100 \
		--total main=100 --tolerance 3 || fail "--unwind $mode: stack not whole"
	$CHECK has "$WORK/$mode.folded" ';_start;.*;main;nofp_middle;fp_leaf ' ||
		fail "--unwind $mode: no _start..main;nofp_middle;fp_leaf stack"
done

"$LLMPROF" record --unwind fp -F 999 -o "$WORK/fp.folded" -- "$FIXTURES/unwind_mixed" 1 \
	>/dev/null 2>"$WORK/err" || fail "record --unwind fp failed: $(cat "$WORK/err")"
if $CHECK shares "$WORK/fp.folded" --total main=100 --tolerance 10 >/dev/null 2>&1; then
	fail "--unwind fp found main: nofp_middle keeps a frame pointer after all?"
fi
echo PASS
