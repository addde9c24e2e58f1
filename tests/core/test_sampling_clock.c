// SPDX-License-Identifier: GPL-2.0
/* Unit tests of the sampling clock's periods: random periods one tick per
 * sample at a mean rate of F, skewed 5-10 % each way in pairs, held for
 * whole sweeps of at least a quarter second; fixed periods. */
#include <errno.h>
#include <math.h>
#include <stdio.h>

#include "sampling/sampling_clock.h"

static int failures;

#define EXPECT(cond)                                                                               \
	do {                                                                                       \
		if (!(cond)) {                                                                     \
			fprintf(stderr, "%s:%d: expected %s\n", __FILE__, __LINE__, #cond);        \
			failures++;                                                                \
		}                                                                                  \
	} while (0)

/* Ticks over a long run, with each redraw's restart losing half a period
 * on average: their rate is F within 0.5 %, each period's rate is within
 * 5-10 % of F (plus the restart's make-up), and the skews spread over
 * their range. */
static void check_random(unsigned int frequency)
{
	struct sampling_clock clock;
	double interval = 1e9 / frequency, ticks = 0, lo = 1, hi = 0;
	uint64_t now = 1000000000ULL, end;
	int fds[1] = {-1};

	EXPECT(sampling_clock__init(&clock, frequency, true, 1) == 0);
	sampling_clock__period(&clock, 0, now);
	end = now + 4000 * (uint64_t)interval + 200ULL * 1000000000ULL;
	while (now < end) {
		const struct sampling_clock_cpu *c = &clock.cpus[0];
		double hold = c->next_redraw_ns - now, skew = fabs(c->skew);

		EXPECT(hold >= 0.25e9 - 1);
		EXPECT(skew >= SAMPLING_CLOCK_MIN_SKEW && skew <= SAMPLING_CLOCK_MAX_SKEW);
		/* Within the make-up for a restart: half a period in a hold of at
		 * least ten. */
		EXPECT(fabs(interval / c->period_ns - 1 - c->skew) < 0.08);
		lo = skew < lo ? skew : lo;
		hi = skew > hi ? skew : hi;
		/* The restart comes half a period late, on average. */
		ticks += (hold - c->period_ns / 2.0) / c->period_ns;
		now = c->next_redraw_ns;
		EXPECT(sampling_clock__dither(&clock, fds, 1, now - 1) == 0);
		EXPECT(clock.cpus[0].next_redraw_ns == now);
		/* fds[0] < 0: no event to set, and no redraw either. */
		sampling_clock__period(&clock, 0, now);
	}
	EXPECT(fabs(ticks * interval / (end - 1000000000ULL) - 1) < 0.005);
	EXPECT(hi - lo > 0.8 * (SAMPLING_CLOCK_MAX_SKEW - SAMPLING_CLOCK_MIN_SKEW));
	sampling_clock__fini(&clock);
}

/* Skews come in pairs d, -d: each pair's mean rate is F. */
static void check_pairs(void)
{
	struct sampling_clock clock;

	EXPECT(sampling_clock__init(&clock, 99, true, 2) == 0);
	for (int i = 0; i < 100; i++) {
		double first;

		sampling_clock__period(&clock, i % 2, i * 1000000000ULL);
		first = clock.cpus[i % 2].skew;
		sampling_clock__period(&clock, i % 2, i * 1000000000ULL + 500000000ULL);
		EXPECT(clock.cpus[i % 2].skew == -first);
	}
	sampling_clock__fini(&clock);
}

int main(void)
{
	struct sampling_clock clock;
	int dummy_fds[2] = {-1, -1};

	check_random(1);
	check_random(99);
	check_random(999);
	check_random(4999);
	check_pairs();

	/* Fixed: one tick every 1/F exactly, never redrawn. */
	EXPECT(sampling_clock__init(&clock, 999, false, 2) == 0);
	EXPECT(sampling_clock__period(&clock, 1, 0) == 1000000000ULL / 999);
	EXPECT(sampling_clock__dither(&clock, dummy_fds, 2, 5000000000ULL) == 0);
	sampling_clock__fini(&clock);

	/* No timer runs faster than every 10 us. */
	EXPECT(sampling_clock__init(&clock, 1000000, true, 1) == 0);
	EXPECT(sampling_clock__period(&clock, 0, 0) == 10000);
	sampling_clock__fini(&clock);

	EXPECT(sampling_clock__init(&clock, 0, true, 1) == -EINVAL);
	EXPECT(sampling_clock__init(&clock, 99, true, 0) == -EINVAL);

	if (failures)
		return 1;
	printf("PASS\n");
	return 0;
}
