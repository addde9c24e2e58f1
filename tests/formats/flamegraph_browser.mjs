// SPDX-License-Identifier: GPL-2.0
// Opens one of llmprof's SVG flame graphs (or an HTML report) from file:// in headless Chromium
// (playwright-core, the system's browser) and drives it as a user would:
// zoom by a click, reset, search with the matched share, and a screenshot.
// Usage: node flamegraph_browser.mjs PLAYWRIGHT_DIR CHROMIUM CHECKS.json
// CHECKS: { svg, screenshot, frame?, search?, share?, inverted?, fills? }
// where fills maps a frame name to "red" or "blue".  Prints "ok ..." lines;
// exits 1 with a message on the first failed check.
import { createRequire } from 'node:module';
import { readFileSync } from 'node:fs';
import { pathToFileURL } from 'node:url';

const [playwrightDir, chromiumPath, checksPath] = process.argv.slice(2);
const require = createRequire(playwrightDir + '/');
const { chromium } = require('playwright-core');
const checks = JSON.parse(readFileSync(checksPath, 'utf8'));

function fail(message) {
	console.error('flamegraph_browser: ' + checks.svg + ': ' + message);
	process.exit(1);
}

const browser = await chromium.launch({ executablePath: chromiumPath, args: ['--no-sandbox'] });
const errors = [];
try {
	const page = await browser.newPage({ viewport: { width: 1220, height: 700 } });
	page.on('console', (m) => { if (m.type() === 'error' || m.type() === 'warning') errors.push(m.text()); });
	page.on('pageerror', (e) => errors.push(String(e)));
	const started = Date.now();
	await page.goto(pathToFileURL(checks.svg).href);
	console.log(`ok loaded in ${Date.now() - started} ms`);

	// Every frame: its name (the title's first line), geometry, class, fill.
	const frames = () => page.$$eval('#frames > g', (gs) => gs.map((g) => {
		const r = g.querySelector('rect');
		return { name: g.querySelector('title').textContent.split('\n')[0],
			x: +r.getAttribute('x'), w: +r.getAttribute('width'),
			y: +r.getAttribute('y'), cls: g.getAttribute('class') || '',
			fill: r.getAttribute('fill') };
	}));
	const before = await frames();
	if (before.length < 2)
		fail(`only ${before.length} frames drawn`);
	const root = before[before.length - 1];
	if (root.name !== 'all' || Math.abs(root.w - 1180) > 0.01)
		fail(`the last frame is not the full-width root: ${JSON.stringify(root)}`);
	const deepest = Math.max(...before.map((f) => f.y)), highest = Math.min(...before.map((f) => f.y));
	if (checks.inverted ? root.y !== highest : root.y !== deepest)
		fail(`the root is not at the ${checks.inverted ? 'top' : 'bottom'}: y ${root.y}`);
	console.log(`ok ${before.length} frames, root at the ${checks.inverted ? 'top' : 'bottom'}`);

	if (checks.frame) {
		const index = before.findIndex((f) => f.name === checks.frame);
		if (index < 0)
			fail(`no frame named ${checks.frame}`);
		const target = before[index];
		await page.locator('#frames > g').nth(index).locator('rect')
			.click({ position: { x: target.w / 2, y: 7 } });
		const after = await frames();
		const zoomed = after[index];
		if (Math.abs(zoomed.x - 10) > 0.01 || Math.abs(zoomed.w - 1180) > 0.01)
			fail(`clicked ${checks.frame} is x ${zoomed.x} w ${zoomed.w}, not the full width`);
		// Frames beside it are hidden, its ancestors full width and faded,
		// its descendants scaled by the same factor.
		const scale = 1180 / target.w;
		for (let i = 0; i < before.length; i++) {
			const b = before[i], a = after[i];
			const inside = b.x >= target.x - 1e-3 && b.x + b.w <= target.x + target.w + 1e-3;
			const above = checks.inverted ? b.y >= target.y : b.y <= target.y;
			if (above && inside) {
				if (a.cls !== '' || Math.abs(a.w - b.w * scale) > 0.01 * Math.max(1, a.w))
					fail(`descendant ${b.name} is ${a.cls} w ${a.w}, expected w ${b.w * scale}`);
			} else if (!above && b.x <= target.x + 1e-3 && b.x + b.w >= target.x + target.w - 1e-3) {
				if (a.cls !== 'parent' || Math.abs(a.w - 1180) > 0.01)
					fail(`ancestor ${b.name} is ${a.cls} w ${a.w}`);
			} else if (a.cls !== 'hide') {
				fail(`${b.name}, outside the zoomed frame, is still shown`);
			}
		}
		const hidden = after.filter((f) => f.cls === 'hide').length;
		console.log(`ok zoomed on ${checks.frame} (x${scale.toFixed(2)}), ${hidden} frames hidden`);
		await page.click('#unzoom');
		const reset = await frames();
		for (let i = 0; i < before.length; i++)
			if (reset[i].cls !== '' || Math.abs(reset[i].w - before[i].w) > 0.01)
				fail(`after Reset Zoom ${before[i].name} is ${reset[i].cls} w ${reset[i].w}`);
		console.log('ok Reset Zoom restores every frame');
	}

	if (checks.search) {
		page.once('dialog', (d) => d.accept(checks.search));
		await page.click('#search');
		const text = await page.textContent('#matched');
		const m = /^Matched: ([0-9.]+)%$/.exec(text || '');
		if (!m)
			fail(`the search for ${checks.search} shows '${text}'`);
		if (Math.abs(+m[1] - checks.share) > 0.05)
			fail(`search ${checks.search}: matched ${m[1]}%, the profile says ${checks.share.toFixed(3)}%`);
		const lit = (await frames()).filter((f) => f.fill === 'rgb(230,0,230)').length;
		if (!lit)
			fail('no frame is highlighted');
		console.log(`ok search ${checks.search}: ${m[1]}% (profile ${checks.share.toFixed(3)}%), ${lit} frames lit`);
	}

	for (const [name, colour] of Object.entries(checks.fills || {})) {
		const f = before.find((x) => x.name === name);
		const rgb = f && /rgb\((\d+),(\d+),(\d+)\)/.exec(f.fill);
		if (!rgb)
			fail(`no frame ${name} with a fill`);
		const [r, g, b] = rgb.slice(1).map(Number);
		const ok = colour === 'red' ? r === 255 && b < 200 && g < 200
			: colour === 'blue' ? b === 255 && r < 255 : false;
		if (!ok)
			fail(`${name} is ${f.fill}, not ${colour}`);
		console.log(`ok ${name} is ${colour} (${f.fill})`);
	}

	// A full-page screenshot of an SVG document never completes: the
	// viewport is made the drawing's size instead.
	const height = await page.evaluate(() => document.documentElement.tagName === 'svg'
		? +document.documentElement.getAttribute('height') : document.documentElement.scrollHeight);
	await page.setViewportSize({ width: 1220, height: Math.min(Math.ceil(height) + 10, 4000) });
	await page.screenshot({ path: checks.screenshot });
	console.log(`ok screenshot ${checks.screenshot}`);
	if (errors.length)
		fail('console errors: ' + errors.join('; '));
	console.log('ok no console errors');
} finally {
	await browser.close();
}
