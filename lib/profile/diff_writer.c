// SPDX-License-Identifier: GPL-2.0
/*
 * Writing a comparison (profile_diff.c builds it): the tables' rows in
 * order, and the text, markdown, JSON and folded forms of the result, with
 * the legend and the noise floor the verdict used.
 */
#include <errno.h>
#include <math.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "array.h"
#include "profile/diff_private.h"
#include "profile/profile_diff.h"
#include "profile/significance.h"
#include "profile/svg_writer.h"
#include "profile/text_output.h"

/* ---- ordering for the tables ------------------------------------------ */

/* What one table shows: one metric of the functions, or the stacks. */
enum diff_table {
	TABLE_SELF = 0,
	TABLE_TOTAL,
	TABLE_STACKS,
};

struct diff_row {
	const char *name; /* NULL for a stack: see stack */
	uint32_t stack;
	uint64_t base, new;		  /* weights */
	uint64_t base_weight, new_weight; /* totals, to tell an exact tie */
	double base_share, new_share, delta;
	bool shown, regression;
	bool within_noise; /* grew past the threshold, not past the noise */
};

static struct diff_row table_row(const struct profile_diff *d, enum diff_table table, size_t i)
{
	struct diff_row r = {.base_weight = d->weight[DIFF_BASE],
			     .new_weight = d->weight[DIFF_NEW]};

	if (table == TABLE_STACKS) {
		const struct diff_stack *s = &d->stacks[i];

		r.stack = s->stack;
		r.base = s->base;
		r.new = s->new;
		r.base_share = s->base_share;
		r.new_share = s->new_share;
		r.delta = s->delta;
		r.shown = s->shown;
		r.regression = s->regression;
		r.within_noise = r.shown && diff__grew(&d->options, r.delta) && !r.regression;
		return r;
	}
	{
		const struct diff_function *f = &d->functions[i];
		bool self = table == TABLE_SELF;

		r.name = f->name;
		r.base = self ? f->base_self : f->base_total;
		r.new = self ? f->new_self : f->new_total;
		r.base_share = self ? f->base_self_share : f->base_total_share;
		r.new_share = self ? f->new_self_share : f->new_total_share;
		r.delta = self ? f->delta_self : f->delta_total;
		r.shown = self ? f->self_shown : f->total_shown;
		r.regression = self ? f->self_regression : f->total_regression;
		r.within_noise = r.shown && diff__grew(&d->options, r.delta) && !r.regression;
	}
	return r;
}

/* Whether the shares differ, decided on the weights so that rounding does
 * not make an unchanged share look changed. */
static bool row_changed(const struct diff_row *r)
{
	/* The share in an empty profile is 0. */
	if (!r->base_weight || !r->new_weight)
		return (r->base_weight && r->base) || (r->new_weight && r->new);
	return (unsigned __int128)r->base * r->new_weight !=
	       (unsigned __int128)r->new * r->base_weight;
}

struct sort_context {
	const struct profile_diff *diff;
	enum diff_table table;
};

static struct sort_context sort_context; /* qsort has no context argument */

static double sort_key(const struct profile_diff *d, enum diff_table table, size_t i)
{
	if (table == TABLE_STACKS)
		return fabs(d->stacks[i].delta);
	if (table == TABLE_SELF)
		return fabs(d->functions[i].delta_self);
	return fabs(d->functions[i].delta_total);
}

static int compare_rows(const void *a, const void *b)
{
	const struct profile_diff *d = sort_context.diff;
	size_t x = *(const size_t *)a, y = *(const size_t *)b;
	double kx = sort_key(d, sort_context.table, x), ky = sort_key(d, sort_context.table, y);

	if (kx != ky)
		return kx > ky ? -1 : 1;
	/* Names are unique within a table, so the order is total. */
	if (sort_context.table == TABLE_STACKS)
		return diff__compare_stack_text(d->merged, d->stacks[x].stack, d->stacks[y].stack);
	return strcmp(d->functions[x].name, d->functions[y].name);
}

/* Functions for JSON: by the larger of the two changes, then by name. */
static int compare_functions(const void *a, const void *b)
{
	const struct profile_diff *d = sort_context.diff;
	const struct diff_function *x = &d->functions[*(const size_t *)a];
	const struct diff_function *y = &d->functions[*(const size_t *)b];
	double kx = fmax(fabs(x->delta_self), fabs(x->delta_total));
	double ky = fmax(fabs(y->delta_self), fabs(y->delta_total));

	if (kx != ky)
		return kx > ky ? -1 : 1;
	return strcmp(x->name, y->name);
}

/* Indices of a table's rows, largest change first.  Returns NULL on
 * -ENOMEM. */
static size_t *sorted_rows(const struct profile_diff *d, enum diff_table table, size_t *nr)
{
	size_t n = table == TABLE_STACKS ? d->nr_stacks : d->nr_functions;
	size_t *order = malloc((n ? n : 1) * sizeof(*order));

	if (!order)
		return NULL;
	for (size_t i = 0; i < n; i++)
		order[i] = i;
	sort_context = (struct sort_context){.diff = d, .table = table};
	qsort(order, n, sizeof(*order), compare_rows);
	*nr = n;
	return order;
}

/* Whether row x comes before row y in a table. */
static bool row_before(size_t x, size_t y)
{
	return compare_rows(&x, &y) < 0;
}

static void heap_sift_down(size_t *heap, size_t n, size_t i)
{
	for (;;) {
		size_t last = i, left = 2 * i + 1, right = left + 1, t;

		if (left < n && row_before(heap[last], heap[left]))
			last = left;
		if (right < n && row_before(heap[last], heap[right]))
			last = right;
		if (last == i)
			return;
		t = heap[i];
		heap[i] = heap[last];
		heap[last] = t;
		i = last;
	}
}

static void heap_sift_up(size_t *heap, size_t i)
{
	while (i && row_before(heap[(i - 1) / 2], heap[i])) {
		size_t parent = (i - 1) / 2, t = heap[i];

		heap[i] = heap[parent];
		heap[parent] = t;
		i = parent;
	}
}

/*
 * The rows a text or markdown table lists, in order: the top N changes
 * (every change with top 0) and every regression past them.  A heap of the
 * top N spares sorting every stack of two large profiles for ten rows.
 * Returns NULL on -ENOMEM.
 */
static size_t *listed_rows(const struct profile_diff *d, enum diff_table table, size_t top,
			   size_t *nr)
{
	size_t n = table == TABLE_STACKS ? d->nr_stacks : d->nr_functions;
	size_t *rows = malloc((n ? n : 1) * sizeof(*rows));
	size_t nr_heap = 0, nr_extra = 0;

	if (!rows)
		return NULL;
	sort_context = (struct sort_context){.diff = d, .table = table};
	/* rows[0, nr_heap) is a heap with the last row of the top N at its
	 * root; regressions pushed out of it collect from the end. */
	for (size_t i = 0; i < n; i++) {
		struct diff_row r = table_row(d, table, i);
		size_t left_out = i;

		if (!r.shown || !row_changed(&r))
			continue;
		if (!top) {
			rows[nr_heap++] = i;
			continue;
		}
		if (nr_heap < top) {
			rows[nr_heap] = i;
			heap_sift_up(rows, nr_heap++);
			continue;
		}
		if (row_before(i, rows[0])) {
			left_out = rows[0];
			rows[0] = i;
			heap_sift_down(rows, nr_heap, 0);
		}
		if (table_row(d, table, left_out).regression)
			rows[n - ++nr_extra] = left_out;
	}
	memmove(rows + nr_heap, rows + n - nr_extra, nr_extra * sizeof(*rows));
	*nr = nr_heap + nr_extra;
	qsort(rows, *nr, sizeof(*rows), compare_rows);
	return rows;
}

/* ---- writers ---------------------------------------------------------- */

static void describe_weight(char *buf, size_t size, uint64_t weight, enum profile_unit unit)
{
	if (unit == UNIT_SAMPLES) {
		snprintf(buf, size, "%llu samples", (unsigned long long)weight);
		return;
	}
	text_output__weight(buf, size, weight, unit);
}

static const char *const table_titles[] = {
    [TABLE_SELF] = "Self share",
    [TABLE_TOTAL] = "Total share",
    [TABLE_STACKS] = "Stack share",
};

static const char *row_marker(const struct diff_row *r, const char *regression,
			      const char *within_noise)
{
	return r->regression ? regression : r->within_noise ? within_noise : "";
}

/* The samples of one side, "~" before an estimate. */
static void describe_samples(char *buf, size_t size, const struct profile_diff *d,
			     enum diff_side side)
{
	snprintf(buf, size, "%s%.0f", d->unit[side] != UNIT_SAMPLES ? "~" : "", d->samples[side]);
}

/*
 * The lines under the header that say what a marker means and how large a
 * change sampling noise explains; prefix and the markers differ between
 * text and Markdown.
 */
static void write_legend(const struct profile_diff *d, const char *regression,
			 const char *within_noise, const char *line_end, FILE *out)
{
	const struct diff_options *o = &d->options;
	bool tested = d->significance == SIGNIFICANCE_TESTED;
	char base[32], new[32];

	fprintf(out, "%s marks a regression: a share that grew by more than %.2f points%s",
		regression, o->threshold, tested ? ", beyond sampling noise" : "");
	if (o->min_share > 0)
		fprintf(out, " (shares under %.2f%% in both profiles are ignored)", o->min_share);
	fprintf(out, ".%s\n", line_end);
	if (!tested) {
		fprintf(out, "noise floor: not tested (%s); the threshold alone decides.\n",
			diff_significance__describe(d->significance));
		return;
	}
	fprintf(out,
		"%s marks a share that grew by more than %.2f points within sampling noise.%s\n",
		within_noise, o->threshold, line_end);
	describe_samples(base, sizeof(base), d, DIFF_BASE);
	describe_samples(new, sizeof(new), d, DIFF_NEW);
	fprintf(out,
		"noise floor at %g%% confidence: ±%.2f points for %s vs %s samples (a 50%% share; "
		"Holm over %zu test%s",
		o->confidence, d->noise_floor, base, new, d->nr_tests, d->nr_tests == 1 ? "" : "s");
	if (d->samples_estimated)
		fprintf(out, "; time counted as samples at %u vs %u Hz", d->frequency[DIFF_BASE],
			d->frequency[DIFF_NEW]);
	fprintf(out, ").\n");
}

/* "by more than 1.00 points" and, when tested, "beyond sampling noise". */
static const char *noise_words(const struct profile_diff *d)
{
	return d->significance == SIGNIFICANCE_TESTED ? " beyond sampling noise" : "";
}

static int write_text_table(const struct profile_diff *d, enum diff_table table, size_t top,
			    FILE *out)
{
	size_t nr, listed = 0;
	size_t *order = listed_rows(d, table, top, &nr);

	if (!order)
		return -ENOMEM;
	fprintf(out, "\n%s, largest changes:\n", table_titles[table]);
	fprintf(out, "%2s %8s %8s %8s  %s\n", "", "BASE", "NEW", "DELTA",
		table == TABLE_STACKS ? "STACK" : "FUNCTION");
	for (size_t i = 0; i < nr; i++) {
		struct diff_row r = table_row(d, table, order[i]);
		char *text = NULL;

		if (!r.name) {
			text = diff__stack_text(d->merged, r.stack);
			if (!text) {
				free(order);
				return -ENOMEM;
			}
		}
		listed++;
		fprintf(out, "%2s %7.2f%% %7.2f%% %+8.2f  %s\n", row_marker(&r, "!", "~"),
			r.base_share, r.new_share, r.delta, text ? text : r.name);
		free(text);
	}
	if (!listed)
		fprintf(out, "%2s (no changes)\n", "");
	free(order);
	return 0;
}

static int write_text(const struct profile_diff *d, const struct diff_labels *l, FILE *out)
{
	char base_weight[64], new_weight[64];
	size_t regressions = profile_diff__regressions(d);
	int err = 0;

	describe_weight(base_weight, sizeof(base_weight), d->weight[DIFF_BASE], d->unit[DIFF_BASE]);
	describe_weight(new_weight, sizeof(new_weight), d->weight[DIFF_NEW], d->unit[DIFF_NEW]);
	fprintf(out, "base: %s (%s, %s, %zu stacks)\n", l->base_name, l->base_format, base_weight,
		d->nr_side_stacks[DIFF_BASE]);
	fprintf(out, "new:  %s (%s, %s, %zu stacks)\n", l->new_name, l->new_format, new_weight,
		d->nr_side_stacks[DIFF_NEW]);
	fprintf(out, "Shares are percent of each profile's own total; DELTA is NEW - BASE in "
		     "percentage points.\n");
	write_legend(d, "!", "~", "", out);
	for (enum diff_table t = TABLE_SELF; !err && t <= TABLE_STACKS; t++)
		err = write_text_table(d, t, l->top, out);
	if (err)
		return err;
	if (regressions)
		fprintf(
		    out,
		    "\nREGRESSION: %zu share%s grew by more than %.2f points%s (self %zu, total "
		    "%zu, stacks %zu)",
		    regressions, regressions == 1 ? "" : "s", d->options.threshold, noise_words(d),
		    d->self_regressions, d->total_regressions, d->stack_regressions);
	else
		fprintf(out, "\nOK: no share grew by more than %.2f points%s", d->options.threshold,
			noise_words(d));
	if (d->within_noise)
		fprintf(out, "; %zu grew by more within the noise", d->within_noise);
	fprintf(out, "\n");
	return 0;
}

static int write_markdown_table(const struct profile_diff *d, enum diff_table table, size_t top,
				FILE *out)
{
	size_t nr, listed = 0;
	size_t *order = listed_rows(d, table, top, &nr);

	if (!order)
		return -ENOMEM;
	fprintf(out, "\n### %s\n\n", table_titles[table]);
	for (size_t i = 0; i < nr; i++) {
		struct diff_row r = table_row(d, table, order[i]);
		char *text = NULL;

		if (!r.name) {
			text = diff__stack_text(d->merged, r.stack);
			if (!text) {
				free(order);
				return -ENOMEM;
			}
		}
		if (!listed++)
			fprintf(out,
				"| | %s | Base | New | Δ |\n| --- | --- | ---: | ---: | ---: |\n",
				table == TABLE_STACKS ? "Stack" : "Function");
		fprintf(out, "| %s | ", row_marker(&r, "**!**", "~"));
		text_output__markdown_code(out, text ? text : r.name);
		fprintf(out, " | %.2f%% | %.2f%% | %+.2f |\n", r.base_share, r.new_share, r.delta);
		free(text);
	}
	if (!listed)
		fprintf(out, "No changes.\n");
	free(order);
	return 0;
}

static int write_markdown(const struct profile_diff *d, const struct diff_labels *l, FILE *out)
{
	char base_weight[64], new_weight[64];
	size_t regressions = profile_diff__regressions(d);
	int err = 0;

	describe_weight(base_weight, sizeof(base_weight), d->weight[DIFF_BASE], d->unit[DIFF_BASE]);
	describe_weight(new_weight, sizeof(new_weight), d->weight[DIFF_NEW], d->unit[DIFF_NEW]);
	if (regressions)
		fprintf(out, "## llmprof diff: %zu regression%s\n\n", regressions,
			regressions == 1 ? "" : "s");
	else
		fprintf(out, "## llmprof diff: no regression\n\n");
	fprintf(out, "Base ");
	text_output__markdown_code(out, l->base_name);
	fprintf(out, " (%s, %s), new ", l->base_format, base_weight);
	text_output__markdown_code(out, l->new_name);
	fprintf(out, " (%s, %s).\n", l->new_format, new_weight);
	fprintf(out,
		"Shares are percent of each profile's own total; Δ is new − base in percentage "
		"points.\n");
	write_legend(d, "**!**", "~", "  ", out);
	for (enum diff_table t = TABLE_SELF; !err && t <= TABLE_STACKS; t++)
		err = write_markdown_table(d, t, l->top, out);
	return err;
}

static void json_side(FILE *out, const char *key, const char *name, const char *format,
		      enum profile_unit unit, uint64_t weight, size_t stacks)
{
	fprintf(out, "  \"%s\": {\"file\": ", key);
	text_output__json_string(out, name);
	fprintf(out, ", \"format\": ");
	text_output__json_string(out, format);
	fprintf(out, ", \"unit\": \"%s\", \"weight\": %llu, \"stacks\": %zu},\n",
		unit__name(unit, UNIT_NAME_REPORT_COUNT), (unsigned long long)weight, stacks);
}

static void json_field(FILE *out, const char *key, double value)
{
	fprintf(out, ", \"%s\": ", key);
	text_output__json_number(out, value);
}

/* A p-value: three significant digits, since they run far below 0.0001;
 * null when the share was not tested. */
static void json_p_value(FILE *out, const char *key, double p)
{
	if (isnan(p))
		fprintf(out, ", \"%s\": null", key);
	else
		fprintf(out, ", \"%s\": %.3g", key, p);
}

static void json_significance(const struct profile_diff *d, FILE *out)
{
	fprintf(out, "  \"significance\": {\"tested\": %s, \"method\": ",
		d->significance == SIGNIFICANCE_TESTED ? "true" : "false");
	text_output__json_string(out, diff_significance__describe(d->significance));
	if (d->significance != SIGNIFICANCE_TESTED) {
		fprintf(out, "},\n");
		return;
	}
	fprintf(out, ", \"base_samples\": %.0f, \"new_samples\": %.0f, \"estimated\": %s",
		d->samples[DIFF_BASE], d->samples[DIFF_NEW],
		d->samples_estimated ? "true" : "false");
	fprintf(out, ", \"tests\": %zu, \"critical_z\": ", d->nr_tests);
	text_output__json_number(out, d->critical_z);
	fprintf(out, ", \"noise_floor\": ");
	text_output__json_number(out, d->noise_floor);
	fprintf(out, ", \"within_noise\": %zu},\n", d->within_noise);
}

static int write_json(const struct profile_diff *d, const struct diff_labels *l, FILE *out)
{
	size_t *order = malloc((d->nr_functions ? d->nr_functions : 1) * sizeof(*order));
	size_t nr_stacks, listed = 0;
	size_t *stack_order;

	if (!order)
		return -ENOMEM;
	for (size_t i = 0; i < d->nr_functions; i++)
		order[i] = i;
	sort_context = (struct sort_context){.diff = d, .table = TABLE_SELF};
	qsort(order, d->nr_functions, sizeof(*order), compare_functions);
	stack_order = sorted_rows(d, TABLE_STACKS, &nr_stacks);
	if (!stack_order) {
		free(order);
		return -ENOMEM;
	}
	fprintf(out, "{\n");
	json_side(out, "base", l->base_name, l->base_format, d->unit[DIFF_BASE],
		  d->weight[DIFF_BASE], d->nr_side_stacks[DIFF_BASE]);
	json_side(out, "new", l->new_name, l->new_format, d->unit[DIFF_NEW], d->weight[DIFF_NEW],
		  d->nr_side_stacks[DIFF_NEW]);
	fprintf(out, "  \"threshold\": ");
	text_output__json_number(out, d->options.threshold);
	fprintf(out, ",\n  \"min_share\": ");
	text_output__json_number(out, d->options.min_share);
	fprintf(out, ",\n  \"confidence\": ");
	text_output__json_number(out, d->options.confidence);
	fprintf(out, ",\n");
	json_significance(d, out);
	fprintf(out, "  \"regression\": %s,\n", profile_diff__regressions(d) ? "true" : "false");
	fprintf(out, "  \"regressions\": {\"self\": %zu, \"total\": %zu, \"stacks\": %zu},\n",
		d->self_regressions, d->total_regressions, d->stack_regressions);
	fprintf(out, "  \"functions\": [");
	for (size_t i = 0; i < d->nr_functions; i++) {
		const struct diff_function *f = &d->functions[order[i]];

		if (!f->self_shown && !f->total_shown)
			continue;
		fprintf(out, "%s\n    {\"name\": ", listed++ ? "," : "");
		text_output__json_string(out, f->name);
		json_field(out, "base_self", f->base_self_share);
		json_field(out, "new_self", f->new_self_share);
		json_field(out, "delta_self", f->delta_self);
		json_field(out, "base_total", f->base_total_share);
		json_field(out, "new_total", f->new_total_share);
		json_field(out, "delta_total", f->delta_total);
		fprintf(out,
			", \"base_self_weight\": %llu, \"new_self_weight\": %llu"
			", \"base_total_weight\": %llu, \"new_total_weight\": %llu"
			", \"self_regression\": %s, \"total_regression\": %s",
			(unsigned long long)f->base_self, (unsigned long long)f->new_self,
			(unsigned long long)f->base_total, (unsigned long long)f->new_total,
			f->self_regression ? "true" : "false",
			f->total_regression ? "true" : "false");
		json_p_value(out, "self_p", f->self_p);
		json_p_value(out, "total_p", f->total_p);
		fprintf(out, ", \"self_significant\": %s, \"total_significant\": %s}",
			f->self_significant ? "true" : "false",
			f->total_significant ? "true" : "false");
	}
	fprintf(out, "%s],\n  \"stacks\": [", listed ? "\n  " : "");
	listed = 0;
	for (size_t i = 0; i < nr_stacks; i++) {
		const struct diff_stack *s = &d->stacks[stack_order[i]];
		char *text;

		if (!s->shown)
			continue;
		text = diff__stack_text(d->merged, s->stack);
		if (!text) {
			free(order);
			free(stack_order);
			return -ENOMEM;
		}
		fprintf(out, "%s\n    {\"stack\": ", listed++ ? "," : "");
		text_output__json_string(out, text);
		free(text);
		json_field(out, "base", s->base_share);
		json_field(out, "new", s->new_share);
		json_field(out, "delta", s->delta);
		fprintf(out, ", \"base_weight\": %llu, \"new_weight\": %llu, \"regression\": %s",
			(unsigned long long)s->base, (unsigned long long)s->new,
			s->regression ? "true" : "false");
		json_p_value(out, "p", s->p);
		fprintf(out, ", \"significant\": %s}", s->significant ? "true" : "false");
	}
	fprintf(out, "%s]\n}\n", listed ? "\n  " : "");
	free(order);
	free(stack_order);
	return 0;
}

static int compare_text(const void *a, const void *b)
{
	const struct profile_diff *d = sort_context.diff;

	return diff__compare_stack_text(d->merged, d->stacks[*(const size_t *)a].stack,
					d->stacks[*(const size_t *)b].stack);
}

/* "stack BASE NEW", sorted, as difffolded.pl -n writes it: BASE scaled to
 * NEW's total, so flamegraph.pl colours by the change in share. */
static int write_folded(const struct profile_diff *d, FILE *out)
{
	uint64_t base_total = d->weight[DIFF_BASE], new_total = d->weight[DIFF_NEW];
	size_t *order = malloc((d->nr_stacks ? d->nr_stacks : 1) * sizeof(*order));

	if (!order)
		return -ENOMEM;
	for (size_t i = 0; i < d->nr_stacks; i++)
		order[i] = i;
	sort_context = (struct sort_context){.diff = d, .table = TABLE_STACKS};
	qsort(order, d->nr_stacks, sizeof(*order), compare_text);
	for (size_t i = 0; i < d->nr_stacks; i++) {
		const struct diff_stack *s = &d->stacks[order[i]];
		const struct stack *st = &d->merged->stacks[s->stack];
		uint64_t base = s->base;

		if (base_total && new_total)
			base =
			    ((unsigned __int128)s->base * new_total + base_total / 2) / base_total;
		for (uint32_t k = 0; k < st->depth; k++) {
			if (k)
				fputc(';', out);
			fputs(d->merged->frames[st->frames[k]].name, out);
		}
		fprintf(out, " %llu %llu\n", (unsigned long long)base, (unsigned long long)s->new);
	}
	free(order);
	return 0;
}

int profile_diff__write(const struct profile_diff *d, enum text_format format,
			const struct diff_labels *labels, FILE *out)
{
	int err;

	switch (format) {
	case TEXT_FORMAT_JSON:
		err = write_json(d, labels, out);
		break;
	case TEXT_FORMAT_MARKDOWN:
		err = write_markdown(d, labels, out);
		break;
	case TEXT_FORMAT_FOLDED:
		err = write_folded(d, out);
		break;
	case TEXT_FORMAT_SVG:
		err = svg__write_diff(d, labels->base_name, labels->new_name, out);
		break;
	default:
		err = write_text(d, labels, out);
		break;
	}
	if (err)
		return err;
	return fflush(out) || ferror(out) ? -EIO : 0;
}
