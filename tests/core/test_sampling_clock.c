// SPDX-License-Identifier: GPL-2.0
/* Unit tests of the sampling clock: fixed periods; random periods' range,
 * holds and mean rate once each restart's lost tick is counted; pairs of
 * holds whose rates average F, so that a 3 s profile keeps F; and the
 * ticks of one simulated CPU on work whose period is near 1/F, which must
 * land in each phase of it as often as the phase is long. */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#include "sampling/sampling_clock.h"
#include "../lib/expect.h"

/* Rates lie in [F/2, 3F/2] plus the restart's make-up, spread over it;
 * holds in [8/F, 24/F]; a CPU restarted at each hold's end (its first tick
 * one period later) ticks at F within 1 %. */
static void check_random(unsigned int frequency)
{
	double interval = 1e9 / frequency, lo = 1e18, hi = 0, time = 0, ticks = 0;
	struct sampling_clock clock;

	EXPECT(sampling_clock__init(&clock, frequency, true) == 0);
	clock.rng = 0x9e3779b97f4a7c15ULL; /* the same draws every run */
	for (int i = 0; i < 20000; i++) {
		struct sampling_clock_draw draw = sampling_clock__draw(&clock);
		double rate = 1e9 / draw.period_ns, makeup = 1e9 / (2.0 * draw.hold_ns);

		EXPECT(draw.hold_ns >= SAMPLING_CLOCK_MIN_HOLD * interval - 1 &&
		       draw.hold_ns <= SAMPLING_CLOCK_MAX_HOLD * interval + 1);
		EXPECT(rate >= 0.5 * frequency + makeup - 1 &&
		       rate <= 1.5 * frequency + makeup + 1);
		lo = rate - makeup < lo ? rate - makeup : lo;
		hi = rate - makeup > hi ? rate - makeup : hi;
		ticks += floor((double)draw.hold_ns / draw.period_ns);
		time += draw.hold_ns;
	}
	EXPECT(hi - lo > 0.95 * frequency);
	ticks /= time / 1e9 * frequency;
	if (ticks < 0.99 || ticks > 1.01)
		fprintf(stderr, "%u Hz: %.4f of F\n", frequency, ticks);
	EXPECT(ticks > 0.99 && ticks < 1.01);
}

/* Holds in pairs of one length whose rates sum to 2F plus the restarts'
 * make-up, CPU by CPU; and some 3000 ticks of one CPU (3 s at 999 Hz, as
 * root.sampling_bias takes them) at F within 1 %, every time: only the
 * last hold, when it is the first of a pair, strays. */
static void check_pairs(unsigned int frequency)
{
	struct sampling_clock clock;
	uint64_t periods[2][3];

	EXPECT(sampling_clock__init(&clock, frequency, true) == 0);
	clock.rng = 0x452821e638d01377ULL;
	for (int i = 0; i < 1000; i++) {
		uint64_t first = sampling_clock__next_hold(&clock, periods[0], 3);
		uint64_t second = sampling_clock__next_hold(&clock, periods[1], 3);

		EXPECT(first && first == second);
		for (int cpu = 0; cpu < 3; cpu++) {
			double sum = 1e9 / periods[0][cpu] + 1e9 / periods[1][cpu];

			EXPECT(fabs(sum - 2.0 * frequency - 1e9 / first) < 1e-5 * sum);
		}
	}
	for (int run = 0; run < 200; run++) {
		double time = 0, ticks = 0;

		while (time < 3000e9 / frequency) {
			uint64_t period, hold = sampling_clock__next_hold(&clock, &period, 1);

			ticks += floor((double)hold / period);
			time += hold;
		}
		ticks /= time / 1e9 * frequency;
		if (fabs(ticks - 1) > 0.01)
			fprintf(stderr, "%u Hz, 3000 ticks: %.4f of F\n", frequency, ticks);
		EXPECT(fabs(ticks - 1) <= 0.01);
	}
	free(clock.shares);
}

/* Work that repeats every `period` 1/F, half in one phase: over 60 s of
 * one CPU's ticks, the first half gets 50 +- 2 % of them (3 sd at 100
 * Hz). */
static void check_phases(unsigned int frequency, double period)
{
	double work = period * 1e9 / frequency, start = 0, in_first = 0, total = 0;
	struct sampling_clock clock;

	EXPECT(sampling_clock__init(&clock, frequency, true) == 0);
	clock.rng = 0x243f6a8885a308d3ULL;
	while (start < 60e9) {
		uint64_t tick, hold = sampling_clock__next_hold(&clock, &tick, 1);

		for (double t = start + tick; t < start + hold; t += tick) {
			in_first += fmod(t, work) < work / 2;
			total++;
		}
		start += hold;
	}
	free(clock.shares);
	if (fabs(100 * in_first / total - 50) > 2)
		fprintf(stderr, "%u Hz, work every %.3f/F: %.2f %% in its first half\n", frequency,
			period, 100 * in_first / total);
	EXPECT(fabs(100 * in_first / total - 50) <= 2);
}

int main(void)
{
	struct sampling_clock clock;
	struct sampling_clock_draw draw;
	int no_fds[2] = {-1, -1};

	check_random(1);
	check_random(99);
	check_random(499);
	check_random(999);
	check_random(4999);
	check_pairs(99);
	check_pairs(999);
	check_phases(499, 1.0);
	check_phases(499, 2.13 / 2.004);
	check_phases(100, 1.0);
	check_phases(99, 2.0);
	check_phases(999, 0.5);

	/* Fixed: every 1/F exactly, never drawn again. */
	EXPECT(sampling_clock__init(&clock, 999, false) == 0);
	draw = sampling_clock__draw(&clock);
	EXPECT(draw.period_ns == 1000000000ULL / 999 && draw.hold_ns == 0);
	EXPECT(sampling_clock__period(&clock) == 1000000000ULL / 999);
	EXPECT(sampling_clock__start(&clock, no_fds, 2) == 0 && !clock.running);
	sampling_clock__stop(&clock);

	/* Random with no open event: the thread starts, finds nothing to
	 * draw for, and stops. */
	EXPECT(sampling_clock__init(&clock, 999, true) == 0);
	EXPECT(sampling_clock__start(&clock, no_fds, 2) == 0 && clock.running);
	sampling_clock__stop(&clock);
	EXPECT(!clock.running && clock.draws == 0);
	sampling_clock__stop(&clock);

	/* No timer runs faster than every 10 us. */
	EXPECT(sampling_clock__init(&clock, 200000, true) == 0);
	EXPECT(sampling_clock__period(&clock) == 10000);

	EXPECT(sampling_clock__init(&clock, 0, true) == -EINVAL);

	if (failures)
		return 1;
	printf("PASS\n");
	return 0;
}
