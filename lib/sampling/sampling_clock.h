/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The perf_event periods behind fixed and randomised sampling.  Fixed: one
 * tick per sample, 1e9/F ns apart, as perf does.  Random: still one tick
 * per sample, but each CPU ticks at its own rate F (1 + d), |d| between
 * 0.05 and 0.10, drawn again about four times a second (d and then -d, so
 * the mean rate is F).  A tick's place in any period of the target's work
 * then moves by 5-10 % of 1/F at each tick, and over the target's period
 * the samples fall evenly; the redraws start each CPU's ticks at a new,
 * random phase.  So random sampling costs no more timer interrupts than
 * fixed, and no periodic work stays in step with it.
 */
#ifndef LLMPROF_SAMPLING_CLOCK_H
#define LLMPROF_SAMPLING_CLOCK_H

#include <stdbool.h>
#include <stdint.h>

/* The range of |d|. */
#define SAMPLING_CLOCK_MIN_SKEW 0.05
#define SAMPLING_CLOCK_MAX_SKEW 0.10

struct sampling_clock_cpu {
	uint64_t period_ns;	 /* the period now set; 0 before the first */
	uint64_t next_redraw_ns; /* CLOCK_MONOTONIC */
	double skew;		 /* d of the period now set */
	bool paired;		 /* the next draw is -skew */
};

struct sampling_clock {
	unsigned int frequency;
	bool random;
	uint64_t rng;
	struct sampling_clock_cpu *cpus;
	int nr_cpus;
};

/* 0, -EINVAL for a zero frequency or no CPU, -ENOMEM. */
int sampling_clock__init(struct sampling_clock *clock, unsigned int frequency, bool random,
			 int nr_cpus);
void sampling_clock__fini(struct sampling_clock *clock);
/* The sample_period for CPU cpu's cpu-clock event opened at now_ns
 * (CLOCK_MONOTONIC), in ns. */
uint64_t sampling_clock__period(struct sampling_clock *clock, int cpu, uint64_t now_ns);
/* Gives each open event (fds[cpu] >= 0) whose time has come a new random
 * period; nothing when fixed.  0 or -errno of the first failure. */
int sampling_clock__dither(struct sampling_clock *clock, const int *fds, int nr_fds,
			   uint64_t now_ns);

#endif /* LLMPROF_SAMPLING_CLOCK_H */
