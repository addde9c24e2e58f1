// SPDX-License-Identifier: GPL-2.0
/*
 * lib/base/clock.h against the C library's clocks, and lib/base/units.c's
 * names as speedscope's schema and llmprof's reports spell them.
 */
#include <stdio.h>
#include <string.h>
#include <sys/time.h>
#include <unistd.h>

#include "base/clock.h"
#include "base/units.h"
#include "check.h"

static void test_clock(void)
{
	struct timeval tv;
	struct timespec ts, deadline;
	uint64_t before, after, real, cpu;
	volatile uint64_t sink = 0;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	before = (uint64_t)ts.tv_sec * 1000000000ULL + ts.tv_nsec;
	after = clock__monotonic_ns();
	CHECK(after >= before && after - before < 1000000000ULL, "monotonic %llu after %llu",
	      (unsigned long long)after, (unsigned long long)before);
	usleep(20000);
	CHECK(clock__monotonic_ns() - after >= 20000000ULL, "20 ms sleep not seen");

	gettimeofday(&tv, NULL);
	real = clock__realtime_ns();
	CHECK(real / 1000 >= (uint64_t)tv.tv_sec * 1000000ULL + tv.tv_usec &&
		  real / 1000000000ULL - tv.tv_sec < 2,
	      "realtime %llu, gettimeofday %ld", (unsigned long long)real, (long)tv.tv_sec);

	cpu = clock__thread_cpu_ns();
	for (int i = 0; i < 10000000; i++)
		sink += i;
	CHECK(clock__thread_cpu_ns() > cpu, "thread CPU time did not move");

	real = clock__realtime_ns();
	deadline = clock__realtime_after_ms(1500);
	CHECK(deadline.tv_nsec >= 0 && deadline.tv_nsec < 1000000000L, "tv_nsec %ld",
	      deadline.tv_nsec);
	before = (uint64_t)deadline.tv_sec * 1000000000ULL + deadline.tv_nsec;
	CHECK(before >= real + 1500000000ULL && before < real + 2500000000ULL, "deadline");
}

static void test_units(void)
{
	CHECK(!strcmp(unit__name(UNIT_MICROSECONDS, "x"), "microseconds"), "microseconds");
	CHECK(!strcmp(unit__name(UNIT_NANOSECONDS, "x"), "nanoseconds"), "nanoseconds");
	CHECK(!strcmp(unit__name(UNIT_BYTES, "x"), "bytes"), "bytes");
	CHECK(!strcmp(unit__name(UNIT_SAMPLES, UNIT_NAME_SPEEDSCOPE_COUNT), "none"), "speedscope");
	CHECK(!strcmp(unit__name(UNIT_SAMPLES, UNIT_NAME_REPORT_COUNT), "samples"), "report");
	CHECK(!strcmp(unit__name((enum profile_unit)99, "samples"), "samples"), "unknown unit");
}

int main(void)
{
	test_clock();
	test_units();
	if (failures)
		return 1;
	printf("clock, units: all checks passed\n");
	return 0;
}
