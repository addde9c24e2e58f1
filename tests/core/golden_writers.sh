#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# A fixed profile written as folded, speedscope and a Chrome trace, byte for byte;
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
grep -q '"name":"Model.forward","file":"mm.py"' "$WORK/python.json" ||
	fail "Python frames from folded input: $(head -c 600 "$WORK/python.json")"
echo PASS
