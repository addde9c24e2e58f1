/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Randomised sampling intervals.  The cpu-clock event ticks several times
 * faster than the requested rate (lib/sampling/sampling_clock.c picks a
 * random period for each CPU), and this decides which ticks are samples:
 * time on each CPU is cut into intervals of sample_interval_ns, and the
 * first tick at or after a random instant in each interval is kept.  So the
 * mean rate is exact whatever ticks the kernel drops or delays, and no
 * periodic work can keep in step with the samples.  The instants are
 * stratified: each round of SAMPLING_CLOCK_STRATA intervals uses every
 * 1/SAMPLING_CLOCK_STRATA of an interval once, in random order, which keeps
 * the spread of short profiles near that of a fixed rate.
 */
#ifndef LLMPROF_SAMPLING_CLOCK_BPF_H
#define LLMPROF_SAMPLING_CLOCK_BPF_H

#define SAMPLING_CLOCK_STRATA 16

/* 0 keeps every tick (--sampling fixed); else the mean time between
 * samples on a CPU, in ns. */
const volatile __u64 sample_interval_ns = 0;

struct sampling_clock_state {
	__u64 interval_start; /* of this CPU's current interval; 0 before its first tick */
	__u64 deadline;	      /* the first tick at or after it is a sample */
	__u32 unused_strata;  /* bit i: stratum i not yet used in this round */
	__u32 nr_unused;
};

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct sampling_clock_state);
} sampling_clock SEC(".maps");

/* A random instant in the interval, from a stratum not used this round. */
static __always_inline __u64 sampling_clock__offset(struct sampling_clock_state *state,
						    __u64 interval)
{
	__u32 rank, stratum = 0;

	if (!state->nr_unused || state->nr_unused > SAMPLING_CLOCK_STRATA) {
		state->unused_strata = (1u << SAMPLING_CLOCK_STRATA) - 1;
		state->nr_unused = SAMPLING_CLOCK_STRATA;
	}
	rank = bpf_get_prandom_u32() % state->nr_unused;
	for (__u32 i = 0; i < SAMPLING_CLOCK_STRATA; i++) {
		if (!(state->unused_strata & (1u << i)))
			continue;
		if (rank-- == 0) {
			stratum = i;
			break;
		}
	}
	state->unused_strata &= ~(1u << stratum);
	state->nr_unused--;
	return (stratum * interval + (((__u64)bpf_get_prandom_u32() * interval) >> 32)) /
	       SAMPLING_CLOCK_STRATA;
}

/* Whether this tick is a sample. */
static __always_inline bool sampling_clock__keep(void)
{
	__u64 interval = sample_interval_ns, now;
	struct sampling_clock_state *state;
	__u32 zero = 0;

	if (!interval)
		return true;
	state = bpf_map_lookup_elem(&sampling_clock, &zero);
	if (!state)
		return true;
	now = bpf_ktime_get_ns();
	if (!state->interval_start) {
		state->interval_start = now;
		state->deadline = now + sampling_clock__offset(state, interval);
	}
	if (now < state->deadline)
		return false;
	state->interval_start += interval;
	/* Past the next interval too (the event was stopped, the CPU was
	 * away): start afresh rather than catch up in a burst. */
	if (now >= state->interval_start + interval)
		state->interval_start = now;
	state->deadline = state->interval_start + sampling_clock__offset(state, interval);
	return true;
}

#endif /* LLMPROF_SAMPLING_CLOCK_BPF_H */
