#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# The HTML page (-f html of convert and merge, report --html) in a real
# browser: headless Chromium driven by playwright-core opens each from
# file://, switches views, selects a process and compares the share it shows
# with the share the profile's folded stacks give that process (counted here
# by awk), selects every thread (their shares add up to the whole), zooms on
# a frame by a click, searches a name against the folded stacks' share,
# sorts a table by a click on its header; no console error and no request
# beyond file://.  Screenshots stay in $ARTIFACTS.
. "$TESTS_SOURCE/lib/testlib.sh"
command -v node >/dev/null || skip "node is not installed"
chromium=$(command -v chromium || command -v chromium-browser || true)
[ -n "$chromium" ] || skip "chromium is not installed (scripts/install-deps.sh installs it)"
"$TESTS_SOURCE/../scripts/fetch-playwright.sh" "$PLAYWRIGHT" || fail "cannot install playwright-core"
mkdir -p "$ARTIFACTS"
rm -f "$ARTIFACTS"/*.png "$ARTIFACTS"/*.html
inputs=$TESTS_SOURCE/diff/inputs
corpus=$TESTS_SOURCE/../../shared/peer-corpus/flamegraph

# share FOLDED AWK-CONDITION: percent of the weight on the stacks whose
# line (frames in f[1..k], the count cut) meets the condition; has(NAME):
# a frame is NAME, kind mark aside.
share() {
	awk "function has(name,  i, g) { for (i = 1; i <= k; i++) { g = f[i]
			sub(/_\\[[a-z]\\]\$/, \"\", g); if (g == name) return 1 } return 0 }
		{ n = \$NF; total += n; line = \$0; sub(/ [0-9]+\$/, \"\", line)
		k = split(line, f, \";\"); if ($2) hit += n }
		END { printf \"%.6f\", total ? 100 * hit / total : 0 }" "$1"
}

# browse NAME JSON-MEMBERS: runs the browser checks on $ARTIFACTS/NAME.html.
browse() {
	echo "{\"html\": \"$ARTIFACTS/$1.html\", \"chromium\": \"$chromium\",
		\"screenshot\": \"$ARTIFACTS/$1.png\", $2}" >"$WORK/$1.json"
	node "$TESTS_SOURCE/formats/html_browser.mjs" "$PLAYWRIGHT" "$WORK/$1.json" ||
		fail "$1: the browser checks failed"
}

# self_contained PAGE: one file, nothing fetched.
self_contained() {
	grep -Eq '(src|href)="(https?:)?//|@import|url\(' "$1" && fail "$1 loads something"
	return 0
}

# Two real perf profiles merged, each under its own root: the process
# selector shows one, with its share of the whole.
first=$corpus/perf-funcab-pid-01.txt
second=$corpus/perf-iperf-stacks-pidtid-01.txt
[ -f "$first" ] && [ -f "$second" ] || {
	echo "note: $corpus is absent; using tests/diff/inputs' base and new profiles"
	first=$inputs/base.folded
	second=$inputs/new.folded
}
"$LLMPROF" merge -f html --label one,two -o "$ARTIFACTS/merged.html" "$first" "$second" ||
	fail "merge -f html"
"$LLMPROF" merge -f folded --label one,two "$first" "$second" >"$WORK/merged.folded" ||
	fail "merge -f folded"
self_contained "$ARTIFACTS/merged.html"
"$LLMPROF" merge -f html --label one,two "$first" "$second" | cmp - "$ARTIFACTS/merged.html" ||
	fail "the page differs between runs"
frame=$(awk '{ sub(/ [0-9]+$/, ""); n = split($0, f, ";"); if (n > 2 && f[1] == "[two]") {
	sub(/_\[[a-z]\]$/, "", f[2]); print f[2] } }' "$WORK/merged.folded" | sort | uniq -c |
	sort -rn | awk 'NR == 1 { print $2 }')
browse merged "\"views\": [\"CPU\"], \"process\": {\"name\": \"[two]\",
	\"share\": $(share "$WORK/merged.folded" 'f[1] == "[two]"')},
	\"frame\": \"$frame\", \"search\": \"^$frame\$\",
	\"share\": $(share "$WORK/merged.folded" "has(\"$frame\")")"

# A recording with GPU kernels and threads: the CPU, GPU and All views;
# the GPU view's search against the GPU stacks alone; the kernels table.
"$LLMPROF" convert -f html -o "$ARTIFACTS/recorded.html" "$inputs/recorded.speedscope.json" ||
	fail "convert -f html"
"$LLMPROF" convert -f folded "$inputs/recorded.speedscope.json" | grep '\[gpu\] ' >"$WORK/gpu.folded" ||
	fail "no GPU stacks in the recording"
self_contained "$ARTIFACTS/recorded.html"
browse recorded "\"views\": [\"CPU\", \"GPU\", \"All\"], \"view\": \"GPU\", \"threads\": true,
	\"frame\": \"gemm_kernel\", \"search\": \"gemm\", \"share\": $(share "$WORK/gpu.folded" '$0 ~ /gemm/'),
	\"tables\": [\"gpu\", \"facts\", \"report\", \"processes\"], \"sort\": \"gpu\""

# report --html is the same page, with the report's own options.
"$LLMPROF" report --html -o "$ARTIFACTS/report.html" "$inputs/recorded.speedscope.json" ||
	fail "report --html"
self_contained "$ARTIFACTS/report.html"
grep -q '"rule":"gpu-idle"' "$ARTIFACTS/report.html" || fail "report.html lacks the gpu-idle finding"
browse report "\"views\": [\"CPU\", \"GPU\", \"All\"], \"tables\": [\"findings\", \"gpu\"],
	\"sort\": \"report\""

# report --html of two files: a view per file (FILE: VIEW where it has
# several), each with its file's total; the tables follow the view shown;
# one processes table of both.
base=$inputs/base.folded
recorded=$inputs/recorded.speedscope.json
"$LLMPROF" report --html -o "$ARTIFACTS/inputs.html" "$base" "$recorded" || fail "report --html A B"
self_contained "$ARTIFACTS/inputs.html"
base_total=$(awk '{ s += $NF } END { print s }' "$base")
gpu_total=$(awk '{ s += $NF } END { print s }' "$WORK/gpu.folded")
browse inputs "\"views\": [\"$base\", \"$recorded: CPU\", \"$recorded: GPU\", \"$recorded: All\"],
	\"values\": [{\"view\": \"$recorded: GPU\", \"weight\": $gpu_total, \"shown\": \"${gpu_total}ns\",
		\"of\": \"$recorded\", \"unit\": \"nanoseconds\"},
	{\"view\": \"$base\", \"weight\": $base_total, \"shown\": \"$base_total\",
		\"of\": \"$base\", \"unit\": \"samples\"}], \"tables\": [\"processes\", \"report\"]"
rows=$(python3 - "$ARTIFACTS/inputs.html" <<'PY'
import json, re, sys
text = open(sys.argv[1], encoding="utf-8").read()
data = json.loads(re.search(r'id="llmprof-data">(.*?)</script>', text, re.S).group(1))
print(len(data["inputs"]), sorted({r["file"] for r in data["processes"]["processes"]}))
PY
)
[ "$rows" = "2 ['$base', '$recorded']" ] || fail "inputs and processes of report --html A B: $rows"

# Names that are markup, a script's end, quotes and bytes that are not
# UTF-8 stay data: the page runs, and search finds them literally.
printf 'main;operator<<(std::ostream&, "a\x27b");\xff\xfe bad 3\nmain;a]]>b</script><script>alert(1)</script> 1\nmain;plain 6\n' \
	>"$WORK/hostile.folded"
"$LLMPROF" convert -f html -o "$ARTIFACTS/hostile.html" "$WORK/hostile.folded" || fail "hostile names"
[ "$(grep -c '</script>' "$ARTIFACTS/hostile.html")" = 2 ] || fail "a name ends the page's script"
browse hostile "\"frame\": \"plain\", \"search\": \"operator<<\", \"share\": 30"

expect_status 2 "$LLMPROF" convert -f htm "$inputs/base.folded"
echo "screenshots: $ARTIFACTS"
echo PASS
