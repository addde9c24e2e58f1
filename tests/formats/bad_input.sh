#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# Broken pprof input fails with one line that says what is wrong, and the
# exit status of any other malformed input (2); nothing is written.
. "$TESTS_SOURCE/lib/testlib.sh"
inputs=$TESTS_SOURCE/diff/inputs

"$LLMPROF" convert -f pprof -o "$WORK/good.pb.gz" "$inputs/perf.folded" || fail "to pprof"
size=$(stat -c %s "$WORK/good.pb.gz")
head -c $((size / 2)) "$WORK/good.pb.gz" >"$WORK/truncated.pb.gz"
printf '\037\213\010\000\000\000\000\000\000\003garbage that is not deflate' >"$WORK/corrupt.pb.gz"
gzip -dc "$WORK/good.pb.gz" | head -c $(($(gzip -dc "$WORK/good.pb.gz" | wc -c) - 3)) \
	>"$WORK/truncated.pb"
printf '\022\377\377\377\377\017' >"$WORK/garbage.pb"
printf 'main;work 10\n' | gzip -n >"$WORK/folded.gz"

check() {
	local file=$1 what=$2 command
	for command in "convert -f folded" "report" "diff $inputs/perf.folded"; do
		# shellcheck disable=SC2086
		"$LLMPROF" $command "$WORK/$file" >"$WORK/out" 2>"$WORK/err"
		status=$?
		[ "$status" = 2 ] || fail "$command $file exited $status, expected 2: $(cat "$WORK/err")"
		[ "$(wc -l <"$WORK/err")" = 1 ] || fail "$command $file: not one line: $(cat "$WORK/err")"
		grep -q "^llmprof: error: $WORK/$file: .*$what" "$WORK/err" ||
			fail "$command $file: $(cat "$WORK/err")"
		[ -s "$WORK/out" ] && fail "$command $file wrote output"
	done
	"$LLMPROF" convert -f pprof -o "$WORK/out.pb.gz" "$WORK/$file" 2>/dev/null
	[ $? = 2 ] || fail "convert of $file should exit 2"
	[ -e "$WORK/out.pb.gz" ] && fail "a failed conversion of $file left its output"
	echo "ok: $file: $(cat "$WORK/err")"
}
check truncated.pb.gz "truncated gzip data"
check corrupt.pb.gz "corrupt gzip data"
check truncated.pb "not a valid pprof profile"
check garbage.pb "not a valid pprof profile"
check folded.gz "not a valid pprof profile"
# What a file that no reader takes looked like, never "no sample count".
cp "$LLMPROF" "$WORK/program"
printf '\0\0\0\0\0\0\0\0\3\0\0\0\0\0\0\0\0\0\0\0\0\0\0\0\144\0\0\0' >"$WORK/legacy.prof"
printf 'heap profile:   1:   262144 [  1:   262144] @ heapprofile\n' >"$WORK/legacy.heap"
printf 'PERFILE2\150\0\0\0\0\0\0\0' >"$WORK/perf.data"
"$LLMPROF" convert -f chrome -o "$WORK/trace.json" "$TESTS_SOURCE/diff/inputs/recorded.speedscope.json" ||
	fail "to a Chrome trace"
printf 'hello world\nthis is not a profile\n' >"$WORK/prose.txt"
check program "not a profile: an ELF file"
check legacy.prof "a legacy pprof profile (not profile.proto)"
check legacy.heap "a legacy pprof profile (not profile.proto)"
check perf.data "a perf.data file: run 'perf script -i FILE'"
check trace.json "a Chrome trace (JSON trace events)"
check prose.txt "no line is folded stacks .* the first line is 'hello world'"

# Text in other encodings reads as its UTF-8 self; raw protobuf as gzip'ed.
"$LLMPROF" convert -f folded "$inputs/perf.folded" >"$WORK/want.folded"
for encoding in UTF-16LE UTF-16BE UTF-16; do
	iconv -f UTF-8 -t $encoding "$inputs/perf.folded" >"$WORK/utf16.folded"
	"$LLMPROF" convert --strict -f folded "$WORK/utf16.folded" | cmp -s - "$WORK/want.folded" ||
		fail "$encoding input reads otherwise"
done
printf '\357\273\277' | cat - "$inputs/perf.folded" | sed 's/$/\r/' >"$WORK/bom.folded"
"$LLMPROF" convert --strict -f folded "$WORK/bom.folded" | cmp -s - "$WORK/want.folded" ||
	fail "a UTF-8 byte-order mark and CRLF change what is read"
gzip -dc "$WORK/good.pb.gz" >"$WORK/raw.pb"
"$LLMPROF" convert -f folded "$WORK/raw.pb" | cmp -s - "$WORK/want.folded" ||
	fail "uncompressed pprof reads otherwise than gzip'ed"
echo PASS
