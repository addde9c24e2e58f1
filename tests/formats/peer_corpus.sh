#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# Files other tools wrote (../shared/peer-corpus, see its SOURCES) are read
# as those tools read them: real perf script outputs of several perf
# versions agree with FlameGraph's stackcollapse-perf.pl at >= 95 % of the
# weight, pprof's test profiles with what the real `pprof -traces` prints at
# >= 99 %, and every speedscope sample profile is read (its invalid ones
# refused with one line).  Skips where the corpus is absent.
. "$TESTS_SOURCE/lib/testlib.sh"
corpus=${PEER_CORPUS:-$TESTS_SOURCE/../../shared/peer-corpus}
[ -d "$corpus/flamegraph" ] || skip "no peer corpus at $corpus"
agree="python3 $TESTS_SOURCE/formats/folded_agreement.py"

read_as() { # FILE OUT: converts FILE to folded stacks, or fails
	"$LLMPROF" convert -f folded "$1" >"$2" 2>"$WORK/err" ||
		fail "$(basename "$1") not read: $(cat "$WORK/err")"
}

for f in "$corpus"/flamegraph/perf-*.txt; do
	name=$(basename "$f" .txt)
	read_as "$f" "$WORK/out.folded"
	got=$($agree "$corpus/flamegraph/expected/$name.folded" "$WORK/out.folded" 95) ||
		fail "$name: $got% of the weight agrees with stackcollapse-perf.pl"
	echo "$name: $got%"
done

for f in "$corpus"/pprof/*.pb*; do
	name=$(basename "$f")
	read_as "$f" "$WORK/out.folded"
	expected=$(ls "$corpus/pprof/expected/$name".folded*)
	got=$($agree "$expected" "$WORK/out.folded" 99) ||
		fail "$name: $got% of the weight agrees with pprof -traces"
	echo "$name: $got%"
done
# Raw protobuf reads as its gzip'ed self.
"$LLMPROF" convert -f folded "$corpus/pprof/sample.pb.gz" >"$WORK/gz.folded"
cmp -s "$WORK/gz.folded" <("$LLMPROF" convert -f folded "$corpus/pprof/sample-uncompressed.pb") ||
	fail "an uncompressed profile reads otherwise than its gzip'ed self"
# Another sample type, by index or name, as pprof -sample_index takes it.
if [ -x "${PPROF:-}" ]; then
	for index in 0 samples; do
		# pprof -traces shows inlined frames without a mark.
		"$LLMPROF" convert -f folded --sample-index "$index" "$corpus/pprof/sample.pb.gz" |
			sed -E 's/_\[i\](;| )/\1/g' >"$WORK/index.folded" || fail "--sample-index $index"
		PPROF_SAMPLE_INDEX=$index python3 "$TESTS_SOURCE/formats/pprof_check.py" traces \
			"$PPROF" "$corpus/pprof/sample.pb.gz" "$WORK/index.folded" ||
			fail "--sample-index $index disagrees with pprof -sample_index=$index"
	done
fi
# pprof's inlined functions are named as pprof -top names them.
"$LLMPROF" report --top 0 "$corpus/pprof/sample.pb.gz" >"$WORK/report.txt" || fail "report"
grep -q '  math.Abs$' "$WORK/report.txt" && ! grep -q '_\[i\]' "$WORK/report.txt" ||
	fail "report shows folded marks in pprof's names: $(grep '_\[' "$WORK/report.txt")"
"$LLMPROF" convert -f folded --sample-index alloc "$corpus/pprof/sample.pb.gz" 2>"$WORK/err" >/dev/null
[ $? = 2 ] && grep -q "no sample type 'alloc' in the profile (it has 0 samples, 1 cpu)" "$WORK/err" ||
	fail "an unknown sample type: $(cat "$WORK/err")"

for f in "$corpus"/speedscope/*/* "$corpus"/speedscope/speedscope/*/*; do
	[ -f "$f" ] || continue
	"$LLMPROF" convert -f folded "$f" >"$WORK/out.folded" 2>"$WORK/err"
	status=$?
	case $f in
	*/invalid/*)
		[ $status -le 2 ] && [ "$(wc -l <"$WORK/err")" -le 1 ] ||
			fail "$(basename "$f"): exit $status: $(cat "$WORK/err")"
		;;
	*)
		[ $status = 0 ] && [ -s "$WORK/out.folded" ] ||
			fail "$(basename "$f") not read: $(cat "$WORK/err")"
		;;
	esac
	echo "$(basename "$f"): read"
done
# The same stacks in UTF-8, UTF-16 either way and with CRLF.
folded=$corpus/speedscope/stackcollapse
"$LLMPROF" convert -f folded "$folded/simple.txt" >"$WORK/simple.folded"
for f in simple-utf16-le.txt simple-utf16-be.txt simple-crlf.txt; do
	"$LLMPROF" convert --strict -f folded "$folded/$f" | cmp -s - "$WORK/simple.folded" ||
		fail "$f reads otherwise than simple.txt"
done
"$LLMPROF" report "$folded/simple-with-invalids.txt" >/dev/null 2>"$WORK/err" &&
	grep -q "skipped 2 malformed lines (the first, line 2" "$WORK/err" || fail "invalid lines: $(cat "$WORK/err")"
"$LLMPROF" report --strict "$folded/simple-with-invalids.txt" >/dev/null 2>&1
[ $? = 2 ] || fail "--strict reads a file with a malformed line"
echo PASS
