#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# The ground truth built with -O2 -fomit-frame-pointer: with --unwind dwarf
# and with the default (auto) the shares, callers included, are right within
# 3 points; with --unwind fp the callers go missing.
. "$TESTS_SOURCE/lib/testlib.sh"
need_root

check() {
	$CHECK shares "$1" --self burn_a=50 --self burn_b=30 --self burn_c=20 \
		--total share_bc=50 --total main=100 --tolerance 3 || fail "shares of $1"
}

"$LLMPROF" record --unwind dwarf -F 999 -o "$WORK/dwarf.folded" -- \
	"$FIXTURES/ground_truth_nofp" 3 >/dev/null 2>"$WORK/err" ||
	fail "record --unwind dwarf failed: $(cat "$WORK/err")"
check "$WORK/dwarf.folded"

start_bg "$FIXTURES/ground_truth_nofp" 4.5
sleep 0.3
"$LLMPROF" attach -p "$BG_PID" -d 3 -F 999 -o "$WORK/auto.folded" 2>"$WORK/err" ||
	fail "attach (default unwinding) failed: $(cat "$WORK/err")"
check "$WORK/auto.folded"

# Frame pointers alone: the leaves are right, their callers are lost.
"$LLMPROF" record --unwind fp -F 999 -o "$WORK/fp.folded" -- \
	"$FIXTURES/ground_truth_nofp" 1 >/dev/null 2>"$WORK/err" ||
	fail "record --unwind fp failed: $(cat "$WORK/err")"
$CHECK shares "$WORK/fp.folded" --self burn_a=50 --tolerance 3 >/dev/null ||
	fail "--unwind fp got the leaves wrong"
if $CHECK shares "$WORK/fp.folded" --total share_bc=50 --tolerance 10 >/dev/null 2>&1; then
	fail "--unwind fp found share_bc: the fixture has frame pointers after all?"
fi
echo PASS
