// SPDX-License-Identifier: GPL-2.0
/* Unit tests of the overhead governor's decision and of the divisor a
 * sample's time maps to: over the budget the divisor grows to the power of
 * two that would have held 80 % of it, at most GOVERNOR_MAX_DIVISOR; under
 * a third of it for GOVERNOR_CALM_WINDOWS windows in a row it halves; in
 * between it stays; the clock's periods follow the divisor. */
#include <stdio.h>

#include "sampling/governor.h"
#include "sampling/sampling_clock.h"
#include "../lib/expect.h"

static void check_decisions(void)
{
	unsigned int calm = 0;

	/* 3 % against 1 %: 3 / 0.8 = 3.75 -> 4. */
	EXPECT(governor__next_divisor(1, 0.03, 0.01, &calm) == 4);
	/* Just over: at least twice as slow. */
	EXPECT(governor__next_divisor(1, 0.0101, 0.01, &calm) == 2);
	EXPECT(governor__next_divisor(4, 0.02, 0.01, &calm) == 16);
	/* Far over: capped. */
	EXPECT(governor__next_divisor(1, 50.0, 0.01, &calm) == GOVERNOR_MAX_DIVISOR);
	EXPECT(governor__next_divisor(GOVERNOR_MAX_DIVISOR, 1.0, 0.01, &calm) ==
	       GOVERNOR_MAX_DIVISOR);
	/* Within the budget: no change, and calm windows start again. */
	calm = 2;
	EXPECT(governor__next_divisor(8, 0.008, 0.01, &calm) == 8);
	EXPECT(calm == 0);
	/* Calm: halves only after GOVERNOR_CALM_WINDOWS windows in a row. */
	for (int i = 1; i < GOVERNOR_CALM_WINDOWS; i++)
		EXPECT(governor__next_divisor(8, 0.001, 0.01, &calm) == 8);
	EXPECT(governor__next_divisor(8, 0.001, 0.01, &calm) == 4);
	EXPECT(calm == 0);
	/* At the asked rate already: nothing to give back. */
	EXPECT(governor__next_divisor(1, 0.0, 0.01, &calm) == 1);
}

static void check_steps(void)
{
	struct governor g;

	EXPECT(governor__init(&g, 0) == 0);
	EXPECT(governor__divisor_at(&g, 123) == 1);
	governor__free(&g);

	EXPECT(governor__init(&g, 0.01) == 0);
	EXPECT(governor__changed(&g, 1000, 4) == 0);
	EXPECT(governor__changed(&g, 5000, 2) == 0);
	EXPECT(governor__divisor_at(&g, 0) == 1);
	EXPECT(governor__divisor_at(&g, 999) == 1);
	EXPECT(governor__divisor_at(&g, 1000) == 4);
	EXPECT(governor__divisor_at(&g, 4999) == 4);
	EXPECT(governor__divisor_at(&g, 5000) == 2);
	EXPECT(governor__divisor_at(&g, ~0ULL) == 2);
	EXPECT(g.divisor == 2);
	governor__free(&g);
}

static void check_clock(void)
{
	struct sampling_clock clock;

	EXPECT(sampling_clock__init(&clock, 1000, false) == 0);
	EXPECT(sampling_clock__period(&clock) == 1000000);
	EXPECT(sampling_clock__set_divisor(&clock, 8) == 0);
	EXPECT(sampling_clock__period(&clock) == 8000000);
	EXPECT(sampling_clock__set_divisor(&clock, 0) < 0);

	/* Random: every drawn period within [1/(3F/2), 1/(F/2)] of the
	 * slower rate F / 4 (with the restart's make-up, a little shorter). */
	EXPECT(sampling_clock__init(&clock, 1000, true) == 0);
	EXPECT(sampling_clock__set_divisor(&clock, 4) == 0);
	for (int i = 0; i < 1000; i++) {
		uint64_t period = sampling_clock__period(&clock);

		EXPECT(period >= 4000000 * 2 / 3 * 0.9 && period <= 4000000 * 2);
	}
}

int main(void)
{
	check_decisions();
	check_steps();
	check_clock();
	if (failures)
		fprintf(stderr, "%d failures\n", failures);
	return failures ? 1 : 0;
}
