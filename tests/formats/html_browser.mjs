// SPDX-License-Identifier: GPL-2.0
// Opens one of llmprof's HTML pages (-f html, report --html) from file:// in
// headless Chromium (playwright-core, the system's browser) and drives it as
// a user would: switch views, select a process and compare the shown share
// with the profile's, select each thread, click a frame and check the zoom,
// search a name and compare the matched share, sort a table by a click on
// its header; no console error; a screenshot.
// Usage: node html_browser.mjs PLAYWRIGHT_DIR CHECKS.json
// CHECKS: { html, chromium, screenshot, views?: [names], view?: name,
//   process?: { name, share }, threads?: true, frame?, search?, share?,
//   sort?: section id, tables?: [section ids that must hold a table],
//   values?: [{ view, weight, shown, search?, share?, of?, unit? }]:
//   switched to each view in turn, its total is weight exactly and its
//   text says shown (as Google's pprof writes it: 112MB, 1.50s, 12) within
//   rounding, a search finds share (its cum%); the tables say they are of
//   the input named of, whose unit the run's table gives }
// Prints "ok ..." lines; exits 1 with a message on the first failed check.
import { createRequire } from 'node:module';
import { readFileSync } from 'node:fs';
import { pathToFileURL } from 'node:url';

const [playwrightDir, checksPath] = process.argv.slice(2);
const require = createRequire(playwrightDir + '/');
const { chromium } = require('playwright-core');
const checks = JSON.parse(readFileSync(checksPath, 'utf8'));

function fail(message) {
	console.error('html_browser: ' + checks.html + ': ' + message);
	process.exit(1);
}
const near = (a, b, tolerance) => Math.abs(a - b) <= tolerance;
// A quantity as pprof or the page writes it, in bytes, ns or a count.
const scales = { B: 1, kB: 1024, KiB: 1024, MB: 2 ** 20, MiB: 2 ** 20, GB: 2 ** 30, GiB: 2 ** 30,
	TB: 2 ** 40, TiB: 2 ** 40, ns: 1, us: 1e3, ms: 1e6, s: 1e9, samples: 1, '': 1 };
function quantity(text) {
	const m = /^([0-9.]+)\s*([A-Za-z]*)/.exec(text.trim());
	if (!m || !(m[2] in scales))
		fail(`cannot read a quantity in '${text}'`);
	return +m[1] * scales[m[2]];
}

const browser = await chromium.launch({ executablePath: checks.chromium, args: ['--no-sandbox'] });
const errors = [], requests = [];
try {
	const page = await browser.newPage({ viewport: { width: 1260, height: 900 } });
	page.on('console', (m) => { if (m.type() === 'error' || m.type() === 'warning') errors.push(m.text()); });
	page.on('pageerror', (e) => errors.push(String(e)));
	page.on('request', (r) => { if (!r.url().startsWith('file:')) requests.push(r.url()); });
	const started = Date.now();
	await page.goto(pathToFileURL(checks.html).href);
	await page.evaluate(() => new Promise((r) => requestAnimationFrame(() => requestAnimationFrame(r))));
	console.log(`ok loaded and drawn in ${Date.now() - started} ms`);

	const frames = () => page.evaluate(() => window.llmprofPage.frames());
	const dataset = (id) => page.$eval('#' + id, (e) => ({ text: e.textContent, share: e.dataset.share }));
	const views = await page.$$eval('#views button', (bs) => bs.map((b) => b.textContent));
	if (checks.views && JSON.stringify(views) !== JSON.stringify(checks.views))
		fail(`views ${JSON.stringify(views)}, expected ${JSON.stringify(checks.views)}`);
	console.log(`ok views ${views.join(', ')}`);
	// The first view's threads, before any switch.
	if (checks.threads) {
		const options = await page.$$eval('#thread option', (os) => os.map((o) => o.value));
		let sum = 0;
		for (const value of options.slice(1)) {
			await page.selectOption('#thread', { value });
			sum += +(await dataset('total')).share;
		}
		await page.selectOption('#thread', { value: '-1' });
		if (options.length < 2 || !near(sum, 100, 0.05))
			fail(`the ${options.length - 1} threads' shares add up to ${sum}%`);
		console.log(`ok ${options.length - 1} threads, their shares add up to ${sum.toFixed(3)}%`);
	}

	if (checks.view) {
		await page.click(`#views button:text-is("${checks.view}")`);
		const shown = await page.evaluate(() => window.llmprofPage.view());
		const active = await page.textContent('#views button.active');
		if (shown !== checks.view || active !== checks.view)
			fail(`switched to ${checks.view}, the page shows ${shown} (button ${active})`);
		console.log(`ok switched to the ${shown} view`);
	}

	const before = await frames();
	if (before.length < 2 || before[0].name !== 'all' || !near(before[0].w, 1180, 0.01))
		fail(`no full-width root among ${before.length} frames`);
	console.log(`ok ${before.length} frames drawn`);

	if (checks.process) {
		await page.selectOption('#process', { label: checks.process.name });
		const total = await dataset('total');
		if (!near(+total.share, checks.process.share, 0.01))
			fail(`process ${checks.process.name}: ${total.text}, the profile says ` +
				`${checks.process.share.toFixed(4)}%`);
		const shown = await frames();
		const roots = shown.filter((f) => f.y === shown[1].y && f.name !== 'all');
		if (roots.length !== 1 || roots[0].name !== checks.process.name || !near(roots[0].w, 1180, 0.01))
			fail(`with ${checks.process.name} selected the roots are ${JSON.stringify(roots)}`);
		console.log(`ok process ${checks.process.name}: ${total.text} ` +
			`(profile ${checks.process.share.toFixed(4)}%), drawn full width`);
		await page.selectOption('#process', { value: '-1' });
	}

	if (checks.frame) {
		const target = before.find((f) => f.name === checks.frame && !f.faded);
		if (!target)
			fail(`no frame named ${checks.frame}`);
		const box = await page.locator('#flame').boundingBox();
		await page.mouse.click(box.x + target.x + target.w / 2, box.y + target.y + 7);
		const after = await frames();
		const zoomed = after.find((f) => f.name === checks.frame && !f.faded && near(f.y, target.y, 0.01));
		if (!zoomed || !near(zoomed.x, 10, 0.01) || !near(zoomed.w, 1180, 0.01))
			fail(`clicked ${checks.frame} is ${JSON.stringify(zoomed)}, not the full width`);
		// Its descendants scaled by the same factor; frames beside it gone.
		const scale = 1180 / target.w;
		for (const b of before) {
			const inside = b.x >= target.x - 1e-3 && b.x + b.w <= target.x + target.w + 1e-3 &&
				b.y < target.y;
			const a = after.find((f) => f.name === b.name && near(f.y, b.y, 0.01) && !f.faded &&
				near(f.x, 10 + (b.x - target.x) * scale, 0.05));
			if (inside && b.w * scale >= 1 && (!a || !near(a.w, b.w * scale, 0.01 * Math.max(1, a.w))))
				fail(`descendant ${b.name} is ${JSON.stringify(a)}, expected w ${b.w * scale}`);
		}
		const zoomText = await dataset('zoomed');
		if (!zoomText.text.includes(checks.frame) || !near(+zoomText.share, 100 * target.w / 1180, 0.05))
			fail(`the zoom says '${zoomText.text}' (${zoomText.share}), the frame was ` +
				`${(100 * target.w / 1180).toFixed(3)}% wide`);
		console.log(`ok zoomed on ${checks.frame} (x${scale.toFixed(2)}): ${zoomText.text}`);
		await page.click('#unzoom');
		const reset = await frames();
		if (reset.length !== before.length || reset.some((f, i) => !near(f.w, before[i].w, 0.01)))
			fail('Reset zoom does not restore the frames');
		console.log('ok Reset zoom restores every frame');
	}

	if (checks.search) {
		await page.fill('#search', checks.search);
		const m = await dataset('matched');
		if (!/^matched: [0-9.]+%$/.test(m.text) || !near(+m.share, checks.share, 0.05))
			fail(`the search for ${checks.search} shows '${m.text}', the profile says ` +
				`${checks.share.toFixed(3)}%`);
		console.log(`ok search ${checks.search}: ${m.text} (profile ${checks.share.toFixed(3)}%)`);
	}

	for (const v of checks.values || []) {
		await page.click(`#views button:text-is("${v.view}")`);
		if (await page.evaluate(() => window.llmprofPage.view()) !== v.view)
			fail(`cannot switch to the ${v.view} view`);
		const t = await page.$eval('#total', (e) => ({ text: e.textContent, weight: e.dataset.weight }));
		const shown = quantity(t.text), expected = quantity(v.shown);
		if (+t.weight !== v.weight || !near(shown, expected, 0.01 * expected + 1))
			fail(`the ${v.view} view's total is '${t.text}' (${t.weight}), pprof says ` +
				`${v.shown} (${v.weight})`);
		const drawn = await frames();
		if (v.weight && (!drawn.length || drawn[0].name !== 'all' || !near(drawn[0].w, 1180, 0.01)))
			fail(`the ${v.view} view draws no full-width root`);
		let found = '';
		if (v.search) {
			await page.fill('#search', v.search);
			const m = await dataset('matched');
			if (!near(+m.share, v.share, 0.01))
				fail(`${v.view}: the search for ${v.search} shows '${m.text}', pprof's ` +
					`cum% is ${v.share}`);
			// The matched frames' widths say the same share.
			const widths = (await frames()).filter((f) => f.name === v.name)
				.reduce((sum, f) => sum + f.w, 0);
			if (v.name && !near(100 * widths / 1180, v.share, 0.05))
				fail(`${v.view}: ${v.name} is drawn ${widths} px wide for ${v.share}%`);
			found = `, ${v.search} ${m.text}`;
			await page.fill('#search', '');
		}
		if (v.of) {
			const of = await page.$$eval('#findings p.input, #facts p.input, #report p.input',
				(ps) => ps.map((p) => p.textContent));
			const unit = await page.$$eval('#facts tbody tr', (trs) => trs.map((tr) =>
				[...tr.children].map((td) => td.textContent)).filter((r) => r[0] === 'unit'));
			if (of.length !== 3 || of.some((t) => t !== `Of ${v.of}.`) ||
				unit.length !== 1 || unit[0][1] !== v.unit)
				fail(`${v.view}: the tables say ${JSON.stringify(of)}, unit ` +
					`${JSON.stringify(unit)}; expected ${v.of} in ${v.unit}`);
			found += `, the tables of ${v.of} (${v.unit})`;
		}
		console.log(`ok ${v.view}: ${t.text} (expected ${v.shown}, ${v.weight})${found}`);
	}

	for (const id of checks.tables || []) {
		const rows = await page.$$eval(`#${id} table tbody tr`, (trs) => trs.length);
		if (!rows)
			fail(`section ${id} has no table rows`);
		console.log(`ok ${id}: a table of ${rows} rows`);
	}
	if (checks.sort) {
		// Sorted by the first numeric column, descending after two clicks.
		const th = page.locator(`#${checks.sort} table`).first().locator('th');
		const columns = await th.count();
		let column = -1;
		for (let k = 0; k < columns && column < 0; k++) {
			const numeric = await page.locator(`#${checks.sort} table`).first()
				.locator(`tbody tr td:nth-child(${k + 1})`).first().getAttribute('class');
			if (numeric === 'num')
				column = k;
		}
		if (column < 0)
			fail(`no numeric column in ${checks.sort}`);
		const values = () => page.locator(`#${checks.sort} table`).first()
			.locator(`tbody tr td:nth-child(${column + 1})`)
			.evaluateAll((tds) => tds.map((td) => +td.dataset.sort));
		await th.nth(column).click();
		const up = await values();
		await th.nth(column).click();
		const down = await values();
		for (let i = 1; i < up.length; i++)
			if (up[i] < up[i - 1] || down[i] > down[i - 1])
				fail(`${checks.sort} is not sorted: ${up} / ${down}`);
		console.log(`ok ${checks.sort} sorted by column ${column + 1} both ways: ${down.join(' ')}`);
	}

	await page.screenshot({ path: checks.screenshot, fullPage: true });
	console.log(`ok screenshot ${checks.screenshot}`);
	if (requests.length)
		fail('the page asked the network for ' + requests.join(', '));
	if (errors.length)
		fail('console errors: ' + errors.join('; '));
	console.log('ok no console errors, no request beyond file://');
} finally {
	await browser.close();
}
