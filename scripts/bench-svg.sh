#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# How fast -f svg and -f html are on a large profile: wall and CPU time of
# `llmprof convert -f svg` and `-f html` (reading the input included) on a
# folded file of STACKS distinct stacks, beside the same conversion to folded
# stacks; the size of the SVG and how many frames it draws, the size of the
# page; and, where Chromium, node and playwright-core are here
# (scripts/fetch-playwright.sh), how long Chromium takes to open each from
# file:// and paint its first view, and to zoom, beside a one-frame file.
# The targets: under 2 s to write, under 1 s to open.  On a busy machine CPU
# seconds are the figure to compare; the writing alone is -f html's less the
# read's.
# Usage: scripts/bench-svg.sh [STACKS] [FRAMES]
#   STACKS  distinct stacks (default 1000000)
#   FRAMES  distinct function names the stacks are made of (default 2000;
#           fewer give a denser graph)
# The input is generated deterministically by awk.  LLMPROF=PATH measures
# another build of llmprof.
set -euo pipefail
cd "$(dirname "$0")/.."
stacks=${1:-1000000}
frames=${2:-2000}
build_dir=${BUILD_DIR:-build}
[ -n "${LLMPROF:-}" ] || [ -x "$build_dir/cmd/llmprof" ] || BUILD_DIR=$build_dir scripts/build.sh >/dev/null
llmprof=$(realpath "${LLMPROF:-$build_dir/cmd/llmprof}")
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
[ -x /usr/bin/time ] || { echo "bench-svg: needs /usr/bin/time (GNU time)" >&2; exit 1; }

# Stack i: main, 2-11 frames drawn from a pool that narrows with depth (so
# callers are shared, as in a real program), then two leaves from i's digits
# in base 1024 so every stack is distinct.
awk -v stacks="$stacks" -v pool="$frames" 'BEGIN {
	seed = 12345
	for (i = 0; i < stacks; i++) {
		seed = (seed * 1103515245 + 12345) % 2147483648
		depth = 2 + seed % 10
		line = "main"
		for (d = 1; d <= depth; d++) {
			seed = (seed * 1103515245 + 12345) % 2147483648
			width = int(pool * d / 12) + 2
			line = line ";fn_" d "_" seed % width
		}
		printf "%s;leaf_%d;leaf_%d %d\n", line, int(i / 1024) % 1024, i % 1024, 1 + seed % 50
	}
}' >"$work/in.folded"

# measure NAME OUT COMMAND...: prints wall and CPU seconds of one run;
# the CPU seconds are left in $cpu.
measure() {
	local name=$1
	shift
	/usr/bin/time -f '%e %U %S %M' -o "$work/time" "$@" 2>"$work/err" ||
		{ echo "bench-svg: $name failed: $(tail -1 "$work/err")" >&2; exit 1; }
	read -r wall user system kb <"$work/time"
	cpu=$(awk "BEGIN { print $user + $system }")
	printf '%-28s %8s %8.2f %8d\n' "$name" "$wall" "$cpu" $((kb >> 10))
}
printf '%-28s %8s %8s %8s\n' case wall_s cpu_s peak_MB
# Reading the input and a one-row report: what every case below pays
# before its writer starts.
measure "read (report --top 1)" "$llmprof" report -f json --top 1 -o "$work/out.json" "$work/in.folded"
read_cpu=$cpu
measure "convert -f folded" "$llmprof" convert -f folded -o "$work/out.folded" "$work/in.folded"
measure "convert -f svg" "$llmprof" convert -f svg -o "$work/out.svg" "$work/in.folded"
measure "convert -f svg --inverted" "$llmprof" convert -f svg --inverted -o "$work/icicle.svg" \
	"$work/in.folded"
measure "convert -f html" "$llmprof" convert -f html -o "$work/out.html" "$work/in.folded"
# What the writer adds to the read (the findings and tables included).
printf '%-28s %8s %8.2f\n' "html writing alone" - "$(awk "BEGIN { print $cpu - $read_cpu }")"
drawn=$(grep -c '^<g><title>' "$work/out.svg")
left=$(grep -o '[0-9]* frames* narrower than [0-9.]* px not drawn' "$work/out.svg" || echo "0 frames")
echo "input: $stacks stacks, $(($(stat -c %s "$work/in.folded") >> 20)) MB; svg: $(($(stat -c %s \
	"$work/out.svg") >> 10)) KB, $drawn frames drawn, ${left%% *} left out; html: $(($(stat -c \
	%s "$work/out.html") >> 10)) KB"

chromium=$(command -v chromium || true)
playwright=$build_dir/playwright
if [ -z "$chromium" ] || ! command -v node >/dev/null ||
	! scripts/fetch-playwright.sh "$playwright" 2>/dev/null; then
	echo "browser: not measured (needs chromium, node and playwright-core)"
	exit 0
fi
cat >"$work/open.mjs" <<'JS'
import { createRequire } from 'node:module';
const [playwright, chromiumPath, svg, kind] = process.argv.slice(2);
const { chromium } = createRequire(playwright + '/')('playwright-core');
const browser = await chromium.launch({ executablePath: chromiumPath, args: ['--no-sandbox'] });
const page = await browser.newPage({ viewport: { width: 1220, height: 900 } });
const errors = [];
page.on('pageerror', (e) => errors.push(String(e)));
// Opens a file and waits for two frames to be painted; milliseconds.
async function open(file) {
	const t = Date.now();
	await page.goto('file://' + file, { waitUntil: 'load' });
	await page.evaluate(() => new Promise((r) => requestAnimationFrame(() => requestAnimationFrame(r))));
	return Date.now() - t;
}
const small = await open(svg.replace(/out[.](svg|html)$/, 'small.$1'));
const big = await open(svg);
let n, t;
if (kind === 'html') {
	// The page's first view is drawn by its script before load ends.
	n = await page.evaluate(() => window.llmprofPage.frames().length);
	t = Date.now();
	await page.evaluate(() => {
		const c = document.getElementById('flame'), r = c.getBoundingClientRect();
		const f = window.llmprofPage.frames()[1];
		c.dispatchEvent(new MouseEvent('click', { clientX: r.left + f.x + f.w / 2,
			clientY: r.top + f.y + 7, bubbles: true }));
		return new Promise((r) => requestAnimationFrame(() => requestAnimationFrame(r)));
	});
} else {
	n = await page.$$eval('#frames > g', (g) => g.length);
	t = Date.now();
	await page.evaluate(() => {
		const gs = document.querySelectorAll('#frames > g');
		gs[gs.length - 2].querySelector('rect').dispatchEvent(new MouseEvent('click', { bubbles: true }));
		return new Promise((r) => requestAnimationFrame(() => requestAnimationFrame(r)));
	});
}
const zoom = Date.now() - t;
console.log(`browser, ${kind}: Chromium opens it and paints in ${(big / 1000).toFixed(2)} s (target 1 s; ` +
	`a one-frame file ${(small / 1000).toFixed(2)} s), zooms in ${(zoom / 1000).toFixed(2)} s, ` +
	`${n} frames${errors.length ? ', errors: ' + errors : ''}`);
await browser.close();
JS
for kind in svg html; do
	echo "main 1" | "$llmprof" convert -f $kind -o "$work/small.$kind" -
	node "$work/open.mjs" "$(realpath "$playwright")" "$chromium" "$work/out.$kind" $kind
done
