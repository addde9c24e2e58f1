#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# The SVG flame graphs in a real browser: headless Chromium driven by
# playwright-core opens each from file://, zooms on a frame by a click and
# back, searches a name and compares the matched share with the share the
# profile's folded stacks give it (counted here by awk), and
# keeps a screenshot in $ARTIFACTS; no console error is allowed.  Also: the
# SVG is well-formed XML with hostile names, and the same input gives the
# same bytes.  The HTML page (report --html, -f html) is html_browser.sh's.
. "$TESTS_SOURCE/lib/testlib.sh"
command -v node >/dev/null || skip "node is not installed"
chromium=$(command -v chromium || command -v chromium-browser || true)
[ -n "$chromium" ] || skip "chromium is not installed (scripts/install-deps.sh installs it)"
"$TESTS_SOURCE/../scripts/fetch-playwright.sh" "$PLAYWRIGHT" || fail "cannot install playwright-core"
mkdir -p "$ARTIFACTS"
rm -f "$ARTIFACTS"/*.png "$ARTIFACTS"/*.svg
inputs=$TESTS_SOURCE/diff/inputs
corpus=$TESTS_SOURCE/../../shared/peer-corpus/flamegraph

# share FOLDED NAME: percent of the weight on stacks with a frame NAME
# (or NAME plus a kind mark, _[k] ...), each stack once.
share() {
	awk -v name="$2" '{ n = $NF; total += n; line = $0; sub(/ [0-9]+$/, "", line)
		k = split(line, frames, ";")
		for (i = 1; i <= k; i++) {
			f = frames[i]; sub(/_\[[a-z]\]$/, "", f)
			if (f == name) { hit += n; break }
		} }
		END { printf "%.6f", total ? 100 * hit / total : 0 }' "$1"
}

# well_formed SVG: parses as XML (expat, as the browser's parser would).
well_formed() {
	python3 -c 'import sys, xml.dom.minidom; xml.dom.minidom.parse(sys.argv[1])' "$1"
}

# browse NAME JSON: runs the browser checks.
browse() {
	echo "$2" >"$WORK/$1.json"
	node "$TESTS_SOURCE/formats/flamegraph_browser.mjs" "$PLAYWRIGHT" "$chromium" \
		"$WORK/$1.json" || fail "$1: the browser checks failed"
}

# perf script of iperf (kernel and user frames, from FlameGraph's test
# corpus where it is here); the share to find is that of the profile's own
# folded stacks.
perf_input=$corpus/perf-iperf-stacks-pidtid-01.txt
perf_frame=tcp_sendmsg
[ -f "$perf_input" ] || {
	echo "note: $corpus is absent; using tests/diff/inputs/perf-script.txt"
	perf_input=$inputs/perf-script.txt
	perf_frame=
}
perf_folded=$WORK/perf.folded
"$LLMPROF" convert -f folded "$perf_input" >"$perf_folded" || fail "perf script to folded"
[ -n "$perf_frame" ] || perf_frame=$(awk '{ sub(/ [0-9]+$/, ""); n = split($0, f, ";")
	if (n > 2) { sub(/_\[[a-z]\]$/, "", f[2]); print f[2] } }' "$perf_folded" | sort | head -1)
"$LLMPROF" convert -f svg -o "$ARTIFACTS/perf.svg" "$perf_input" || fail "perf script to svg"
well_formed "$ARTIFACTS/perf.svg" || fail "perf.svg is not well-formed XML"
"$LLMPROF" convert -f svg "$perf_input" | cmp - "$ARTIFACTS/perf.svg" || fail "svg output differs between runs"
browse perf "{\"svg\": \"$ARTIFACTS/perf.svg\", \"screenshot\": \"$ARTIFACTS/perf.png\",
	\"frame\": \"$perf_frame\", \"search\": \"^$perf_frame\$\",
	\"share\": $(share "$perf_folded" "$perf_frame")}"

# Kernel, inlined and native frames of folded input are told apart.
"$LLMPROF" convert -f svg "$inputs/perf.folded" >"$WORK/kinds.svg" || fail "folded to svg"
for kind in native kernel; do
	grep -q ">$kind</text>" "$WORK/kinds.svg" || fail "no $kind frames in the legend"
done

# A recording with GPU kernels, as an icicle.
"$LLMPROF" convert -f svg --inverted -o "$ARTIFACTS/gpu-icicle.svg" "$inputs/recorded.speedscope.json" ||
	fail "speedscope to an inverted svg"
"$LLMPROF" convert -f folded "$inputs/recorded.speedscope.json" >"$WORK/gpu.folded" || fail "to folded"
grep -q ">GPU kernel</text>" "$ARTIFACTS/gpu-icicle.svg" || fail "no GPU kernel in the legend"
browse gpu "{\"svg\": \"$ARTIFACTS/gpu-icicle.svg\", \"screenshot\": \"$ARTIFACTS/gpu-icicle.png\",
	\"inverted\": true, \"frame\": \"step\", \"search\": \"gemm\",
	\"share\": $(awk '/gemm/ { hit += $NF } { total += $NF } END { printf "%.6f", 100 * hit / total }' "$WORK/gpu.folded")}"

# Names that are markup, quotes, control characters and bytes that are not
# UTF-8 stay one well-formed document, and search finds them literally.
printf 'main;operator<<(std::ostream&, "a\x27b");\xff\xfe bad 3\nmain;a]]>b<script>alert(1)</script> 1\nmain;plain 6\n' \
	>"$WORK/hostile.folded"
"$LLMPROF" convert -f svg -o "$ARTIFACTS/hostile.svg" "$WORK/hostile.folded" || fail "hostile names to svg"
well_formed "$ARTIFACTS/hostile.svg" || fail "hostile names break the XML"
browse hostile "{\"svg\": \"$ARTIFACTS/hostile.svg\", \"screenshot\": \"$ARTIFACTS/hostile.png\",
	\"frame\": \"plain\", \"search\": \"operator<<\", \"share\": 30}"

# The differential flame graph of a regression.
expect_status 1 "$LLMPROF" diff -f svg -o "$ARTIFACTS/diff.svg" "$inputs/base.folded" "$inputs/new.folded"
well_formed "$ARTIFACTS/diff.svg" || fail "diff.svg is not well-formed XML"
browse diff "{\"svg\": \"$ARTIFACTS/diff.svg\", \"screenshot\": \"$ARTIFACTS/diff.png\",
	\"frame\": \"render\", \"search\": \"^render\$\", \"share\": $(share "$inputs/new.folded" render),
	\"fills\": {\"slow_escape\": \"red\", \"gc_collect\": \"blue\"}}"
echo "screenshots: $ARTIFACTS"
echo PASS
