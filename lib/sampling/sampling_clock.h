/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The perf_event periods behind fixed and randomised sampling.  Fixed: one
 * tick per sample, 1e9/F ns apart, as perf does.  Random: each CPU ticks
 * about K = clamp(1000/F, 2, 8) times faster than F, at its own random
 * period, and the BPF program (bpf/sampling_clock.bpf.h) keeps one tick in
 * each 1/F of time at a random instant; the periods are drawn again now
 * and then, so no CPU's ticks stay in step with the target for long.
 */
#ifndef LLMPROF_SAMPLING_CLOCK_H
#define LLMPROF_SAMPLING_CLOCK_H

#include <stdbool.h>
#include <stdint.h>

struct sampling_clock {
	unsigned int frequency;
	bool random;
	unsigned int ticks_per_sample; /* K; 1 when fixed */
	uint64_t rng;
	uint64_t last_dither_ns;
};

/* 0, or -EINVAL for a zero frequency. */
int sampling_clock__init(struct sampling_clock *clock, unsigned int frequency, bool random);
/* What the BPF program's sample_interval_ns must be: 0 keeps every tick. */
uint64_t sampling_clock__interval_ns(const struct sampling_clock *clock);
/* The sample_period of the next CPU's cpu-clock event, in ns. */
uint64_t sampling_clock__period(struct sampling_clock *clock);
/* Gives each open event (fd >= 0) a new random period, at most once a
 * second (now_ns is CLOCK_MONOTONIC); nothing when fixed.  Restarting a
 * tick loses no sample: the BPF side keeps time, not ticks.  0 or -errno
 * of the first failure. */
int sampling_clock__dither(struct sampling_clock *clock, const int *fds, int nr_fds,
			   uint64_t now_ns);

#endif /* LLMPROF_SAMPLING_CLOCK_H */
