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

#include "sampling/sampling_clock.h"

#define NS_PER_S 1000000000ULL
/* The kernel runs cpu-clock timers no faster than every 10 us. */
#define MIN_PERIOD_NS 10000ULL

static uint64_t monotonic_now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * NS_PER_S + ts.tv_nsec;
}

int sampling_clock__init(struct sampling_clock *clock, unsigned int frequency, bool random)
{
	if (!frequency)
		return -EINVAL;
	*clock = (struct sampling_clock){.frequency = frequency, .random = random};
	if (getrandom(&clock->rng, sizeof(clock->rng), GRND_NONBLOCK) != sizeof(clock->rng))
		clock->rng = monotonic_now() ^ ((uint64_t)getpid() << 32);
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

struct sampling_clock_draw sampling_clock__draw(struct sampling_clock *clock)
{
	double interval = (double)NS_PER_S / clock->frequency, hold, rate;
	struct sampling_clock_draw draw = {0};

	if (!clock->random) {
		draw.period_ns = NS_PER_S / clock->frequency;
		return draw;
	}
	/* Rates over a range as wide as F, not periods near 1/F: ticks held
	 * near the period of the target's work would catch one phase of it
	 * for the whole hold.  Uniform in rate, so the mean rate is F. */
	hold = interval * (SAMPLING_CLOCK_MIN_HOLD +
			   (SAMPLING_CLOCK_MAX_HOLD - SAMPLING_CLOCK_MIN_HOLD) * uniform(clock));
	rate = clock->frequency * (0.5 + uniform(clock)) + NS_PER_S / (2 * hold);
	draw.period_ns = NS_PER_S / rate;
	if (draw.period_ns < MIN_PERIOD_NS)
		draw.period_ns = MIN_PERIOD_NS;
	draw.hold_ns = hold;
	return draw;
}

uint64_t sampling_clock__period(struct sampling_clock *clock)
{
	return sampling_clock__draw(clock).period_ns;
}

/* Sets new periods on the CPUs whose holds end within half the shortest
 * hold, so that one wake-up serves several, and sleeps until the next. */
static void *draw_periods(void *arg)
{
	struct sampling_clock *clock = arg;
	uint64_t batch_ns = NS_PER_S / clock->frequency * SAMPLING_CLOCK_MIN_HOLD / 2;

	pthread_mutex_lock(&clock->lock);
	while (!clock->stopping) {
		uint64_t now = monotonic_now(), earliest = UINT64_MAX;
		struct timespec until;

		for (int cpu = 0; cpu < clock->nr_fds; cpu++) {
			struct sampling_clock_draw draw;

			if (clock->fds[cpu] < 0)
				continue;
			if (clock->next_draw_ns[cpu] <= now + batch_ns) {
				draw = sampling_clock__draw(clock);
				if (ioctl(clock->fds[cpu], PERF_EVENT_IOC_PERIOD, &draw.period_ns) &&
				    !clock->first_error)
					clock->first_error = -errno;
				clock->next_draw_ns[cpu] = now + draw.hold_ns;
				clock->draws++;
			}
			if (clock->next_draw_ns[cpu] < earliest)
				earliest = clock->next_draw_ns[cpu];
		}
		if (earliest == UINT64_MAX)
			break;
		until.tv_sec = earliest / NS_PER_S;
		until.tv_nsec = earliest % NS_PER_S;
		if (pthread_cond_timedwait(&clock->wake, &clock->lock, &until) == ETIMEDOUT)
			clock->wake_ups++;
	}
	pthread_mutex_unlock(&clock->lock);
	return NULL;
}

int sampling_clock__start(struct sampling_clock *clock, const int *fds, int nr_fds)
{
	pthread_condattr_t attr;
	uint64_t now = monotonic_now();
	int err;

	if (!clock->random || clock->running)
		return 0;
	clock->next_draw_ns = calloc(nr_fds > 0 ? nr_fds : 1, sizeof(*clock->next_draw_ns));
	if (!clock->next_draw_ns)
		return -ENOMEM;
	/* The periods the events opened with are held from now. */
	for (int cpu = 0; cpu < nr_fds; cpu++)
		clock->next_draw_ns[cpu] = now + sampling_clock__draw(clock).hold_ns;
	clock->fds = fds;
	clock->nr_fds = nr_fds;
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
		free(clock->next_draw_ns);
		clock->next_draw_ns = NULL;
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
	free(clock->next_draw_ns);
	clock->next_draw_ns = NULL;
	clock->running = false;
}
