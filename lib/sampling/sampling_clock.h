/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The perf_event periods behind fixed and randomised sampling, one timer
 * tick per sample either way.  Fixed: every 1e9/F ns, as perf does.
 * Random: each CPU ticks at a rate of its own drawn uniformly from
 * [F/2, 3F/2] and held for 8 to 24 samples' time (1/F each), then drawn
 * again; a thread of its own sleeps until the hold (one for all CPUs)
 * ends and sets each CPU's new period with PERF_EVENT_IOC_PERIOD, which
 * restarts that CPU's timer: its next tick comes one new period after the
 * change, at a random instant in any period of the target's work.  The
 * change costs each CPU one interrupt (a call from the thread's CPU) per
 * hold, some 1/16 of the ticks, and the thread one wake-up.  The mean rate
 * is F: a hold of H loses half a tick on average to its restart, which its
 * rate makes up (F' + 1/(2H)); and holds come in pairs whose rates average
 * F exactly (sampling_clock__next_hold()).
 */
#ifndef LLMPROF_SAMPLING_CLOCK_H
#define LLMPROF_SAMPLING_CLOCK_H

#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>

/* A hold lasts this many samples' time (of 1/F), drawn uniformly. */
#define SAMPLING_CLOCK_MIN_HOLD 8
#define SAMPLING_CLOCK_MAX_HOLD 24

struct sampling_clock {
	unsigned int frequency;
	/* The overhead governor's slowing: the clock ticks at frequency /
	 * divisor, each period divisor times as long (1: as asked). */
	unsigned int divisor;
	bool random;
	uint64_t rng;
	/* While random events run: the thread that draws their periods. */
	const int *fds; /* one per CPU, -1 where none */
	int nr_fds;
	uint64_t next_draw_ns; /* the end of the hold, CLOCK_MONOTONIC */
	pthread_t thread;
	pthread_mutex_t lock;
	pthread_cond_t wake;
	bool running, stopping;
	double *shares; /* per CPU, the first hold of a pair: its rate is (0.5 + share) F */
	int nr_shares;
	uint64_t pair_hold_ns; /* the second hold of a pair comes next, as long; 0: a new pair */
	uint64_t draws;	       /* periods set after the events were opened */
	uint64_t wake_ups;     /* of the thread, each a timer interrupt of its own */
	uint64_t late_max_ns;  /* the longest a draw came after its hold's end */
	uint64_t late_holds;   /* draws that came over a hold's longest past its end */
	int first_error;       /* of PERF_EVENT_IOC_PERIOD, -errno */
};

/* A period and how long it is held, in ns. */
struct sampling_clock_draw {
	uint64_t period_ns;
	uint64_t hold_ns;
};

/* 0, or -EINVAL for a zero frequency. */
int sampling_clock__init(struct sampling_clock *clock, unsigned int frequency, bool random);
/* The next period of one CPU's cpu-clock event and, when random, how long
 * to hold it (0 when fixed). */
struct sampling_clock_draw sampling_clock__draw(struct sampling_clock *clock);
/* The next hold of a random clock and, in periods[0..nr), a period for
 * each CPU.  Holds come in pairs of one length, the second at 2F minus each
 * CPU's first rate: each CPU's ticks over a pair are 2HF, so the rate over
 * a short profile does not wander with the draws.  The hold in ns, or 0
 * without memory. */
uint64_t sampling_clock__next_hold(struct sampling_clock *clock, uint64_t *periods, int nr);
/* The sample_period of the next CPU's cpu-clock event, in ns: 1/F, or the
 * first draw of a random clock, held from sampling_clock__start(). */
uint64_t sampling_clock__period(struct sampling_clock *clock);
/* Starts drawing new periods for the open events fds[0..nr_fds) (fd -1:
 * none), which stay open until sampling_clock__stop(); when fixed, only
 * keeps fds for sampling_clock__set_divisor().  0 or -errno. */
int sampling_clock__start(struct sampling_clock *clock, const int *fds, int nr_fds);
/* Stops the drawing, before the events are closed; safe to call again. */
void sampling_clock__stop(struct sampling_clock *clock);
/* Ticks at frequency / divisor from now: every period divisor times as
 * long.  A fixed clock's events get their new period at once; a random
 * clock draws new periods for every CPU at once.  0 or -errno (of the
 * first PERF_EVENT_IOC_PERIOD that failed). */
int sampling_clock__set_divisor(struct sampling_clock *clock, unsigned int divisor);

#endif /* LLMPROF_SAMPLING_CLOCK_H */
