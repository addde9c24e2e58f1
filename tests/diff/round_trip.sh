#!/bin/sh
# SPDX-License-Identifier: GPL-2.0
# Conversions that must lose nothing: folded -> speedscope -> folded gives
# the sorted input back, speedscope -> speedscope is stable, and -o writes the
# same bytes as standard output, or nothing at all.
# usage: round_trip.sh LLMPROF INPUTS
set -u
llmprof=$1 inputs=$2
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
failed=0
fail() {
	echo "FAIL: $*" >&2
	failed=1
}

for f in base.folded new.folded perf.folded bcc.folded gpu.folded pyspy.raw lf.folded; do
	"$llmprof" convert -f speedscope "$inputs/$f" >"$work/s.json" || fail "$f to speedscope"
	"$llmprof" convert -f folded "$work/s.json" >"$work/back.folded" || fail "$f back"
	LC_ALL=C sort "$inputs/$f" >"$work/sorted.folded"
	diff -u "$work/sorted.folded" "$work/back.folded" || fail "$f: folded -> speedscope -> folded"
done

for f in recorded.speedscope.json evented.speedscope.json pyspy.speedscope.json \
	gpu_streams.speedscope.json; do
	"$llmprof" convert -f speedscope "$inputs/$f" >"$work/once.json" || fail "$f once"
	"$llmprof" convert -f speedscope "$work/once.json" >"$work/twice.json" || fail "$f twice"
	cmp "$work/once.json" "$work/twice.json" || fail "$f: speedscope -> speedscope is not stable"
	"$llmprof" convert -f folded "$inputs/$f" >"$work/a.folded"
	"$llmprof" convert -f folded "$work/once.json" >"$work/b.folded"
	cmp "$work/a.folded" "$work/b.folded" || fail "$f: stacks changed through speedscope"
done

"$llmprof" convert -f speedscope -o "$work/out.json" "$inputs/perf.folded" || fail "-o"
"$llmprof" convert -f speedscope "$inputs/perf.folded" | cmp - "$work/out.json" || fail "-o bytes"
"$llmprof" convert -f folded -o "$work/missing/out.folded" "$inputs/perf.folded" 2>/dev/null
[ $? = 1 ] || fail "-o into a missing directory should exit 1"
"$llmprof" convert --strict -f folded -o "$work/bad.folded" "$inputs/malformed.folded" 2>/dev/null
[ $? = 2 ] || fail "malformed input should exit 2 with --strict"
ls "$work" | grep -q 'bad.folded' && fail "a failed conversion left $(ls "$work" | grep bad)"
"$llmprof" diff -f markdown -o "$work/diff.md" "$inputs/base.folded" "$inputs/new.folded" 2>/dev/null
[ $? = 1 ] || fail "diff -o should still exit 1 on a regression"
"$llmprof" diff -f markdown "$inputs/base.folded" "$inputs/new.folded" 2>/dev/null |
	cmp - "$work/diff.md" || fail "diff -o bytes"
exit $failed
