#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# record and attach write -f svg directly: the ground-truth fixture's flame
# graph gives burn_a, burn_b and burn_c their known shares (50/30/20) with
# their file and line, and opens in headless Chromium (click zoom, search
# share, no console error; screenshot in $ARTIFACTS); a wall-clock recording
# of the waits fixture colours its off-CPU waits and says so in the legend,
# and --inverted draws the icicle.
. "$TESTS_SOURCE/lib/testlib.sh"
need_root
mkdir -p "$ARTIFACTS"

"$LLMPROF" record -F 999 -f svg -o "$ARTIFACTS/record.svg" -- "$FIXTURES/ground_truth" 3 \
	>/dev/null 2>"$WORK/err" || fail "record failed: $(cat "$WORK/err")"
grep -q "wrote a flame graph to $ARTIFACTS/record.svg" "$WORK/err" || fail "summary: $(cat "$WORK/err")"
python3 -c 'import sys, xml.dom.minidom; xml.dom.minidom.parse(sys.argv[1])' "$ARTIFACTS/record.svg" ||
	fail "record.svg is not well-formed XML"
grep -q '^<g><title>burn_a$' "$ARTIFACTS/record.svg" || fail "no burn_a frame"
grep -A1 '^<g><title>burn_a$' "$ARTIFACTS/record.svg" | grep -q 'ground_truth.c:[0-9]' ||
	fail "burn_a has no file and line"
# Each frame's tooltip: name, file:line, "N samples (S%)".
awk '/^<g><title>burn_[abc]$/ { name = substr($0, 11); next }
	name && /^[0-9]+ samples/ { n[name] += $1; name = "" }
	/^[^ ]*\.c:[0-9]+(-[0-9]+)?$/ { next }
	{ name = "" }
	END { for (f in n) total += n[f]
		for (f in n) printf "%s %.1f\n", f, 100 * n[f] / total }' "$ARTIFACTS/record.svg" >"$WORK/shares"
for want in burn_a=50 burn_b=30 burn_c=20; do
	got=$(awk -v f="${want%=*}" '$1 == f { print $2 }' "$WORK/shares")
	[ -n "$got" ] && awk -v g="$got" -v w="${want#*=}" 'BEGIN { exit !(g - w <= 3 && w - g <= 3) }' ||
		fail "${want%=*}: ${got:-no}% of the burn functions, expected ${want#*=}: $(cat "$WORK/shares")"
done

# The same graph in a browser, against the share its tooltips give.
if command -v node >/dev/null && command -v chromium >/dev/null; then
	"$TESTS_SOURCE/../scripts/fetch-playwright.sh" "$PLAYWRIGHT" || fail "cannot install playwright-core"
	share=$(grep -A2 '^<g><title>burn_a$' "$ARTIFACTS/record.svg" | grep -o '[0-9]* samples' | awk '{ s += $1 } END { print s }')
	total=$(grep -A2 '<g><title>all$' "$ARTIFACTS/record.svg" | grep -o '^[0-9]* samples' | awk '{ print $1 }')
	echo "{\"svg\": \"$ARTIFACTS/record.svg\", \"screenshot\": \"$ARTIFACTS/record.png\",
		\"frame\": \"burn_a\", \"search\": \"^burn_a\$\",
		\"share\": $(awk -v s="$share" -v t="$total" 'BEGIN { print 100 * s / t }')}" >"$WORK/checks.json"
	node "$TESTS_SOURCE/formats/flamegraph_browser.mjs" "$PLAYWRIGHT" "$(command -v chromium)" \
		"$WORK/checks.json" || fail "the browser checks failed"
else
	echo "note: node or chromium is absent; the browser checks are left out"
fi

start_bg "$FIXTURES/waits" 6
sleep 0.5
"$LLMPROF" attach -p "$BG_PID" -d 2 -F 499 --mode wall -f svg --inverted -o "$ARTIFACTS/wall.svg" \
	2>"$WORK/wall.err" || fail "attach --mode wall -f svg failed: $(cat "$WORK/wall.err")"
grep -q '>off-CPU wait</text>' "$ARTIFACTS/wall.svg" || fail "no off-CPU wait in the legend"
grep -q 'data-inverted="1"' "$ARTIFACTS/wall.svg" || fail "--inverted did not draw an icicle"
expect_status 2 "$LLMPROF" record -f folded --inverted -- true
echo PASS
