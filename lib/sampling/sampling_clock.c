// SPDX-License-Identifier: GPL-2.0
/* Periods of the sampling clock; see sampling_clock.h. */
#include <errno.h>
#include <linux/perf_event.h>
#include <math.h>
#include <stdlib.h>
#include <sys/ioctl.h>
#include <sys/random.h>
#include <time.h>
#include <unistd.h>

#include "sampling/sampling_clock.h"

#define NS_PER_S 1000000000ULL
/* The kernel runs cpu-clock timers no faster than every 10 us. */
#define MIN_PERIOD_NS 10000ULL
/* How long a period stays set, at least. */
#define MIN_HOLD_NS (NS_PER_S / 4)

int sampling_clock__init(struct sampling_clock *clock, unsigned int frequency, bool random,
			 int nr_cpus)
{
	if (!frequency || nr_cpus <= 0)
		return -EINVAL;
	clock->frequency = frequency;
	clock->random = random;
	clock->nr_cpus = nr_cpus;
	clock->cpus = calloc(nr_cpus, sizeof(*clock->cpus));
	if (!clock->cpus)
		return -ENOMEM;
	if (getrandom(&clock->rng, sizeof(clock->rng), GRND_NONBLOCK) != sizeof(clock->rng)) {
		struct timespec ts;

		clock_gettime(CLOCK_MONOTONIC, &ts);
		clock->rng = ts.tv_nsec ^ ((uint64_t)ts.tv_sec << 32) ^ getpid();
	}
	clock->rng |= 1;
	return 0;
}

void sampling_clock__fini(struct sampling_clock *clock)
{
	free(clock->cpus);
	clock->cpus = NULL;
}

/* xorshift64*: a different stream every run, good enough for periods. */
static uint64_t next_random(struct sampling_clock *clock)
{
	clock->rng ^= clock->rng >> 12;
	clock->rng ^= clock->rng << 25;
	clock->rng ^= clock->rng >> 27;
	return clock->rng * 0x2545f4914f6cdd1dULL;
}

static double uniform(struct sampling_clock *clock)
{
	return (next_random(clock) >> 11) * 0x1p-53;
}

uint64_t sampling_clock__period(struct sampling_clock *clock, int cpu, uint64_t now_ns)
{
	struct sampling_clock_cpu *c = &clock->cpus[cpu];
	double interval = (double)NS_PER_S / clock->frequency, sweep, hold, period;

	if (!clock->random)
		return NS_PER_S / clock->frequency;
	if (c->paired) {
		c->skew = -c->skew;
	} else {
		/* From a continuous range: in step with no workload's
		 * period for long. */
		c->skew = SAMPLING_CLOCK_MIN_SKEW +
			  (SAMPLING_CLOCK_MAX_SKEW - SAMPLING_CLOCK_MIN_SKEW) * uniform(clock);
		if (next_random(clock) & 1)
			c->skew = -c->skew;
	}
	c->paired = !c->paired;
	/* Each tick moves 1/F |d| later or earlier in any 1/F of time:
	 * whole sweeps of 1/F, as near as the redraw can be timed, spread
	 * the samples evenly over it. */
	sweep = interval / fabs(c->skew);
	hold = ceil(MIN_HOLD_NS / sweep) * sweep;
	period = interval / (1 + c->skew);
	/* A redraw restarts the timer: the tick it cuts short comes, on
	 * average, half a period late; the new period makes that up. */
	if (c->period_ns)
		period *= 1 - c->period_ns / (2 * hold);
	c->period_ns = period < MIN_PERIOD_NS ? MIN_PERIOD_NS : (uint64_t)period;
	c->next_redraw_ns = now_ns + (uint64_t)hold;
	return c->period_ns;
}

int sampling_clock__dither(struct sampling_clock *clock, const int *fds, int nr_fds,
			   uint64_t now_ns)
{
	int err = 0;

	if (!clock->random)
		return 0;
	for (int cpu = 0; cpu < nr_fds && cpu < clock->nr_cpus; cpu++) {
		uint64_t period;

		if (fds[cpu] < 0 || now_ns < clock->cpus[cpu].next_redraw_ns)
			continue;
		period = sampling_clock__period(clock, cpu, now_ns);
		if (ioctl(fds[cpu], PERF_EVENT_IOC_PERIOD, &period) && !err)
			err = -errno;
	}
	return err;
}
