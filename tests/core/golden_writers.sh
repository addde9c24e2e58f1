#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# A fixed profile written as folded, speedscope and a Chrome trace, byte for
# byte; its Python frames read back from speedscope and pprof.
. "$TESTS_SOURCE/lib/testlib.sh"
golden="$TESTS_SOURCE/core/golden"
for variant in cpu gpu names aggregate python python-lines; do
	for format in folded speedscope; do
		[ $variant = python-lines ] && [ $format = folded ] && continue
		"$GOLDEN_WRITER" $format $variant >"$WORK/out" || fail "writer failed"
		if [ "${UPDATE_GOLDEN:-}" = 1 ]; then
			cp "$WORK/out" "$golden/$variant.$format"
		fi
		diff -u "$golden/$variant.$format" "$WORK/out" || fail "$variant.$format differs"
	done
done
for variant in cpu gpu wall; do
	"$GOLDEN_WRITER" chrome $variant >"$WORK/out" || fail "chrome writer failed"
	if [ "${UPDATE_GOLDEN:-}" = 1 ]; then
		cp "$WORK/out" "$golden/$variant.trace.json"
	fi
	diff -u "$golden/$variant.trace.json" "$WORK/out" || fail "$variant.trace.json differs"
	python3 "$TESTS_SOURCE/lib/check_chrome_trace.py" "$WORK/out" >/dev/null ||
		fail "$variant.trace.json invalid"
done
$CHECK folded "$golden/cpu.folded" >/dev/null || fail "golden folded invalid"
if [ -f "$SPEEDSCOPE_SCHEMA" ]; then
	for variant in gpu names aggregate python python-lines; do
		$CHECK speedscope "$golden/$variant.speedscope" --schema "$SPEEDSCOPE_SCHEMA" ||
			fail "$variant.speedscope: schema"
	done
fi
# Python frames read back from speedscope (by function, and by line) and
# pprof are the frames written; folded -> speedscope -> folded is the same.
sed 's/ [0-9]*$//' "$golden/python.folded" >"$WORK/python.stacks"
for input in "$golden/python.speedscope" "$golden/python-lines.speedscope"; do
	"$LLMPROF" convert -f folded "$input" | sed 's/ [0-9]*$//' >"$WORK/back" ||
		fail "convert $input"
	diff -u "$WORK/python.stacks" "$WORK/back" || fail "$input read back"
done
"$GOLDEN_WRITER" pprof python >"$WORK/python.pb.gz" || fail "pprof writer failed"
"$LLMPROF" convert -f folded "$WORK/python.pb.gz" >"$WORK/back" || fail "convert pprof"
diff -u "$golden/python.folded" "$WORK/back" || fail "pprof read back"
"$LLMPROF" convert -f speedscope "$golden/python.folded" >"$WORK/python.json" &&
	"$LLMPROF" convert -f folded "$WORK/python.json" >"$WORK/back" ||
	fail "folded -> speedscope -> folded"
diff -u "$golden/python.folded" "$WORK/back" || fail "folded -> speedscope -> folded"
# diff across formats matches the Python frames: nothing changes.
for pair in "python.folded python.speedscope" "python.speedscope python-lines.speedscope"; do
	set -- $pair
	"$LLMPROF" diff "$golden/$1" "$golden/$2" >"$WORK/diff" || fail "diff $pair: $(cat "$WORK/diff")"
	[ "$(grep -c '(no changes)' "$WORK/diff")" = 3 ] || fail "diff $pair: $(cat "$WORK/diff")"
done
"$LLMPROF" diff "$golden/python.folded" "$WORK/python.pb.gz" >"$WORK/diff" &&
	[ "$(grep -c '(no changes)' "$WORK/diff")" = 3 ] || fail "diff folded pprof: $(cat "$WORK/diff")"
grep -q '"name":"Model.forward","file":"mm.py"' "$WORK/python.json" ||
	fail "Python frames from folded input: $(head -c 600 "$WORK/python.json")"
echo PASS
