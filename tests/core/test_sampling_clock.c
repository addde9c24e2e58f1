// SPDX-License-Identifier: GPL-2.0
/* Unit tests of the sampling clock's periods: ticks per sample, the range
 * random periods are drawn from, and fixed periods. */
#include <errno.h>
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

/* Random periods of F at K ticks per sample lie in [1/(1.25 F K), 1/(F K)]
 * and spread over that range; the mean tick rate is 1.125 F K. */
static void check_random(unsigned int frequency, unsigned int k)
{
	struct sampling_clock clock;
	double rate_sum = 0, lo = 1e18, hi = 0;
	double shortest = 1e9 / (1.25 * frequency * k), longest = 1e9 / ((double)frequency * k);

	EXPECT(sampling_clock__init(&clock, frequency, true) == 0);
	EXPECT(clock.ticks_per_sample == k);
	EXPECT(sampling_clock__interval_ns(&clock) == 1000000000ULL / frequency);
	for (int i = 0; i < 10000; i++) {
		double period = sampling_clock__period(&clock);

		rate_sum += 1e9 / period;
		lo = period < lo ? period : lo;
		hi = period > hi ? period : hi;
	}
	EXPECT(lo >= shortest - 1 && hi <= longest + 1);
	EXPECT(hi - lo > 0.9 * (longest - shortest));
	rate_sum /= 10000 * 1.125 * frequency * k;
	EXPECT(rate_sum > 0.99 && rate_sum < 1.01);
}

int main(void)
{
	struct sampling_clock clock;
	int dummy_fds[2] = {-1, -1};

	check_random(1, 8);
	check_random(99, 8);
	check_random(125, 8);
	check_random(200, 5);
	check_random(999, 2);
	check_random(4999, 2);

	/* Fixed: one tick per sample, every 1/F exactly, no BPF interval. */
	EXPECT(sampling_clock__init(&clock, 999, false) == 0);
	EXPECT(clock.ticks_per_sample == 1);
	EXPECT(sampling_clock__interval_ns(&clock) == 0);
	EXPECT(sampling_clock__period(&clock) == 1000000000ULL / 999);
	EXPECT(sampling_clock__dither(&clock, dummy_fds, 2, 5000000000ULL) == 0);

	/* No timer runs faster than every 10 us. */
	EXPECT(sampling_clock__init(&clock, 100000, true) == 0);
	EXPECT(sampling_clock__period(&clock) == 10000);

	EXPECT(sampling_clock__init(&clock, 0, true) == -EINVAL);

	if (failures)
		return 1;
	printf("PASS\n");
	return 0;
}
