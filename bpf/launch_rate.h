/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The rate limit on GPU launch stacks per thread, shared by the launch
 * probe (sampler.bpf.c) and its unit test: plain arithmetic on __u64, the
 * random number passed in.
 */
#ifndef LLMPROF_BPF_LAUNCH_RATE_H
#define LLMPROF_BPF_LAUNCH_RATE_H

/*
 * A thread's bucket.  Two parts:
 *
 * - A token bucket, the hard limit: credit_ns grows with the time elapsed,
 *   up to LAUNCH_STACK_BURST intervals, and a stack costs one interval.
 * - A chance per launch: a window (the burst's span) allows
 *   LAUNCH_STACK_BURST stacks, so a launch takes its stack with probability
 *   that over the launches the previous window had.  Without it the token
 *   would go to whichever launch first finds the credit full, the same
 *   few of a periodic training loop's every step (those after its longest
 *   gap), and a kernel launched right after another would never get a
 *   stack of its own; with it every launch site is sampled in proportion to
 *   its launches.
 *
 * last_ns 0: a thread not seen yet, which starts with a full bucket.
 */
struct launch_bucket {
	__u64 last_ns;
	__u64 credit_ns;
	__u64 window_start_ns;
	__u32 window_launches; /* launches in the window so far */
	__u32 recent_launches; /* in the window before: what the chance follows */
};

/* True when a launch at now_ns may take its stack; interval_ns 0: always.
 * random is uniform over 32 bits. */
static inline bool launch_bucket__take(struct launch_bucket *b, __u64 now_ns, __u64 interval_ns,
				       __u32 random)
{
	__u64 window = LAUNCH_STACK_BURST * interval_ns;

	if (!interval_ns)
		return true;
	if (!b->last_ns) {
		b->credit_ns = window;
		b->window_start_ns = now_ns;
	} else if (now_ns > b->last_ns) {
		b->credit_ns += now_ns - b->last_ns;
	}
	if (b->credit_ns > window)
		b->credit_ns = window;
	b->last_ns = now_ns;
	if (now_ns >= b->window_start_ns + window) {
		/* A quiet window between: the rate starts over. */
		b->recent_launches =
		    now_ns < b->window_start_ns + 2 * window ? b->window_launches : 0;
		b->window_launches = 0;
		b->window_start_ns = now_ns;
	}
	if (b->window_launches < 0xffffffffu)
		b->window_launches++;
	if (b->recent_launches > LAUNCH_STACK_BURST &&
	    (__u64)random * b->recent_launches >= (__u64)LAUNCH_STACK_BURST << 32)
		return false;
	if (b->credit_ns < interval_ns)
		return false;
	b->credit_ns -= interval_ns;
	return true;
}

#endif /* LLMPROF_BPF_LAUNCH_RATE_H */
