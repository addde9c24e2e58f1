#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# A 10,000-deep recursion: its stacks, cut at the capture's depth, begin
# with a [truncated] root frame under the process instead of passing for
# whole ones, and the summary says how many were cut.
. "$TESTS_SOURCE/lib/testlib.sh"
need_root

"$LLMPROF" record -F 499 -o "$WORK/deep.folded" -- "$FIXTURES/recursion" 10000 \
	2>"$WORK/err" || fail "record failed: $(cat "$WORK/err")"
$CHECK shares "$WORK/deep.folded" --total '[truncated]=90' --tolerance 10 ||
	fail "the cut stacks are not marked"
$CHECK has "$WORK/deep.folded" '^recursion;\[truncated\];recurse;' || fail "[truncated] is not the root"
grep -q 'cut at their root (marked \[truncated\])' "$WORK/err" ||
	fail "the summary does not count the cut stacks: $(cat "$WORK/err")"
# A shallow program has none.
"$LLMPROF" record -F 499 -o "$WORK/flat.folded" -- "$FIXTURES/ground_truth" 0.5 \
	>/dev/null 2>"$WORK/flat.err" || fail "record of ground_truth failed"
grep -q 'truncated' "$WORK/flat.folded" "$WORK/flat.err" && fail "a shallow stack marked truncated"
echo PASS
