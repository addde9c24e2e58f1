// SPDX-License-Identifier: GPL-2.0
/* Periods of the sampling clock; see sampling_clock.h. */
#include <errno.h>
#include <linux/perf_event.h>
#include <sys/ioctl.h>
#include <sys/random.h>
#include <time.h>
#include <unistd.h>

#include "sampling/sampling_clock.h"

#define NS_PER_S 1000000000ULL
/* Ticks per second that K aims at, and the bounds on K.  Every tick is a
 * timer interrupt on every CPU: some 1 us on bare metal, but 30-45 us in
 * some VMs, where 10000 a second took 40 % of the target's CPU. */
#define TARGET_TICK_RATE 1000
#define MIN_TICKS_PER_SAMPLE 2
#define MAX_TICKS_PER_SAMPLE 8
/* The kernel runs cpu-clock timers no faster than every 10 us. */
#define MIN_PERIOD_NS 10000ULL
#define DITHER_INTERVAL_NS NS_PER_S

int sampling_clock__init(struct sampling_clock *clock, unsigned int frequency, bool random)
{
	unsigned int k = frequency ? TARGET_TICK_RATE / frequency : 0;

	if (!frequency)
		return -EINVAL;
	if (k < MIN_TICKS_PER_SAMPLE)
		k = MIN_TICKS_PER_SAMPLE;
	if (k > MAX_TICKS_PER_SAMPLE)
		k = MAX_TICKS_PER_SAMPLE;
	clock->frequency = frequency;
	clock->random = random;
	clock->ticks_per_sample = random ? k : 1;
	clock->last_dither_ns = 0;
	if (getrandom(&clock->rng, sizeof(clock->rng), GRND_NONBLOCK) != sizeof(clock->rng)) {
		struct timespec ts;

		clock_gettime(CLOCK_MONOTONIC, &ts);
		clock->rng = ts.tv_nsec ^ ((uint64_t)ts.tv_sec << 32) ^ getpid();
	}
	clock->rng |= 1;
	return 0;
}

uint64_t sampling_clock__interval_ns(const struct sampling_clock *clock)
{
	return clock->random ? NS_PER_S / clock->frequency : 0;
}

/* xorshift64*: a different stream every run, good enough for periods. */
static uint64_t next_random(struct sampling_clock *clock)
{
	clock->rng ^= clock->rng >> 12;
	clock->rng ^= clock->rng << 25;
	clock->rng ^= clock->rng >> 27;
	return clock->rng * 0x2545f4914f6cdd1dULL;
}

uint64_t sampling_clock__period(struct sampling_clock *clock)
{
	double rate, uniform;
	uint64_t period;

	if (!clock->random)
		return NS_PER_S / clock->frequency;
	/* K to 1.25 K ticks per sample, uniform in rate: a period drawn from
	 * a continuous range is in step with no workload's period. */
	uniform = (next_random(clock) >> 11) * 0x1p-53;
	rate = (double)clock->frequency * clock->ticks_per_sample * (1 + uniform / 4);
	period = NS_PER_S / rate;
	return period < MIN_PERIOD_NS ? MIN_PERIOD_NS : period;
}

int sampling_clock__dither(struct sampling_clock *clock, const int *fds, int nr_fds,
			   uint64_t now_ns)
{
	int err = 0;

	if (!clock->random)
		return 0;
	if (!clock->last_dither_ns)
		clock->last_dither_ns = now_ns; /* the events have just been opened */
	if (now_ns < clock->last_dither_ns + DITHER_INTERVAL_NS)
		return 0;
	clock->last_dither_ns = now_ns;
	for (int i = 0; i < nr_fds; i++) {
		uint64_t period = sampling_clock__period(clock);

		if (fds[i] < 0)
			continue;
		if (ioctl(fds[i], PERF_EVENT_IOC_PERIOD, &period) && !err)
			err = -errno;
	}
	return err;
}
