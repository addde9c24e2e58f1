/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The clocks in nanoseconds: CLOCK_MONOTONIC (the clock of samples'
 * time_ns, bpf_ktime_get_ns()), CLOCK_REALTIME and the calling thread's
 * CPU time.  Header-only, so that the GPU agent may use it too.
 */
#ifndef LLMPROF_BASE_CLOCK_H
#define LLMPROF_BASE_CLOCK_H

#include <stdint.h>
#include <time.h>

static inline uint64_t clock__ns(clockid_t id)
{
	struct timespec ts;

	clock_gettime(id, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ULL + ts.tv_nsec;
}

static inline uint64_t clock__monotonic_ns(void)
{
	return clock__ns(CLOCK_MONOTONIC);
}

static inline uint64_t clock__realtime_ns(void)
{
	return clock__ns(CLOCK_REALTIME);
}

static inline uint64_t clock__thread_cpu_ns(void)
{
	return clock__ns(CLOCK_THREAD_CPUTIME_ID);
}

/* CLOCK_REALTIME timeout_ms from now, for pthread_cond_timedwait(). */
static inline struct timespec clock__realtime_after_ms(unsigned int timeout_ms)
{
	uint64_t ns = clock__realtime_ns() + (uint64_t)timeout_ms * 1000000ULL;

	return (struct timespec){.tv_sec = ns / 1000000000ULL, .tv_nsec = ns % 1000000000ULL};
}

#endif
