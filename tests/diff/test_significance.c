// SPDX-License-Identifier: GPL-2.0
/* Unit tests of the significance test of diff: the z-test's numbers against
 * values worked out by hand, Holm's correction, and the diff's use of both
 * on built profiles. */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "profile/profile_diff.h"
#include "profile/significance.h"

static int failures;

#define CHECK(cond)                                                                                \
	do {                                                                                       \
		if (!(cond)) {                                                                     \
			fprintf(stderr, "%s:%d: check failed: %s\n", __FILE__, __LINE__, #cond);   \
			failures++;                                                                \
		}                                                                                  \
	} while (0)

#define CHECK_NEAR(got, want, tolerance)                                                           \
	do {                                                                                       \
		double g = (got), w = (want);                                                      \
		if (!(fabs(g - w) <= (tolerance))) {                                               \
			fprintf(stderr, "%s:%d: %s is %.9g, expected %.9g\n", __FILE__, __LINE__,  \
				#got, g, w);                                                       \
			failures++;                                                                \
		}                                                                                  \
	} while (0)

static void test_z(void)
{
	/* 50 of 100 against 70 of 100: pooled 0.6, standard error
	 * sqrt(0.6 * 0.4 * (1/100 + 1/100)) = 0.0692820, z = 0.2 / that. */
	CHECK_NEAR(significance__z(50, 100, 70, 100), 2.88675135, 1e-6);
	CHECK_NEAR(significance__z(70, 100, 50, 100), -2.88675135, 1e-6);
	/* Two-sided p of 2.88675: erfc(2.88675 / sqrt 2). */
	CHECK_NEAR(significance__p_value(2.88675135), 0.00389242, 1e-7);
	CHECK_NEAR(significance__p_value(0), 1, 1e-12);
	/* 5 of 1000 against 20 of 1000: pooled 0.0125, z 0.015 / 0.00496865. */
	CHECK_NEAR(significance__z(5, 1000, 20, 1000), 3.01892763, 1e-6);
	CHECK_NEAR(significance__p_value(3.01892763), 0.00253671, 1e-7);
	/* No variance, or an empty side: no test. */
	CHECK(!significance__defined(0, 100, 0, 200));
	CHECK(!significance__defined(100, 100, 200, 200));
	CHECK(!significance__defined(0, 0, 5, 10));
	CHECK(significance__z(0, 100, 0, 200) == 0);
	CHECK(significance__defined(0, 100, 1, 200));
}

static void test_critical_z(void)
{
	/* The normal table's 99 %, 95 % and 99.9 % two-sided values. */
	CHECK_NEAR(significance__critical_z(0.01), 2.5758293, 1e-6);
	CHECK_NEAR(significance__critical_z(0.05), 1.9599640, 1e-6);
	CHECK_NEAR(significance__critical_z(0.001), 3.2905267, 1e-6);
	/* Holm's first step over 6 tests at 99 %: the normal quantile of
	 * 1 - 0.01 / 12. */
	CHECK_NEAR(significance__critical_z(0.01 / 6), 3.1439803, 1e-6);
	CHECK_NEAR(significance__p_value(significance__critical_z(1e-6)), 1e-6, 1e-12);
}

static void test_noise_floor(void)
{
	/* 300 vs 310 samples at 99 %, a 50 % share:
	 * 100 * 2.5758293 * sqrt(0.25 * (1/300 + 1/310)) = 10.4306 points. */
	CHECK_NEAR(significance__noise_floor(0.5, 300, 310, 2.5758293), 10.4306297, 1e-5);
	/* A 10 % share: sqrt(0.09 / 0.25) = 0.6 of that. */
	CHECK_NEAR(significance__noise_floor(0.1, 300, 310, 2.5758293), 6.2583778, 1e-5);
}

static void test_holm(void)
{
	double p[] = {0.01, 0.04, 0.03, 0.005};
	double q[] = {0.02, 0.03};
	bool significant[4];

	/* Sorted 0.005 <= 0.05/4, 0.01 <= 0.05/3, 0.03 > 0.05/2: stop. */
	CHECK(!significance__holm(p, 4, 0.05, significant));
	CHECK(significant[0] && !significant[1] && !significant[2] && significant[3]);
	/* 0.02 <= 0.05/2 and then 0.03 <= 0.05/1: both, where Bonferroni
	 * (0.03 > 0.025) keeps only the first. */
	CHECK(!significance__holm(q, 2, 0.05, significant));
	CHECK(significant[0] && significant[1]);
	/* Ties are broken by position, and nothing is rejected at 0. */
	CHECK(!significance__holm(q, 2, 0, significant));
	CHECK(!significant[0] && !significant[1]);
}

/* A profile app;big BIG + app;tiny TINY in the given unit and rate. */
static struct profile *two_stacks(uint64_t big, uint64_t tiny, enum profile_unit unit,
				  uint32_t frequency)
{
	struct profile *p = profile__new();
	int64_t app, b, t;
	uint32_t frames[2];

	if (!p)
		return NULL;
	app = profile__intern_frame(p, "app", NULL, 0, FRAME_PROCESS);
	b = profile__intern_frame(p, "big", NULL, 0, FRAME_NATIVE);
	t = profile__intern_frame(p, "tiny", NULL, 0, FRAME_NATIVE);
	frames[0] = app;
	frames[1] = b;
	profile__add_weight(p, profile__intern_stack(p, frames, 2), big);
	frames[1] = t;
	profile__add_weight(p, profile__intern_stack(p, frames, 2), tiny);
	p->unit = unit;
	p->frequency = frequency;
	return p;
}

static const struct diff_function *find(const struct profile_diff *d, const char *name)
{
	for (size_t i = 0; i < d->nr_functions; i++)
		if (!strcmp(d->functions[i].name, name))
			return &d->functions[i];
	return NULL;
}

/* tiny: 5 -> 20 of 1000.  p = 0.0025367 over 6 tests (self, total and
 * stack of big and tiny; app is 100 % in both and not tested). */
static void check_tiny(enum profile_unit unit, uint32_t frequency, uint64_t per_sample,
		       double confidence, bool regression)
{
	struct profile *base = two_stacks(995 * per_sample, 5 * per_sample, unit, frequency);
	struct profile *new = two_stacks(980 * per_sample, 20 * per_sample, unit, frequency);
	struct diff_options o = {.threshold = 1, .confidence = confidence};
	struct profile_diff *d = NULL;
	const struct diff_function *tiny;

	CHECK(base && new && !profile_diff__compute(base, new, &o, &d));
	if (!d)
		goto cleanup;
	tiny = find(d, "tiny");
	CHECK(d->significance == SIGNIFICANCE_TESTED);
	CHECK(d->nr_tests == 6);
	CHECK_NEAR(d->samples[DIFF_BASE], 1000, 1e-6);
	CHECK(d->samples_estimated == (unit != UNIT_SAMPLES));
	CHECK_NEAR(d->critical_z, significance__critical_z((1 - confidence / 100) / 6), 1e-9);
	CHECK(tiny && tiny->self_regression == regression && tiny->total_regression == regression);
	if (tiny)
		CHECK_NEAR(tiny->self_p, 0.00253671, 1e-7);
	CHECK(profile_diff__regressions(d) == (regression ? 3 : 0));
	CHECK(d->within_noise == (regression ? 0 : 3));
cleanup:
	profile_diff__free(d);
	profile__free(base);
	profile__free(new);
}

static void test_diff(void)
{
	struct profile *base = two_stacks(995000, 5000, UNIT_NANOSECONDS, 0);
	struct profile *new = two_stacks(980000, 20000, UNIT_NANOSECONDS, 0);
	struct diff_options o = {.threshold = 1};
	struct profile_diff *d = NULL;

	/* At 99 %: 0.0025 > 0.01/6; at 95 %: 0.0025 <= 0.05/6. */
	check_tiny(UNIT_SAMPLES, 0, 1, 99, false);
	check_tiny(UNIT_SAMPLES, 0, 1, 95, true);
	/* Microseconds at 100 Hz: 10000 us a sample, the same counts. */
	check_tiny(UNIT_MICROSECONDS, 100, 10000, 99, false);
	check_tiny(UNIT_NANOSECONDS, 1000, 1000000, 95, true);
	/* Nanoseconds with no rate: no counts, the threshold alone. */
	CHECK(base && new && !profile_diff__compute(base, new, &o, &d));
	if (d) {
		CHECK(d->significance == SIGNIFICANCE_NO_RATE);
		CHECK(profile_diff__regressions(d) == 3);
		CHECK(isnan(find(d, "tiny")->self_p));
	}
	profile_diff__free(d);
	profile__free(base);
	profile__free(new);
}

int main(void)
{
	test_z();
	test_critical_z();
	test_noise_floor();
	test_holm();
	test_diff();
	if (failures) {
		fprintf(stderr, "%d check%s failed\n", failures, failures == 1 ? "" : "s");
		return 1;
	}
	printf("all checks passed\n");
	return 0;
}
