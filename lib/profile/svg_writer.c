// SPDX-License-Identifier: GPL-2.0
/*
 * Flame graphs as one self-contained interactive SVG file, as flamegraph.pl
 * and py-spy write them: a frame per function on each path, coloured by
 * what the frame is (or, for a diff, by how its share changed), with a
 * hand-written script for zoom, search and details, and no external
 * resource.  Stacks are sorted by their functions' names and merged in one
 * pass, so a frame is written when its last stack has been seen; frames
 * narrower than SVG_MIN_WIDTH are left out and counted.
 */
#include <errno.h>
#include <math.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "profile/flame_class.h"
#include "profile/function_rank.h"
#include "profile/output.h"
#include "profile/profile_diff.h"
#include "profile/python_frame.h"
#include "profile/significance.h"
#include "profile/svg_writer.h"
#include "profile/text_output.h"

#define SVG_WIDTH 1200
#define SVG_PAD 10
#define SVG_FRAME_HEIGHT 16
#define SVG_TOP 54
#define SVG_MIN_WIDTH 0.1  /* pixels: narrower frames are not drawn */
#define SVG_CHAR_WIDTH 7.0 /* of the 12 px label font, on average */
#define SVG_MATCH_FILL "rgb(230,0,230)"

/* Base colour and the range a frame's name hash spreads it over. */
static const struct {
	const char *label;
	unsigned char base[3], spread[3];
} classes[NR_FLAME_CLASSES] = {
    [FLAME_NATIVE] = {"native", {210, 40, 20}, {45, 110, 30}},
    [FLAME_PYTHON] = {"Python", {60, 170, 60}, {60, 60, 40}},
    [FLAME_KERNEL] = {"kernel", {225, 190, 60}, {30, 40, 40}},
    [FLAME_GPU] = {"GPU kernel", {130, 80, 210}, {50, 40, 40}},
    [FLAME_OFF_CPU] = {"off-CPU wait", {50, 110, 200}, {40, 50, 50}},
    [FLAME_GPU_MEMORY] = {"GPU memory", {0, 160, 160}, {40, 50, 50}},
    [FLAME_NCCL] = {"NCCL", {170, 120, 70}, {40, 40, 40}},
    [FLAME_PROCESS] = {"process, thread", {160, 160, 160}, {40, 40, 40}},
    [FLAME_UNKNOWN] = {"no symbol", {200, 120, 120}, {40, 40, 40}},
};

/* A function: what a frame of the graph is, frames differing only by line
 * merged.  rank orders functions by name, so that merged sorted stacks give
 * every frame's children in name order. */
struct svg_function {
	const char *name; /* shown */
	const char *key;  /* folded name, the identity */
	char *text;	  /* a Python frame's shown text (name and file), owned */
	const char *file;
	/* The lines its frames give, lowest and highest: a loop's samples and
	 * its calls fall on several; 0 when none knows. */
	uint32_t line, last_line;
	enum flame_class class;
};

struct svg_graph {
	struct svg_function *functions;
	uint32_t nr_functions;
	struct function_rank ranked; /* per profile frame: its function */
	/* The stacks drawn, in merge order, and their weights: [0] gives the
	 * widths, [1] (a diff's base) the colours. */
	const struct profile *profile;
	uint32_t *order;
	size_t nr_order;
	const uint64_t *weights[2];
	uint64_t total[2];
	bool diff;
	/* A diff's significance test: counts per weight and the critical z;
	 * 0 when untested. */
	double count_scale[2];
	double critical_z;
	double max_delta;
	bool inverted;
	enum profile_unit unit;
	bool classes_seen[NR_FLAME_CLASSES];
	/* Filled by the merge. */
	uint32_t max_depth;
	uint64_t drawn, omitted;
};

/* An open frame on the current path. */
struct svg_open {
	uint32_t function;
	uint64_t start;	    /* in weight[0] units from the left */
	uint64_t weight[2]; /* of every stack through it */
};

/* Gives each frame its function, ranked by folded name: the first frame of
 * a function names it, the others add a file it lacks and widen the range
 * of its lines.  0 or -ENOMEM. */
static int graph_functions(struct svg_graph *g, const struct profile *p)
{
	int err = function_rank__init(&g->ranked, p);

	if (err)
		return err;
	g->nr_functions = g->ranked.nr_functions;
	g->functions = calloc(g->nr_functions ? g->nr_functions : 1, sizeof(*g->functions));
	if (!g->functions)
		return -ENOMEM;
	for (size_t i = 0; i < p->nr_frames; i++) {
		const struct frame *f = &p->frames[i];
		uint32_t rank = g->ranked.rank[i];
		struct svg_function *function = &g->functions[rank];

		if (g->ranked.first_frame[rank] == i) {
			function->key = g->ranked.keys[i];
			if (f->kind == FRAME_PYTHON &&
			    !(function->text = python_frame__text_dup(f)))
				return -ENOMEM;
			function->name = function->text		 ? function->text
					 : f->name && f->name[0] ? f->name
								 : "[unknown]";
			function->file = f->file;
			function->line = function->last_line = f->line;
			function->class = flame_class__of(f);
			continue;
		}
		if (f->line && (!function->line || f->line < function->line))
			function->line = f->line;
		if (f->line > function->last_line)
			function->last_line = f->line;
		if (!function->file)
			function->file = f->file;
	}
	return 0;
}

static void graph_free(struct svg_graph *g)
{
	function_rank__free(&g->ranked);
	for (uint32_t i = 0; g->functions && i < g->nr_functions; i++)
		free(g->functions[i].text);
	free(g->functions);
	free(g->order);
}

static double scale_of(const struct svg_graph *g)
{
	return g->total[0] ? (SVG_WIDTH - 2.0 * SVG_PAD) / g->total[0] : 0;
}

static double frame_y(const struct svg_graph *g, uint32_t depth)
{
	if (g->inverted)
		return SVG_TOP + (double)depth * SVG_FRAME_HEIGHT;
	return SVG_TOP + (double)(g->max_depth - depth) * SVG_FRAME_HEIGHT;
}

/* A deterministic number in [0, 1) from a name, for colour variation. */
static double name_hash(const char *name)
{
	uint32_t h = 2166136261u;

	for (const unsigned char *c = (const unsigned char *)name; *c; c++)
		h = (h ^ *c) * 16777619u;
	return (h % 1000) / 1000.0;
}

/* The z of the frame's change, and the colour a diff gives it. */
static double diff_colour(const struct svg_graph *g, const struct svg_open *o, int rgb[3],
			  double *z)
{
	double base = g->total[1] ? (double)o->weight[1] / g->total[1] : 0;
	double new = g->total[0] ? (double)o->weight[0] / g->total[0] : 0;
	double delta = new - base, intensity;

	*z = 0;
	if (g->critical_z > 0) {
		*z = significance__z(
		    o->weight[1] * g->count_scale[1], g->total[1] * g->count_scale[1],
		    o->weight[0] * g->count_scale[0], g->total[0] * g->count_scale[0]);
		intensity = fabs(*z) / g->critical_z;
	} else {
		intensity = g->max_delta > 0 ? fabs(delta) / g->max_delta : 0;
	}
	if (intensity > 1)
		intensity = 1;
	/* Under the critical z a change is noise: pale, never white. */
	if (g->critical_z > 0 && intensity < 1)
		intensity *= 0.5;
	rgb[0] = rgb[1] = rgb[2] = 255 - (int)(intensity * 200);
	if (delta > 0)
		rgb[0] = 255;
	else if (delta < 0)
		rgb[2] = 255;
	else
		rgb[0] = rgb[1] = rgb[2] = 235;
	return delta;
}

static void write_share(FILE *out, const struct svg_graph *g, uint64_t weight, uint64_t total)
{
	char text[64];

	text_output__weight(text, sizeof(text), weight, g->unit);
	fprintf(out, "%s%s (%.2f%%)", text, g->unit == UNIT_SAMPLES ? " samples" : "",
		total ? 100.0 * weight / total : 0.0);
}

/* Writes the open frame o at depth (0 is the root, "all"). */
static void write_frame(FILE *out, const struct svg_graph *g, const struct svg_open *o,
			uint32_t depth)
{
	const struct svg_function *f = depth ? &g->functions[o->function] : NULL;
	const char *name = f ? f->name : "all";
	double x = SVG_PAD + o->start * scale_of(g), width = o->weight[0] * scale_of(g);
	int rgb[3];
	double z = 0, delta = 0;

	if (g->diff) {
		delta = diff_colour(g, o, rgb, &z);
	} else {
		enum flame_class c = f ? f->class : FLAME_PROCESS;
		double v = name_hash(f ? f->key : name);

		for (int i = 0; i < 3; i++)
			rgb[i] = classes[c].base[i] + (int)(classes[c].spread[i] * (i ? 1 - v : v));
	}
	fputs("<g><title>", out);
	text_output__xml_text(out, name, SIZE_MAX);
	if (f && f->file) {
		fputc('\n', out);
		text_output__xml_text(out, f->file, SIZE_MAX);
		if (f->line)
			fprintf(out, ":%u", f->line);
		if (f->last_line > f->line)
			fprintf(out, "-%u", f->last_line);
	}
	fputc('\n', out);
	if (g->diff) {
		fprintf(out, "base %.2f%%, new %.2f%%: %+.2f points",
			g->total[1] ? 100.0 * o->weight[1] / g->total[1] : 0.0,
			g->total[0] ? 100.0 * o->weight[0] / g->total[0] : 0.0, 100 * delta);
		if (g->critical_z > 0)
			fprintf(out, ", z %.1f (%s)", z,
				fabs(z) >= g->critical_z ? "significant" : "within noise");
	} else {
		write_share(out, g, o->weight[0], g->total[0]);
	}
	fprintf(out,
		"</title><rect x=\"%.3f\" y=\"%.0f\" width=\"%.3f\" height=\"%d\" "
		"fill=\"rgb(%d,%d,%d)\"/>",
		x, frame_y(g, depth), width, SVG_FRAME_HEIGHT - 1, rgb[0], rgb[1], rgb[2]);
	if (width >= 3 * SVG_CHAR_WIDTH + 3) {
		fprintf(out, "<text x=\"%.2f\" y=\"%.1f\">", x + 3, frame_y(g, depth) + 11.5);
		text_output__xml_text(out, name, (size_t)((width - 3) / SVG_CHAR_WIDTH));
		fputs("</text>", out);
	}
	fputs("</g>\n", out);
}

/* Closes the open frame at depth: draws it, or counts it as too narrow. */
static void close_frame(FILE *out, struct svg_graph *g, const struct svg_open *o, uint32_t depth)
{
	if (o->weight[0] * scale_of(g) < SVG_MIN_WIDTH) {
		g->omitted++;
		return;
	}
	if (!out) {
		if (depth > g->max_depth)
			g->max_depth = depth;
		if (depth)
			g->classes_seen[g->functions[o->function].class] = true;
		return;
	}
	g->drawn++;
	write_frame(out, g, o, depth);
}

/*
 * Merges the sorted stacks into frames: out NULL measures (the depth, the
 * classes drawn), otherwise writes every frame wide enough.  0 or -ENOMEM.
 */
static int graph_merge(struct svg_graph *g, FILE *out)
{
	struct svg_open *path = NULL;
	uint32_t depth = 0, cap = 0;
	uint64_t position = 0;

	g->omitted = g->drawn = 0;
	for (size_t i = 0; i <= g->nr_order; i++) {
		const struct stack *s = i < g->nr_order ? &g->profile->stacks[g->order[i]] : NULL;
		uint32_t common = 0, sdepth = s ? s->depth : 0;

		while (s && common < depth && common < sdepth &&
		       path[common + 1].function == g->ranked.rank[s->frames[common]])
			common++;
		for (; depth > common; depth--)
			close_frame(out, g, &path[depth], depth);
		if (!s)
			break;
		if (sdepth + 1 > cap) {
			struct svg_open *bigger = realloc(path, (sdepth + 17) * sizeof(*path));

			if (!bigger) {
				free(path);
				return -ENOMEM;
			}
			if (!cap)
				memset(&bigger[0], 0, sizeof(bigger[0]));
			path = bigger;
			cap = sdepth + 17;
		}
		for (; depth < sdepth; depth++) {
			path[depth + 1] = (struct svg_open){
			    .function = g->ranked.rank[s->frames[depth]],
			    .start = position,
			};
		}
		for (uint32_t d = 0; d <= depth; d++) {
			path[d].weight[0] += g->weights[0][g->order[i]];
			if (g->weights[1])
				path[d].weight[1] += g->weights[1][g->order[i]];
		}
		position += g->weights[0][g->order[i]];
	}
	if (path)
		close_frame(out, g, &path[0], 0);
	else if (!g->nr_order)
		g->omitted = 0;
	free(path);
	return 0;
}

static const char svg_style[] = "<style>\n"
				"text{font-family:Verdana,sans-serif;font-size:12px;fill:#000}\n"
				"#frames text{pointer-events:none}\n"
				"#frames rect{rx:2px;ry:2px}\n"
				"#frames g:hover rect{stroke:#000;stroke-width:0.5}\n"
				"#frames g{cursor:pointer}\n"
				"#frames g.parent{opacity:0.5}\n"
				"#frames g.hide{display:none}\n"
				".button{cursor:pointer}\n"
				".button:hover{text-decoration:underline}\n"
				"#title{font-size:17px;text-anchor:middle}\n"
				"#subtitle{fill:#555;text-anchor:middle}\n"
				"#unzoom{opacity:0}\n"
				"#search,#matched{text-anchor:end}\n"
				"</style>\n";

/* The interaction: click zooms, "Reset Zoom" or Escape resets, "Search" or
 * Ctrl-F asks for a regular expression and reports the share of the
 * matched frames (each counted once, not inside another match); the URL's
 * ?s=TERM searches on load.  No external resource. */
static const char svg_script[] =
    "<script type=\"text/ecmascript\"><![CDATA[\n"
    "'use strict';\n"
    "(function () {\n"
    "var svg = document.querySelector('svg[data-pad]'), ns = 'http://www.w3.org/2000/svg';\n"
    "var inverted = svg.getAttribute('data-inverted') === '1';\n"
    "var pad = +svg.getAttribute('data-pad'), full = +svg.getAttribute('width') - 2 * pad;\n"
    "var charWidth = +svg.getAttribute('data-char-width');\n"
    "var matchFill = svg.getAttribute('data-match-fill');\n"
    "var frames = document.getElementById('frames');\n"
    "var details = document.getElementById('details');\n"
    "var matched = document.getElementById('matched');\n"
    "var unzoomButton = document.getElementById('unzoom');\n"
    "var items = [], byNode = new Map(), zoomed = null, term = null;\n"
    "for (var g = frames.firstElementChild; g; g = g.nextElementSibling) {\n"
    "  var rect = g.querySelector('rect'), title = g.querySelector('title').textContent;\n"
    "  var lines = title.split('\\n');\n"
    "  var item = { g: g, rect: rect, text: g.querySelector('text'), name: lines[0],\n"
    "    info: lines.slice(1).join(', '), x: +rect.getAttribute('x'),\n"
    "    w: +rect.getAttribute('width'), y: +rect.getAttribute('y'),\n"
    "    fill: rect.getAttribute('fill') };\n"
    "  items.push(item);\n"
    "  byNode.set(g, item);\n"
    "}\n"
    "function label(item, x, w) {\n"
    "  var fit = Math.floor((w - 3) / charWidth), text = '';\n"
    "  if (fit >= 3)\n"
    "    text = item.name.length <= fit ? item.name : item.name.substring(0, fit - 2) + '..';\n"
    "  if (!item.text) {\n"
    "    if (!text)\n"
    "      return;\n"
    "    item.text = document.createElementNS(ns, 'text');\n"
    "    item.text.setAttribute('y', (item.y + 11.5).toFixed(1));\n"
    "    item.g.appendChild(item.text);\n"
    "  }\n"
    "  item.text.setAttribute('x', (x + 3).toFixed(2));\n"
    "  item.text.textContent = text;\n"
    "}\n"
    "function place(item, x, w, cls) {\n"
    "  item.g.setAttribute('class', cls);\n"
    "  if (cls === 'hide')\n"
    "    return;\n"
    "  item.rect.setAttribute('x', x.toFixed(3));\n"
    "  item.rect.setAttribute('width', w.toFixed(3));\n"
    "  label(item, x, w);\n"
    "}\n"
    "function zoom(target) {\n"
    "  var scale = full / target.w, eps = 1e-3;\n"
    "  zoomed = target;\n"
    "  unzoomButton.style.opacity = 1;\n"
    "  items.forEach(function (it) {\n"
    "    var above = inverted ? it.y >= target.y : it.y <= target.y;\n"
    "    if (above && it.x >= target.x - eps && it.x + it.w <= target.x + target.w + eps)\n"
    "      place(it, pad + (it.x - target.x) * scale, it.w * scale, '');\n"
    "    else if (!above && it.x <= target.x + eps && it.x + it.w >= target.x + target.w - eps)\n"
    "      place(it, pad, full, 'parent');\n"
    "    else\n"
    "      place(it, 0, 0, 'hide');\n"
    "  });\n"
    "}\n"
    "function unzoom() {\n"
    "  zoomed = null;\n"
    "  unzoomButton.style.opacity = 0;\n"
    "  items.forEach(function (it) { place(it, it.x, it.w, ''); });\n"
    "}\n"
    "function search(text) {\n"
    "  var re = null, intervals = [], share = 0, end = -1;\n"
    "  term = text || null;\n"
    "  if (term) {\n"
    "    try { re = new RegExp(term); } catch (e) {\n"
    "      re = new RegExp(term.replace(/[.*+?^${}()|[\\]\\\\]/g, '\\\\$&'));\n"
    "    }\n"
    "  }\n"
    "  items.forEach(function (it) {\n"
    "    var hit = re !== null && it !== items[items.length - 1] && re.test(it.name);\n"
    "    it.rect.setAttribute('fill', hit ? matchFill : it.fill);\n"
    "    if (hit)\n"
    "      intervals.push(it);\n"
    "  });\n"
    "  intervals.sort(function (a, b) { return a.x - b.x || b.w - a.w; });\n"
    "  intervals.forEach(function (it) {\n"
    "    if (it.x >= end - 1e-3) {\n"
    "      share += it.w;\n"
    "      end = it.x + it.w;\n"
    "    }\n"
    "  });\n"
    "  matched.textContent = term ? 'Matched: ' + (100 * share / full).toFixed(2) + '%' : '';\n"
    "  document.getElementById('search').textContent = term ? 'Reset Search' : 'Search';\n"
    "}\n"
    "function ask() {\n"
    "  if (term) {\n"
    "    search(null);\n"
    "    return;\n"
    "  }\n"
    "  var text = window.prompt('Search frames for (a regular expression)', '');\n"
    "  if (text)\n"
    "    search(text);\n"
    "}\n"
    "frames.addEventListener('click', function (e) {\n"
    "  var it = byNode.get(e.target.closest('g'));\n"
    "  if (it)\n"
    "    zoom(it);\n"
    "});\n"
    "frames.addEventListener('mouseover', function (e) {\n"
    "  var it = byNode.get(e.target.closest('g'));\n"
    "  details.textContent = it ? it.name + ' (' + it.info + ')' : ' ';\n"
    "});\n"
    "unzoomButton.addEventListener('click', unzoom);\n"
    "document.getElementById('search').addEventListener('click', ask);\n"
    "window.addEventListener('keydown', function (e) {\n"
    "  if ((e.ctrlKey || e.metaKey) && e.key === 'f') {\n"
    "    e.preventDefault();\n"
    "    ask();\n"
    "  } else if (e.key === 'Escape') {\n"
    "    unzoom();\n"
    "  }\n"
    "});\n"
    "var params = new URLSearchParams(window.location.search);\n"
    "if (params.get('s'))\n"
    "  search(params.get('s'));\n"
    "})();\n"
    "]]></script>\n";

static void write_legend(FILE *out, const struct svg_graph *g, double y)
{
	double x = SVG_PAD;

	if (g->diff) {
		static const char *const labels[] = {"grew", "shrank"};
		static const char *const fills[] = {"rgb(255,55,55)", "rgb(55,55,255)"};

		for (int i = 0; i < 2; i++, x += 90)
			fprintf(out,
				"<rect x=\"%.0f\" y=\"%.0f\" width=\"12\" height=\"12\" "
				"fill=\"%s\"/><text x=\"%.0f\" y=\"%.0f\">%s</text>\n",
				x, y - 10, fills[i], x + 16, y, labels[i]);
		fprintf(out,
			"<text x=\"%.0f\" y=\"%.0f\">width: the new profile; colour: "
			"%s</text>\n",
			x, y,
			g->critical_z > 0 ? "deep where the change is significant (z past the "
					    "diff gate's critical value), pale within noise"
					  : "by the change of share (no significance test)");
		return;
	}
	for (int c = 0; c < NR_FLAME_CLASSES; c++) {
		if (!g->classes_seen[c])
			continue;
		fprintf(out,
			"<rect x=\"%.0f\" y=\"%.0f\" width=\"12\" height=\"12\" "
			"fill=\"rgb(%d,%d,%d)\"/><text x=\"%.0f\" y=\"%.0f\">%s</text>\n",
			x, y - 10, classes[c].base[0] + classes[c].spread[0] / 2,
			classes[c].base[1] + classes[c].spread[1] / 2,
			classes[c].base[2] + classes[c].spread[2] / 2, x + 16, y, classes[c].label);
		x += 16 + SVG_CHAR_WIDTH * strlen(classes[c].label) + 20;
	}
}

static int graph_write(FILE *out, struct svg_graph *g, const char *title, const char *subtitle)
{
	double frames_end, height;
	int err;

	if (g->nr_order > 1)
		function_rank__sort_stacks(&g->ranked, g->order, g->nr_order);
	err = graph_merge(g, NULL);
	if (err)
		return err;
	frames_end = SVG_TOP + (g->max_depth + 1.0) * SVG_FRAME_HEIGHT;
	height = frames_end + 48;
	fprintf(out,
		"<?xml version=\"1.0\" encoding=\"UTF-8\" standalone=\"no\"?>\n"
		"<svg version=\"1.1\" xmlns=\"http://www.w3.org/2000/svg\" width=\"%d\" "
		"height=\"%.0f\" viewBox=\"0 0 %d %.0f\" data-inverted=\"%d\" data-pad=\"%d\" "
		"data-char-width=\"%.1f\" data-match-fill=\"%s\">\n",
		SVG_WIDTH, height, SVG_WIDTH, height, g->inverted, SVG_PAD, SVG_CHAR_WIDTH,
		SVG_MATCH_FILL);
	fputs(svg_style, out);
	fprintf(out, "<rect x=\"0\" y=\"0\" width=\"100%%\" height=\"100%%\" fill=\"%s\"/>\n",
		g->diff ? "#f8f8f8" : "#fcfcf4");
	fputs("<text id=\"title\" x=\"600\" y=\"24\">", out);
	text_output__xml_text(out, title, 140);
	fputs("</text>\n<text id=\"subtitle\" x=\"600\" y=\"42\">", out);
	text_output__xml_text(out, subtitle, SIZE_MAX);
	if (g->omitted)
		fprintf(out, "; %llu frame%s narrower than %.1f px not drawn",
			(unsigned long long)g->omitted, g->omitted == 1 ? "" : "s", SVG_MIN_WIDTH);
	fprintf(out,
		"</text>\n"
		"<text id=\"unzoom\" class=\"button\" x=\"%d\" y=\"24\">Reset Zoom</text>\n"
		"<text id=\"search\" class=\"button\" x=\"%d\" y=\"24\">Search</text>\n"
		"<text id=\"matched\" x=\"%d\" y=\"%.0f\"></text>\n"
		"<text id=\"details\" x=\"%d\" y=\"%.0f\"> </text>\n",
		SVG_PAD, SVG_WIDTH - SVG_PAD, SVG_WIDTH - SVG_PAD, frames_end + 18, SVG_PAD,
		frames_end + 18);
	write_legend(out, g, frames_end + 40);
	fputs("<g id=\"frames\">\n", out);
	err = graph_merge(g, out);
	if (err)
		return err;
	fputs("</g>\n", out);
	fputs(svg_script, out);
	fputs("</svg>\n", out);
	return fflush(out) || ferror(out) ? -EIO : 0;
}

int svg__write(const struct profile *p, enum output_view view, bool inverted, FILE *out)
{
	struct svg_graph g = {.profile = p, .inverted = inverted, .unit = p->unit};
	uint64_t *weights = calloc(p->nr_stacks ? p->nr_stacks : 1, sizeof(*weights));
	char subtitle[256], total[64];
	int err;

	g.order = calloc(p->nr_stacks ? p->nr_stacks : 1, sizeof(*g.order));
	err = g.order && weights ? graph_functions(&g, p) : -ENOMEM;
	if (err)
		goto cleanup;
	for (size_t i = 0; i < p->nr_stacks; i++) {
		const struct stack *s = &p->stacks[i];

		weights[i] = s->weight;
		if (!s->weight || !s->depth ||
		    (view != VIEW_ALL && profile__stack_is_gpu(p, i) != (view == VIEW_GPU)))
			continue;
		g.order[g.nr_order++] = i;
		g.total[0] += s->weight;
	}
	g.weights[0] = weights;
	text_output__weight(total, sizeof(total), g.total[0], p->unit);
	snprintf(subtitle, sizeof(subtitle), "%s%s in %zu stacks; click to zoom, Ctrl-F to search",
		 total, p->unit == UNIT_SAMPLES ? " samples" : "", g.nr_order);
	err = graph_write(out, &g, p->name && p->name[0] ? p->name : "Flame Graph", subtitle);
cleanup:
	graph_free(&g);
	free(weights);
	return err;
}

int svg__write_diff(const struct profile_diff *d, const char *base_name, const char *new_name,
		    FILE *out)
{
	const struct profile *p = d->merged;
	struct svg_graph g = {
	    .profile = p,
	    .diff = true,
	    .unit = d->unit[DIFF_NEW],
	    .total = {d->weight[DIFF_NEW], d->weight[DIFF_BASE]},
	    .weights = {d->stack_weights[DIFF_NEW], d->stack_weights[DIFF_BASE]},
	};
	char title[512], subtitle[256];
	int err;

	g.order = calloc(p->nr_stacks ? p->nr_stacks : 1, sizeof(*g.order));
	err = g.order ? graph_functions(&g, p) : -ENOMEM;
	if (err)
		goto cleanup;
	for (size_t i = 0; i < p->nr_stacks; i++) {
		if (g.weights[0][i])
			g.order[g.nr_order++] = i;
	}
	if (d->significance == SIGNIFICANCE_TESTED && d->critical_z > 0) {
		g.critical_z = d->critical_z;
		g.count_scale[0] = d->count_scale[DIFF_NEW];
		g.count_scale[1] = d->count_scale[DIFF_BASE];
	}
	for (size_t i = 0; i < d->nr_functions; i++)
		if (fabs(d->functions[i].delta_total) / 100 > g.max_delta)
			g.max_delta = fabs(d->functions[i].delta_total) / 100;
	snprintf(title, sizeof(title), "%s -> %s", base_name ? base_name : "BASE",
		 new_name ? new_name : "NEW");
	snprintf(subtitle, sizeof(subtitle),
		 "differential flame graph: red grew, blue shrank; %zu regression%s",
		 profile_diff__regressions(d), profile_diff__regressions(d) == 1 ? "" : "s");
	err = graph_write(out, &g, title, subtitle);
cleanup:
	graph_free(&g);
	return err;
}
