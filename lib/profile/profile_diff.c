// SPDX-License-Identifier: GPL-2.0
/* Comparing two profiles by share of their own totals; see profile_diff.h. */
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "array.h"
#include "profile/diff_private.h"
#include "profile/profile_diff.h"
#include "profile/significance.h"

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
		if (id < 0 || array__grow_zeroed((void **)&d->stack_weights[side],
						 &d->cap_stack_weights[side], d->merged->nr_stacks,
						 sizeof(*d->stack_weights[side])))
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

bool diff__grew(const struct diff_options *o, double delta)
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
	struct function_share none = {0};

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
	if (!significance__defined(base * s0, d->samples[DIFF_BASE], new *s1, d->samples[DIFF_NEW]))
		return 0;
	if (array__grow((void **)cases, cap, *nr + 1, sizeof(**cases)))
		return -ENOMEM;
	(*cases)[(*nr)++] = (struct share_case){base, new, p, significant};
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
	d->critical_z = significance__critical_z(alpha / (nr ? nr : 1));
	d->noise_floor = significance__noise_floor(0.5, d->samples[DIFF_BASE], d->samples[DIFF_NEW],
						   d->critical_z);
	p = malloc((nr ? nr : 1) * sizeof(*p));
	significant = malloc((nr ? nr : 1) * sizeof(*significant));
	if (!p || !significant) {
		err = -ENOMEM;
		goto cleanup;
	}
	for (size_t i = 0; i < nr; i++) {
		const struct share_case *c = &cases[i];

		p[i] = significance__p_value(
		    significance__z(c->base * d->count_scale[DIFF_BASE], d->samples[DIFF_BASE],
				    c->new * d->count_scale[DIFF_NEW], d->samples[DIFF_NEW]));
		*c->p = p[i];
	}
	err = significance__holm(p, nr, alpha, significant);
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
		    judge(d, f->self_shown && diff__grew(o, f->delta_self), f->self_significant);
		f->total_regression =
		    judge(d, f->total_shown && diff__grew(o, f->delta_total), f->total_significant);
		d->self_regressions += f->self_regression;
		d->total_regressions += f->total_regression;
	}
	for (size_t i = 0; i < d->nr_stacks; i++) {
		struct diff_stack *s = &d->stacks[i];

		s->regression = judge(d, s->shown && diff__grew(o, s->delta), s->significant);
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
int diff__compare_stack_text(const struct profile *p, uint32_t a, uint32_t b)
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
char *diff__stack_text(const struct profile *p, uint32_t stack)
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
