/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Comparing two profiles: each is normalised to its own total, then every
 * function's self and total share and every stack's share is compared.  A
 * share is a regression when it grew by more than a threshold and by more
 * than sampling noise explains: a two-proportion z-test on the sample counts
 * at a confidence level, Holm-corrected over every share compared.
 */
#ifndef LLMPROF_PROFILE_DIFF_H
#define LLMPROF_PROFILE_DIFF_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "profile/profile.h"
#include "profile/text_output.h"

struct diff_options {
	double threshold;  /* percentage points a share may grow by */
	double min_share;  /* percent; shares under it in both profiles are noise */
	double confidence; /* percent, of the significance test; 0 for 99 */
};

/* Whether the significance test could be made, and if not why. */
enum diff_significance {
	SIGNIFICANCE_TESTED = 0,
	SIGNIFICANCE_NO_RATE, /* a time-weighted side with no sampling rate */
	SIGNIFICANCE_MIXED,   /* one side added from profiles of different units */
	SIGNIFICANCE_EMPTY,   /* a side has no samples */
};

/* One function (by folded name) in either profile.  Shares are percent of
 * the profile's total weight; deltas are NEW - BASE in percentage points. */
struct diff_function {
	const char *name;				     /* owned by the diff */
	uint64_t base_self, new_self, base_total, new_total; /* weights */
	double base_self_share, new_self_share, delta_self;
	double base_total_share, new_total_share, delta_total;
	bool self_shown, total_shown; /* at or over min_share in either profile */
	/* Two-sided p-values of the z-test, NAN when not tested; significant
	 * after Holm's correction. */
	double self_p, total_p;
	bool self_significant, total_significant;
	bool self_regression, total_regression;
};

/* One stack (by folded text) in either profile. */
struct diff_stack {
	uint32_t stack; /* id in profile_diff.merged */
	uint64_t base, new;
	double base_share, new_share, delta;
	double p; /* as in diff_function */
	bool shown, significant, regression;
};

enum diff_side {
	DIFF_BASE = 0,
	DIFF_NEW,
};

struct profile_diff {
	struct diff_options options;
	/*
	 * Both profiles folded into one: a frame per function (its folded
	 * name, as a native frame) and a stack per distinct folded stack, so
	 * stacks compare by id and their text is only made when written.
	 */
	struct profile *merged;
	uint64_t *stack_weights[2]; /* per merged stack */
	size_t cap_stack_weights[2];
	struct function_share *function_weights[2]; /* per merged frame; .frame unused */
	size_t cap_function_weights[2];
	uint64_t weight[2]; /* totals */
	enum profile_unit unit[2];
	size_t nr_side_stacks[2]; /* distinct stacks with weight in each */
	/* Sample counts per unit of weight: 1 for samples, F/1e6 for
	 * microseconds at F Hz; 0 when not known. */
	double count_scale[2];
	uint32_t frequency[2]; /* Hz, 0 when unknown */
	size_t nr_added[2];
	bool mixed; /* a side added from profiles that count differently */

	/* Filled in by profile_diff__finish(). */
	struct diff_function *functions;
	size_t nr_functions;
	struct diff_stack *stacks;
	size_t nr_stacks;
	size_t self_regressions, total_regressions, stack_regressions;
	/* The significance test: sample counts (estimated for time weights),
	 * the number of shares tested, the critical z of Holm's first step
	 * and the noise floor it gives for a 50 % share, in points. */
	enum diff_significance significance;
	double samples[2];
	bool samples_estimated;
	size_t nr_tests;
	double critical_z, noise_floor;
	/* Shares that grew by more than the threshold within the noise. */
	size_t within_noise;
};

/* Labels for the header of the written diff. */
struct diff_labels {
	const char *base_name, *new_name;     /* file names */
	const char *base_format, *new_format; /* "folded", "speedscope" */
	size_t top;			      /* rows per table in text and markdown; 0 for all */
};

/*
 * A diff is built in steps, so that each profile can be freed once it is
 * added: new, add BASE, add NEW, finish.  Each returns 0 or -ENOMEM;
 * profile_diff__new() returns NULL when out of memory.
 */
struct profile_diff *profile_diff__new(const struct diff_options *options);
int profile_diff__add(struct profile_diff *diff, enum diff_side side,
		      const struct profile *profile);
int profile_diff__finish(struct profile_diff *diff);
/* All of it at once: returns 0 and a new diff in *out, or -ENOMEM. */
int profile_diff__compute(const struct profile *base, const struct profile *new,
			  const struct diff_options *options, struct profile_diff **out);
void profile_diff__free(struct profile_diff *diff);
/* What the significance test is, or why it was not made, in words. */
const char *diff_significance__describe(enum diff_significance significance);
/* The number of regressions of every kind together. */
size_t profile_diff__regressions(const struct profile_diff *diff);
/* Writes the diff; returns 0, -ENOMEM or -EIO. */
int profile_diff__write(const struct profile_diff *diff, enum text_format format,
			const struct diff_labels *labels, FILE *out);

#endif /* LLMPROF_PROFILE_DIFF_H */
