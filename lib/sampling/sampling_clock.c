// SPDX-License-Identifier: GPL-2.0
/* Periods of the sampling clock, and the thread that draws them again;
 * see sampling_clock.h. */
#include <errno.h>
#include <linux/perf_event.h>
#include <stdlib.h>
#include <sys/ioctl.h>
#include <sys/random.h>
#include <time.h>
#include <unistd.h>

#include "base/clock.h"
#include "sampling/sampling_clock.h"

#define NS_PER_S 1000000000ULL
/* The kernel runs cpu-clock timers no faster than every 10 us. */
#define MIN_PERIOD_NS 10000ULL

int sampling_clock__init(struct sampling_clock *clock, unsigned int frequency, bool random)
{
	if (!frequency)
		return -EINVAL;
	*clock = (struct sampling_clock){.frequency = frequency, .divisor = 1, .random = random};
	if (getrandom(&clock->rng, sizeof(clock->rng), GRND_NONBLOCK) != sizeof(clock->rng))
		clock->rng = clock__monotonic_ns() ^ ((uint64_t)getpid() << 32);
	clock->rng |= 1;
	return 0;
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

static uint64_t draw_hold(struct sampling_clock *clock)
{
	double interval = (double)NS_PER_S * clock->divisor / clock->frequency;

	return interval * (SAMPLING_CLOCK_MIN_HOLD +
			   (SAMPLING_CLOCK_MAX_HOLD - SAMPLING_CLOCK_MIN_HOLD) * uniform(clock));
}

/* The period of a rate of (0.5 + share) F held for hold_ns, with the half
 * tick its restart loses made up. */
static uint64_t period_of(const struct sampling_clock *clock, double share, uint64_t hold_ns)
{
	double rate =
	    (double)clock->frequency / clock->divisor * (0.5 + share) + NS_PER_S / (2.0 * hold_ns);
	uint64_t period = NS_PER_S / rate;

	return period < MIN_PERIOD_NS ? MIN_PERIOD_NS : period;
}

/* A period to hold for hold_ns.  Rates over a range as wide as F, not
 * periods near 1/F: ticks held near the period of the target's work would
 * catch one phase of it for the whole hold.  Uniform in rate, so the mean
 * rate is F. */
static uint64_t draw_period(struct sampling_clock *clock, uint64_t hold_ns)
{
	return period_of(clock, uniform(clock), hold_ns);
}

uint64_t sampling_clock__next_hold(struct sampling_clock *clock, uint64_t *periods, int nr)
{
	uint64_t hold = clock->pair_hold_ns;

	if (nr > clock->nr_shares) {
		double *shares = realloc(clock->shares, nr * sizeof(*shares));

		if (!shares)
			return 0;
		clock->shares = shares;
		clock->nr_shares = nr;
		hold = 0; /* a new pair: the shares are not all drawn */
	}
	if (!hold) {
		hold = draw_hold(clock);
		for (int cpu = 0; cpu < nr; cpu++) {
			clock->shares[cpu] = uniform(clock);
			periods[cpu] = period_of(clock, clock->shares[cpu], hold);
		}
		clock->pair_hold_ns = hold;
		return hold;
	}
	/* The second of the pair: as much slower as the first was faster
	 * (or the reverse), over as long, so each CPU's ticks over the pair
	 * are 2HF whatever the draws. */
	for (int cpu = 0; cpu < nr; cpu++)
		periods[cpu] = period_of(clock, 1 - clock->shares[cpu], hold);
	clock->pair_hold_ns = 0;
	return hold;
}

struct sampling_clock_draw sampling_clock__draw(struct sampling_clock *clock)
{
	struct sampling_clock_draw draw = {0};

	if (!clock->random) {
		draw.period_ns = NS_PER_S / clock->frequency * clock->divisor;
		return draw;
	}
	draw.hold_ns = draw_hold(clock);
	draw.period_ns = draw_period(clock, draw.hold_ns);
	return draw;
}

uint64_t sampling_clock__period(struct sampling_clock *clock)
{
	return sampling_clock__draw(clock).period_ns;
}

/* How late the thread came to a hold's end: a thread kept off its CPU
 * holds one period longer than drawn, and a period held long catches one
 * phase of periodic work (8 to 24 samples' time is what a hold is for). */
static void note_lateness(struct sampling_clock *clock, uint64_t now)
{
	uint64_t late = clock->next_draw_ns ? now - clock->next_draw_ns : 0;
	double longest =
	    (double)NS_PER_S * clock->divisor / clock->frequency * SAMPLING_CLOCK_MAX_HOLD;

	if (late > clock->late_max_ns)
		clock->late_max_ns = late;
	if (late > longest)
		clock->late_holds++;
}

/* At the end of each hold, a period of its own for every CPU's event, all
 * held until one new end: one wake-up serves every CPU. */
static void *draw_periods(void *arg)
{
	struct sampling_clock *clock = arg;
	uint64_t *periods = calloc(clock->nr_fds > 0 ? clock->nr_fds : 1, sizeof(*periods));
	bool any = false;

	for (int cpu = 0; cpu < clock->nr_fds; cpu++)
		any |= clock->fds[cpu] >= 0;
	pthread_mutex_lock(&clock->lock);
	while (any && periods && !clock->stopping) {
		uint64_t now = clock__monotonic_ns(), hold;
		struct timespec until;

		if (now >= clock->next_draw_ns) {
			note_lateness(clock, now);
			hold = sampling_clock__next_hold(clock, periods, clock->nr_fds);
			if (!hold) {
				clock->first_error =
				    clock->first_error ? clock->first_error : -ENOMEM;
				break;
			}
			for (int cpu = 0; cpu < clock->nr_fds; cpu++) {
				if (clock->fds[cpu] < 0)
					continue;
				if (ioctl(clock->fds[cpu], PERF_EVENT_IOC_PERIOD, &periods[cpu]) &&
				    !clock->first_error)
					clock->first_error = -errno;
				clock->draws++;
			}
			clock->next_draw_ns = now + hold;
		}
		until.tv_sec = clock->next_draw_ns / NS_PER_S;
		until.tv_nsec = clock->next_draw_ns % NS_PER_S;
		if (pthread_cond_timedwait(&clock->wake, &clock->lock, &until) == ETIMEDOUT)
			clock->wake_ups++;
	}
	pthread_mutex_unlock(&clock->lock);
	free(periods);
	return NULL;
}

int sampling_clock__start(struct sampling_clock *clock, const int *fds, int nr_fds)
{
	pthread_condattr_t attr;
	int err;

	if (clock->running)
		return 0;
	clock->fds = fds;
	clock->nr_fds = nr_fds;
	if (!clock->random)
		return 0;
	/* The periods the events opened with are held from now. */
	clock->next_draw_ns = clock__monotonic_ns() + draw_hold(clock);
	clock->stopping = false;
	pthread_mutex_init(&clock->lock, NULL);
	pthread_condattr_init(&attr);
	pthread_condattr_setclock(&attr, CLOCK_MONOTONIC);
	pthread_cond_init(&clock->wake, &attr);
	pthread_condattr_destroy(&attr);
	err = -pthread_create(&clock->thread, NULL, draw_periods, clock);
	if (err) {
		pthread_cond_destroy(&clock->wake);
		pthread_mutex_destroy(&clock->lock);
		return err;
	}
	clock->running = true;
	return 0;
}

void sampling_clock__stop(struct sampling_clock *clock)
{
	if (!clock->running)
		return;
	pthread_mutex_lock(&clock->lock);
	clock->stopping = true;
	pthread_cond_signal(&clock->wake);
	pthread_mutex_unlock(&clock->lock);
	pthread_join(clock->thread, NULL);
	pthread_cond_destroy(&clock->wake);
	pthread_mutex_destroy(&clock->lock);
	clock->running = false;
	free(clock->shares);
	clock->shares = NULL;
	clock->nr_shares = 0;
}

int sampling_clock__set_divisor(struct sampling_clock *clock, unsigned int divisor)
{
	uint64_t period;
	int err = 0;

	if (!divisor)
		return -EINVAL;
	if (!clock->running) {
		/* Fixed (no thread), or not started yet: the events, if any,
		 * take the new period here. */
		clock->divisor = divisor;
		period = sampling_clock__period(clock);
		for (int cpu = 0; cpu < clock->nr_fds; cpu++)
			if (clock->fds[cpu] >= 0 &&
			    ioctl(clock->fds[cpu], PERF_EVENT_IOC_PERIOD, &period) && !err)
				err = -errno;
		return err;
	}
	/* The thread draws every CPU's period again at once, a new pair. */
	pthread_mutex_lock(&clock->lock);
	clock->divisor = divisor;
	clock->pair_hold_ns = 0;
	clock->next_draw_ns = 0;
	pthread_cond_signal(&clock->wake);
	pthread_mutex_unlock(&clock->lock);
	return 0;
}
