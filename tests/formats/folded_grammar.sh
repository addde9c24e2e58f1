#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# The folded output keeps flamegraph.pl's grammar (folded_grammar.py says
# which rules): of real perf script files from FlameGraph's own test corpus
# (the kernel's frames marked _[k] and only them; roots as
# stackcollapse-perf.pl's), of a GPU recording, of py-spy and pprof files,
# and of names that hold ';', newlines, a trailing count or a kind mark
# they do not have.
# flamegraph.pl itself is not packaged in Debian; the checker follows its
# parsing and palettes.
. "$TESTS_SOURCE/lib/testlib.sh"
grammar="python3 $TESTS_SOURCE/formats/folded_grammar.py"
inputs=$TESTS_SOURCE/diff/inputs
corpus=$TESTS_SOURCE/../../shared/peer-corpus

if [ -d "$corpus/flamegraph" ]; then
	for input in "$corpus"/flamegraph/perf-*.txt; do
		name=$(basename "$input" .txt)
		"$LLMPROF" convert -f folded -o "$WORK/$name.folded" "$input" 2>/dev/null ||
			fail "convert $name"
		args=(--roots-from "$corpus/flamegraph/expected/$name.folded")
		grep -q '(\[kernel.kallsyms\])' "$input" && args+=(--kernel-from "$input")
		$grammar "$WORK/$name.folded" "${args[@]}" || fail "$name"
	done
	$grammar <("$LLMPROF" convert -f folded "$corpus/pprof/sample.pb.gz") || fail "pprof sample"
else
	echo "note: $corpus is absent; the peer files are left out"
fi
for input in recorded.speedscope.json pyspy.speedscope.json perf-script.txt; do
	"$LLMPROF" convert -f folded -o "$WORK/$input.folded" "$inputs/$input" || fail "convert $input"
	$grammar "$WORK/$input.folded" || fail "$input"
done
grep -q '^\[gpu\] \|;\[gpu\] ' "$WORK/recorded.speedscope.json.folded" || fail "no GPU frames"

# Names with a ';', a newline, a carriage return, a trailing count, blanks
# at the ends, and no name: each stack stays one line of as many frames as
# it has.
cat >"$WORK/names.speedscope.json" <<'JSON'
{"$schema": "https://www.speedscope.app/file-format-schema.json",
 "shared": {"frames": [{"name": "main"}, {"name": "a;b"}, {"name": "c\nd\re"},
	{"name": "tail 12"}, {"name": " spaced "}, {"name": ""}]},
 "profiles": [{"type": "sampled", "name": "p", "unit": "none", "startValue": 0, "endValue": 4,
	"samples": [[0, 1], [0, 2, 3], [0, 4, 3], [0, 5]], "weights": [1, 2, 3, 4]}]}
JSON
"$LLMPROF" convert -f folded -o "$WORK/names.folded" "$WORK/names.speedscope.json" ||
	fail "convert names"
$grammar "$WORK/names.folded" --depths 2,3,3,2 || fail "names"
# A user-space function whose name ends as a kind mark does is not read as
# that kind by flamegraph.pl; the kernel's frame is.
printf 'prog 123 [000] 1.000000: cpu-clock:\n\t  400100 g_[k]+0x10 (/usr/bin/prog)\n%s\n\n%s\n%s\n\n' \
	$'\t  400200 h_[i] (/usr/bin/prog)\n\t  400300 main (/usr/bin/prog)' \
	'prog 123 [000] 1.001000: cpu-clock:' $'\tffffffff81000000 schedule ([kernel.kallsyms])\n\t  400300 main (/usr/bin/prog)' \
	>"$WORK/names.perf"
"$LLMPROF" convert -f folded -o "$WORK/marks.folded" "$WORK/names.perf" || fail "convert marks"
$grammar "$WORK/marks.folded" --kernel-from "$WORK/names.perf" || fail "marks"
grep -q 'g_\[k\]_ 1$' "$WORK/marks.folded" || fail "g_[k] reads as a kernel frame: $(cat "$WORK/marks.folded")"
echo PASS
