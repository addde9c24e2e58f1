// SPDX-License-Identifier: GPL-2.0
/* Comparing two profiles by share of their own totals; see profile_diff.h. */
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "array.h"
#include "profile/profile_diff.h"
#include "profile/share_test.h"

/* Shares are computed in floating point; a delta within this of the
 * threshold counts as equal to it, so "grew by more than" is exact for
 * shares that are exact in decimal. */
#define SHARE_EPSILON 1e-9

struct profile_diff *profile_diff__new(const struct diff_options *options)
{
	struct profile_diff *d = calloc(1, sizeof(*d));

	if (!d)
		return NULL;
	d->options = *options;
	if (!(d->options.confidence > 0 && d->options.confidence < 100))
		d->options.confidence = 99;
	d->merged = profile__new();
	if (!d->merged) {
		free(d);
		return NULL;
	}
	return d;
}

/* Samples per unit of weight: time weights are 1e6/F microseconds (or
 * 1e9/F nanoseconds) a sample at F Hz; 0 when that is not known. */
static double count_scale(const struct profile *p)
{
	switch (p->unit) {
	case UNIT_SAMPLES:
		return 1;
	case UNIT_MICROSECONDS:
		return p->frequency / 1e6;
	case UNIT_NANOSECONDS:
		return p->frequency / 1e9;
	case UNIT_BYTES: /* bytes are no samples: no noise test */
		return 0;
	}
	return 0;
}

int profile_diff__add(struct profile_diff *d, enum diff_side side, const struct profile *p)
{
	uint32_t *name_map = malloc((p->nr_frames ? p->nr_frames : 1) * sizeof(*name_map));
	struct function_share *shares = NULL;
	uint32_t *frames = NULL;
	size_t cap_frames = 0;
	int64_t nr_shares;
	int err = -ENOMEM;

	if (!name_map)
		return -ENOMEM;
	/* A function is a folded name; frames that differ only by source
	 * line, or come from the other profile, share it. */
	for (size_t i = 0; i < p->nr_frames; i++) {
		char *name = frame__folded_name(&p->frames[i]);
		int64_t id;

		if (!name)
			goto cleanup;
		id = profile__intern_frame(d->merged, name, NULL, 0, FRAME_NATIVE);
		free(name);
		if (id < 0)
			goto cleanup;
		name_map[i] = id;
	}
	if (array__grow_zeroed((void **)&d->function_weights[side], &d->cap_function_weights[side],
		 d->merged->nr_frames, sizeof(*d->function_weights[side])))
		goto cleanup;
	nr_shares = profile__function_shares(p, &shares);
	if (nr_shares < 0)
		goto cleanup;
	for (int64_t i = 0; i < nr_shares; i++) {
		struct function_share *f = &d->function_weights[side][name_map[shares[i].frame]];

		f->self += shares[i].self;
		f->total += shares[i].total;
	}
	for (size_t i = 0; i < p->nr_stacks; i++) {
		const struct stack *s = &p->stacks[i];
		int64_t id;

		if (!s->weight || !s->depth)
			continue;
		if (array__grow_zeroed((void **)&frames, &cap_frames, s->depth, sizeof(*frames)))
			goto cleanup;
		for (uint32_t k = 0; k < s->depth; k++)
			frames[k] = name_map[s->frames[k]];
		id = profile__intern_stack(d->merged, frames, s->depth);
		if (id < 0 || array__grow_zeroed((void **)&d->stack_weights[side], &d->cap_stack_weights[side],
				   d->merged->nr_stacks, sizeof(*d->stack_weights[side])))
			goto cleanup;
		d->nr_side_stacks[side] += !d->stack_weights[side][id];
		d->stack_weights[side][id] += s->weight;
	}
	d->weight[side] += profile__total_weight(p);
	{
		double scale = count_scale(p);

		/* Profiles of one side that count differently cannot be
		 * turned back into one count. */
		if (d->nr_added[side] && scale != d->count_scale[side])
			d->mixed = true;
		d->count_scale[side] = scale;
	}
	d->nr_added[side]++;
	d->unit[side] = p->unit;
	d->frequency[side] = p->frequency;
	err = 0;
cleanup:
	free(name_map);
	free(shares);
	free(frames);
	return err;
}

static double share(uint64_t weight, uint64_t total)
{
	return total ? weight * 100.0 / total : 0;
}

static bool shown(const struct diff_options *o, double a, double b)
{
	return (a > b ? a : b) >= o->min_share - SHARE_EPSILON;
}

static bool grew(const struct diff_options *o, double delta)
{
	return delta > o->threshold + SHARE_EPSILON;
}

/* The weight of entry i on one side, 0 past what that side has seen. */
static uint64_t stack_weight(const struct profile_diff *d, enum diff_side side, size_t i)
{
	return i < d->cap_stack_weights[side] ? d->stack_weights[side][i] : 0;
}

static struct function_share function_weight(const struct profile_diff *d, enum diff_side side,
					     size_t i)
{
	struct function_share none = { 0 };

	return i < d->cap_function_weights[side] ? d->function_weights[side][i] : none;
}

/* Whether the test can be made, and the sample count of each side. */
static enum diff_significance significance_counts(struct profile_diff *d)
{
	if (d->mixed)
		return SIGNIFICANCE_MIXED;
	for (int side = 0; side < 2; side++) {
		if (!d->count_scale[side])
			return SIGNIFICANCE_NO_RATE;
		d->samples[side] = d->weight[side] * d->count_scale[side];
		d->samples_estimated |= d->unit[side] != UNIT_SAMPLES;
	}
	for (int side = 0; side < 2; side++)
		if (d->samples[side] <= 0)
			return SIGNIFICANCE_EMPTY;
	return SIGNIFICANCE_TESTED;
}

/* One share to test: its weights and where its answer goes. */
struct share_case {
	uint64_t base, new;
	double *p;
	bool *significant;
};

static int add_case(struct share_case **cases, size_t *nr, size_t *cap,
		    const struct profile_diff *d, uint64_t base, uint64_t new, double *p,
		    bool *significant)
{
	double s0 = d->count_scale[DIFF_BASE], s1 = d->count_scale[DIFF_NEW];

	*p = NAN;
	*significant = false;
	if (!share_test__defined(base * s0, d->samples[DIFF_BASE], new * s1, d->samples[DIFF_NEW]))
		return 0;
	if (array__grow((void **)cases, cap, *nr + 1, sizeof(**cases)))
		return -ENOMEM;
	(*cases)[(*nr)++] = (struct share_case){ base, new, p, significant };
	return 0;
}

/*
 * Every share listed (at or over min_share) whose pooled share is neither 0
 * nor 100 % is tested, in all three tables: that is the family Holm's
 * correction is over, so a profile with more functions needs a larger
 * change to make one of them count.
 */
static int test_shares(struct profile_diff *d)
{
	double alpha = 1 - d->options.confidence / 100;
	struct share_case *cases = NULL;
	size_t nr = 0, cap = 0;
	double *p = NULL;
	bool *significant = NULL;
	int err = 0;

	d->significance = significance_counts(d);
	for (size_t i = 0; i < d->nr_functions; i++) {
		struct diff_function *f = &d->functions[i];

		f->self_p = f->total_p = NAN;
		if (d->significance)
			continue;
		if (f->self_shown)
			err = add_case(&cases, &nr, &cap, d, f->base_self, f->new_self, &f->self_p,
				       &f->self_significant);
		if (!err && f->total_shown)
			err = add_case(&cases, &nr, &cap, d, f->base_total, f->new_total,
				       &f->total_p, &f->total_significant);
		if (err)
			goto cleanup;
	}
	for (size_t i = 0; i < d->nr_stacks; i++) {
		struct diff_stack *s = &d->stacks[i];

		s->p = NAN;
		if (d->significance || !s->shown)
			continue;
		err = add_case(&cases, &nr, &cap, d, s->base, s->new, &s->p, &s->significant);
		if (err)
			goto cleanup;
	}
	if (d->significance)
		goto cleanup;
	d->nr_tests = nr;
	d->critical_z = share_test__critical_z(alpha / (nr ? nr : 1));
	d->noise_floor = share_test__noise_floor(0.5, d->samples[DIFF_BASE], d->samples[DIFF_NEW],
						 d->critical_z);
	p = malloc((nr ? nr : 1) * sizeof(*p));
	significant = malloc((nr ? nr : 1) * sizeof(*significant));
	if (!p || !significant) {
		err = -ENOMEM;
		goto cleanup;
	}
	for (size_t i = 0; i < nr; i++) {
		const struct share_case *c = &cases[i];

		p[i] = share_test__p_value(share_test__z(
			c->base * d->count_scale[DIFF_BASE], d->samples[DIFF_BASE],
			c->new * d->count_scale[DIFF_NEW], d->samples[DIFF_NEW]));
		*c->p = p[i];
	}
	err = share_test__holm(p, nr, alpha, significant);
	for (size_t i = 0; !err && i < nr; i++)
		*cases[i].significant = significant[i];
cleanup:
	free(cases);
	free(p);
	free(significant);
	return err;
}

/* A regression grew past the threshold and, where it could be tested,
 * past the noise; one that grew within the noise is counted apart. */
static bool judge(struct profile_diff *d, bool grown, bool significant)
{
	if (!grown)
		return false;
	if (d->significance == SIGNIFICANCE_TESTED && !significant) {
		d->within_noise++;
		return false;
	}
	return true;
}

int profile_diff__finish(struct profile_diff *d)
{
	const struct diff_options *o = &d->options;
	const struct profile *m = d->merged;
	int err;

	d->functions = calloc(m->nr_frames ? m->nr_frames : 1, sizeof(*d->functions));
	d->stacks = calloc(m->nr_stacks ? m->nr_stacks : 1, sizeof(*d->stacks));
	if (!d->functions || !d->stacks)
		return -ENOMEM;
	for (size_t i = 0; i < m->nr_frames; i++) {
		struct function_share b = function_weight(d, DIFF_BASE, i);
		struct function_share n = function_weight(d, DIFF_NEW, i);
		struct diff_function *f = &d->functions[d->nr_functions];

		if (!b.total && !n.total)
			continue;
		d->nr_functions++;
		f->name = m->frames[i].name;
		f->base_self = b.self;
		f->base_total = b.total;
		f->new_self = n.self;
		f->new_total = n.total;
		f->base_self_share = share(f->base_self, d->weight[DIFF_BASE]);
		f->new_self_share = share(f->new_self, d->weight[DIFF_NEW]);
		f->delta_self = f->new_self_share - f->base_self_share;
		f->base_total_share = share(f->base_total, d->weight[DIFF_BASE]);
		f->new_total_share = share(f->new_total, d->weight[DIFF_NEW]);
		f->delta_total = f->new_total_share - f->base_total_share;
		f->self_shown = shown(o, f->base_self_share, f->new_self_share);
		f->total_shown = shown(o, f->base_total_share, f->new_total_share);
	}
	for (size_t i = 0; i < m->nr_stacks; i++) {
		struct diff_stack *s = &d->stacks[d->nr_stacks++];

		s->stack = i;
		s->base = stack_weight(d, DIFF_BASE, i);
		s->new = stack_weight(d, DIFF_NEW, i);
		s->base_share = share(s->base, d->weight[DIFF_BASE]);
		s->new_share = share(s->new, d->weight[DIFF_NEW]);
		s->delta = s->new_share - s->base_share;
		s->shown = shown(o, s->base_share, s->new_share);
	}
	err = test_shares(d);
	if (err)
		return err;
	for (size_t i = 0; i < d->nr_functions; i++) {
		struct diff_function *f = &d->functions[i];

		f->self_regression =
			judge(d, f->self_shown && grew(o, f->delta_self), f->self_significant);
		f->total_regression =
			judge(d, f->total_shown && grew(o, f->delta_total), f->total_significant);
		d->self_regressions += f->self_regression;
		d->total_regressions += f->total_regression;
	}
	for (size_t i = 0; i < d->nr_stacks; i++) {
		struct diff_stack *s = &d->stacks[i];

		s->regression = judge(d, s->shown && grew(o, s->delta), s->significant);
		d->stack_regressions += s->regression;
	}
	return 0;
}

const char *diff_significance__describe(enum diff_significance significance)
{
	switch (significance) {
	case SIGNIFICANCE_TESTED:
		return "two-sided two-proportion z-test, Holm-corrected";
	case SIGNIFICANCE_NO_RATE:
		return "weights in time with no sampling rate to count samples by";
	case SIGNIFICANCE_MIXED:
		return "a side added from profiles that count differently";
	case SIGNIFICANCE_EMPTY:
		return "a profile with no samples";
	}
	return "";
}

int profile_diff__compute(const struct profile *base, const struct profile *new,
			  const struct diff_options *options, struct profile_diff **out)
{
	struct profile_diff *d = profile_diff__new(options);
	int err;

	if (!d)
		return -ENOMEM;
	err = profile_diff__add(d, DIFF_BASE, base);
	if (!err)
		err = profile_diff__add(d, DIFF_NEW, new);
	if (!err)
		err = profile_diff__finish(d);
	if (err) {
		profile_diff__free(d);
		return err;
	}
	*out = d;
	return 0;
}

void profile_diff__free(struct profile_diff *d)
{
	if (!d)
		return;
	profile__free(d->merged);
	for (int side = 0; side < 2; side++) {
		free(d->stack_weights[side]);
		free(d->function_weights[side]);
	}
	free(d->functions);
	free(d->stacks);
	free(d);
}

size_t profile_diff__regressions(const struct profile_diff *d)
{
	return d->self_regressions + d->total_regressions + d->stack_regressions;
}

/* ---- stack text ------------------------------------------------------- */

/* The folded text of a merged stack, one byte at a time, as if the frame
 * names were joined with ';'. */
struct text_cursor {
	const struct profile *profile;
	const struct stack *stack;
	uint32_t depth;
	const char *pos;
};

static void text_cursor_start(struct text_cursor *c, const struct profile *p, uint32_t stack,
			      uint32_t depth)
{
	c->profile = p;
	c->stack = &p->stacks[stack];
	c->depth = depth;
	c->pos = p->frames[c->stack->frames[depth]].name;
}

static int text_cursor_next(struct text_cursor *c)
{
	if (*c->pos)
		return (unsigned char)*c->pos++;
	if (c->depth + 1 >= c->stack->depth)
		return -1;
	c->depth++;
	c->pos = c->profile->frames[c->stack->frames[c->depth]].name;
	return ';';
}

/* strcmp() of the two stacks' folded texts, without making them: names
 * hold no ';', so equal leading frames are equal leading text. */
static int compare_stack_text(const struct profile *p, uint32_t a, uint32_t b)
{
	const struct stack *x = &p->stacks[a], *y = &p->stacks[b];
	uint32_t depth = x->depth < y->depth ? x->depth : y->depth, d = 0;
	struct text_cursor cx, cy;

	while (d < depth && x->frames[d] == y->frames[d])
		d++;
	if (d == depth)
		return x->depth == y->depth ? 0 : (x->depth < y->depth ? -1 : 1);
	text_cursor_start(&cx, p, a, d);
	text_cursor_start(&cy, p, b, d);
	for (;;) {
		int i = text_cursor_next(&cx), j = text_cursor_next(&cy);

		if (i != j)
			return i < j ? -1 : 1;
		if (i < 0)
			return 0;
	}
}

/* The folded text of a merged stack; malloc'd, or NULL. */
static char *stack_text(const struct profile *p, uint32_t stack)
{
	const struct stack *s = &p->stacks[stack];
	size_t len = 1;
	char *text, *pos;

	for (uint32_t d = 0; d < s->depth; d++)
		len += strlen(p->frames[s->frames[d]].name) + 1;
	text = pos = malloc(len);
	if (!text)
		return NULL;
	for (uint32_t d = 0; d < s->depth; d++) {
		const char *name = p->frames[s->frames[d]].name;
		size_t n = strlen(name);

		if (d)
			*pos++ = ';';
		memcpy(pos, name, n);
		pos += n;
	}
	*pos = '\0';
	return text;
}

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
	uint64_t base, new;		/* weights */
	uint64_t base_weight, new_weight; /* totals, to tell an exact tie */
	double base_share, new_share, delta;
	bool shown, regression;
	bool within_noise; /* grew past the threshold, not past the noise */
};

static struct diff_row table_row(const struct profile_diff *d, enum diff_table table, size_t i)
{
	struct diff_row r = { .base_weight = d->weight[DIFF_BASE],
			      .new_weight = d->weight[DIFF_NEW] };

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
		r.within_noise = r.shown && grew(&d->options, r.delta) && !r.regression;
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
		r.within_noise = r.shown && grew(&d->options, r.delta) && !r.regression;
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
		return compare_stack_text(d->merged, d->stacks[x].stack, d->stacks[y].stack);
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
	sort_context = (struct sort_context){ .diff = d, .table = table };
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
	sort_context = (struct sort_context){ .diff = d, .table = table };
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

static const char *unit_name(enum profile_unit unit)
{
	switch (unit) {
	case UNIT_MICROSECONDS:
		return "microseconds";
	case UNIT_NANOSECONDS:
		return "nanoseconds";
	case UNIT_BYTES:
		return "bytes";
	default:
		return "samples";
	}
}

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
	snprintf(buf, size, "%s%.0f", d->unit[side] != UNIT_SAMPLES ? "~" : "",
		 d->samples[side]);
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
	fprintf(out, "%s marks a share that grew by more than %.2f points within sampling noise.%s\n",
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
			text = stack_text(d->merged, r.stack);
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
		fprintf(out,
			"\nREGRESSION: %zu share%s grew by more than %.2f points%s (self %zu, total "
			"%zu, stacks %zu)",
			regressions, regressions == 1 ? "" : "s", d->options.threshold,
			noise_words(d), d->self_regressions, d->total_regressions,
			d->stack_regressions);
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
			text = stack_text(d->merged, r.stack);
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
	fprintf(out, "Shares are percent of each profile's own total; Δ is new − base in percentage "
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
	fprintf(out, ", \"unit\": \"%s\", \"weight\": %llu, \"stacks\": %zu},\n", unit_name(unit),
		(unsigned long long)weight, stacks);
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
		d->samples[DIFF_BASE], d->samples[DIFF_NEW], d->samples_estimated ? "true" : "false");
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
	sort_context = (struct sort_context){ .diff = d, .table = TABLE_SELF };
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
		text = stack_text(d->merged, s->stack);
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

	return compare_stack_text(d->merged, d->stacks[*(const size_t *)a].stack,
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
	sort_context = (struct sort_context){ .diff = d, .table = TABLE_STACKS };
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
	default:
		err = write_text(d, labels, out);
		break;
	}
	if (err)
		return err;
	return fflush(out) || ferror(out) ? -EIO : 0;
}
