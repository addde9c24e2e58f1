// SPDX-License-Identifier: GPL-2.0
/*
 * The launch probe's rate limit (bpf/launch_rate.h) on simulated launch
 * streams, and its graph-launch callback ids against CUPTI's headers.
 */
#include <cupti.h>
#include <linux/types.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include "sampler.h"
#include "launch_rate.h"

static int failures;

#define CHECK(cond, ...)                                                                           \
	do {                                                                                       \
		if (!(cond)) {                                                                     \
			fprintf(stderr, "FAIL %s:%d: ", __FILE__, __LINE__);                       \
			fprintf(stderr, __VA_ARGS__);                                              \
			fputc('\n', stderr);                                                       \
			failures++;                                                                \
		}                                                                                  \
	} while (0)

/* xorshift32: the same stream on every run. */
static uint32_t next_random(void)
{
	static uint32_t x = 2463534242u;

	x ^= x << 13;
	x ^= x >> 17;
	x ^= x << 5;
	return x;
}

/* Launches every period_ns from start_ns for count launches; stacks taken. */
static uint64_t stream(struct launch_bucket *b, uint64_t start_ns, uint64_t period_ns,
		       uint64_t count, uint64_t interval_ns)
{
	uint64_t taken = 0;

	for (uint64_t i = 0; i < count; i++)
		taken +=
		    launch_bucket__take(b, start_ns + i * period_ns, interval_ns, next_random());
	return taken;
}

/* A training loop's step: 7 launches 5 us apart, then 2 ms waiting on the
 * GPU, for 20 s at 100 stacks a second.  Every launch site must get its
 * share of the stacks, the first (after the wait) no more than the others. */
static void periodic_loop(void)
{
	const uint64_t sites = 7, gap = 5000, wait = 2000000, steps = 20ull * 1000000000 / wait;
	struct launch_bucket b = {0};
	uint64_t per_site[7] = {0}, total = 0, now = 1000000000;

	for (uint64_t step = 0; step < steps; step++) {
		for (uint64_t k = 0; k < sites; k++) {
			if (launch_bucket__take(&b, now, 10000000, next_random())) {
				per_site[k]++;
				total++;
			}
			now += gap;
		}
		now += wait;
	}
	CHECK(total >= 1800 && total <= LAUNCH_STACK_BURST + 2000,
	      "periodic loop: %llu stacks in 20 s at 100/s", (unsigned long long)total);
	for (uint64_t k = 0; k < sites; k++)
		CHECK(per_site[k] * sites > total * 8 / 10 && per_site[k] * sites < total * 12 / 10,
		      "periodic loop: site %llu took %llu of %llu stacks", (unsigned long long)k,
		      (unsigned long long)per_site[k], (unsigned long long)total);
}

int main(void)
{
	const uint64_t ms = 1000000, s = 1000 * ms;
	struct launch_bucket b = {0};
	uint64_t taken;

	CHECK(LAUNCH_DOMAIN_DRIVER == CUPTI_CB_DOMAIN_DRIVER_API, "driver domain");
	CHECK(LAUNCH_DOMAIN_RUNTIME == CUPTI_CB_DOMAIN_RUNTIME_API, "runtime domain");
	CHECK(LAUNCH_CBID_CUDA_GRAPH_LAUNCH == CUPTI_RUNTIME_TRACE_CBID_cudaGraphLaunch_v10000,
	      "cudaGraphLaunch");
	CHECK(LAUNCH_CBID_CUDA_GRAPH_LAUNCH_PTSZ ==
		  CUPTI_RUNTIME_TRACE_CBID_cudaGraphLaunch_ptsz_v10000,
	      "cudaGraphLaunch_ptsz");
	CHECK(LAUNCH_CBID_CU_GRAPH_LAUNCH == CUPTI_DRIVER_TRACE_CBID_cuGraphLaunch,
	      "cuGraphLaunch");
	CHECK(LAUNCH_CBID_CU_GRAPH_LAUNCH_PTSZ == CUPTI_DRIVER_TRACE_CBID_cuGraphLaunch_ptsz,
	      "cuGraphLaunch_ptsz");

	/* 10,000 launches a second for 10 s at 100 stacks a second: the
	 * first burst, then one per interval. */
	taken = stream(&b, 1 * s, 100000, 100000, 10 * ms);
	CHECK(taken >= 900 && taken <= LAUNCH_STACK_BURST + 1000,
	      "10 s at 10,000/s, limit 100/s: %llu stacks", (unsigned long long)taken);

	/* A second idle refills the burst, no more. */
	taken = stream(&b, 12 * s, 1000, 100, 10 * ms);
	CHECK(taken == LAUNCH_STACK_BURST, "burst after a quiet second: %llu",
	      (unsigned long long)taken);

	periodic_loop();

	/* Below the rate every launch takes its stack. */
	b = (struct launch_bucket){0};
	taken = stream(&b, 1 * s, 20 * ms, 500, 10 * ms);
	CHECK(taken == 500, "50/s under a 100/s limit: %llu of 500", (unsigned long long)taken);

	/* No limit. */
	b = (struct launch_bucket){0};
	taken = stream(&b, 1 * s, 1000, 5000, 0);
	CHECK(taken == 5000, "no limit: %llu of 5000", (unsigned long long)taken);

	/* A clock that steps back (another CPU's) takes nothing extra. */
	b = (struct launch_bucket){0};
	taken = stream(&b, 5 * s, 1000, 100, 10 * ms);
	taken += stream(&b, 4 * s, 1000, 100, 10 * ms);
	CHECK(taken == LAUNCH_STACK_BURST, "clock steps back: %llu", (unsigned long long)taken);

	if (!failures)
		printf("PASS\n");
	return failures ? 1 : 0;
}
