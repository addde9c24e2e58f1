/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The overhead governor (--max-overhead PCT).  Each second of a session it
 * measures what llmprof cost: the run time of its BPF programs (with the
 * kernel's run-time statistics on, BPF_ENABLE_STATS, for as long as the
 * governor runs) and its own CPU time, against the CPU time the target
 * processes had in that second (their /proc/PID/stat, less the BPF time
 * that ran in them).  Over the budget, CPU sampling slows by a whole
 * factor, the divisor: each CPU ticks every divisor periods, and each
 * sample after the change weighs divisor samples (or periods of wall
 * time), so that totals and shares stay those of the asked rate.  Under a
 * third of the budget for three seconds in a row, the divisor halves
 * again.  Every change is said on stderr and kept, by time, for the
 * weights.
 */
#ifndef LLMPROF_GOVERNOR_H
#define LLMPROF_GOVERNOR_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* The slowest the governor samples: 1/64 of the asked rate. */
#define GOVERNOR_MAX_DIVISOR 64
#define GOVERNOR_WINDOW_NS 1000000000ULL
/* Windows in a row under a third of the budget before speeding up. */
#define GOVERNOR_CALM_WINDOWS 3

/* From time_ns on (CLOCK_MONOTONIC, as the samples' times), CPU samples
 * were taken every divisor periods. */
struct governor_step {
	uint64_t time_ns;
	unsigned int divisor;
};

struct governor {
	double budget;		  /* share of the target's CPU time; 0: off */
	int stats_fd;		  /* BPF_ENABLE_STATS, or -1 */
	bool started, warm;	  /* measuring; past the first window */
	uint64_t window_ns;	  /* when the window began */
	uint64_t bpf_ns, self_ns; /* at its start */
	uint64_t target_ns;	  /* the target's CPU time in the window so far */
	unsigned int divisor, calm;
	struct governor_step *steps; /* every change, in time order */
	size_t nr_steps, cap_steps;
	uint64_t windows; /* measured */
	double last_share, worst_share, sum_share;
};

/* A governor holding budget (a share, 0.01 for 1 %; 0: off).  Turns the
 * kernel's BPF run-time statistics on for as long as it lives; without
 * them (an older kernel), only llmprof's own CPU time is counted.  0 or
 * -errno. */
int governor__init(struct governor *g, double budget);
void governor__free(struct governor *g);
/* The divisor after a window whose cost was share of the target's CPU:
 * over budget, the divisor that would have held it (a power of two, at
 * most GOVERNOR_MAX_DIVISOR); calm windows counted in *calm. */
unsigned int governor__next_divisor(unsigned int divisor, double share, double budget,
				    unsigned int *calm);
/* Adds CPU time the target had (in ns) since the last call. */
void governor__add_target_time(struct governor *g, uint64_t ns);
/* At now (CLOCK_MONOTONIC): once a window has passed, measures it and
 * returns the divisor to sample at from now (the same one, or a new one
 * that the caller applies, after which it calls governor__changed()). */
unsigned int governor__tick(struct governor *g, uint64_t now);
/* Keeps the change to divisor at now for the weights.  0 or -ENOMEM. */
int governor__changed(struct governor *g, uint64_t now, unsigned int divisor);
/* The divisor a CPU sample taken at time_ns was taken at. */
unsigned int governor__divisor_at(const struct governor *g, uint64_t time_ns);

#endif /* LLMPROF_GOVERNOR_H */
