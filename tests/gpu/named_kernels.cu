// SPDX-License-Identifier: GPL-2.0
/*
 * A CUDA program for scripts/gpu-check.sh: three named kernels that spin
 * for a set time, each launched from its own host function, timed with CUDA
 * events around every launch.  Prints "event NAME TOTAL_US COUNT" per kernel
 * and a checksum.
 *
 * named_kernels [ITERATIONS]
 */
#include <cuda_runtime.h>

#include <stdio.h>
#include <stdlib.h>

#define CHECK(call)                                                                                \
	do {                                                                                       \
		cudaError_t err_ = (call);                                                         \
		if (err_ != cudaSuccess) {                                                         \
			fprintf(stderr, "named_kernels: %s: %s\n", #call, cudaGetErrorString(err_)); \
			exit(1);                                                                   \
		}                                                                                  \
	} while (0)

__global__ void spin_alpha(long long cycles, int *out)
{
	long long start = clock64();

	while (clock64() - start < cycles)
		;
	out[0] += 1;
}

__global__ void spin_beta(long long cycles, int *out)
{
	long long start = clock64();

	while (clock64() - start < cycles)
		;
	out[1] += 2;
}

template <int N> __global__ void spin_gamma(long long cycles, int *out)
{
	long long start = clock64();

	while (clock64() - start < cycles)
		;
	out[2] += N;
}

struct timing {
	const char *name;
	double total_ms;
	long count;
	cudaEvent_t start, stop;
};

static long long cycles_per_us;
static int *device_out;

/* Each launch between two events on the default stream; the events'
 * elapsed time is the kernel's GPU time. */
template <typename Launch> static void timed(struct timing *t, Launch launch)
{
	float ms = 0;

	CHECK(cudaEventRecord(t->start));
	launch();
	CHECK(cudaEventRecord(t->stop));
	CHECK(cudaEventSynchronize(t->stop));
	CHECK(cudaEventElapsedTime(&ms, t->start, t->stop));
	t->total_ms += ms;
	t->count++;
}

__attribute__((noinline)) static void launch_alpha(struct timing *t)
{
	timed(t, [] { spin_alpha<<<1, 1>>>(2000 * cycles_per_us, device_out); });
}

__attribute__((noinline)) static void launch_beta(struct timing *t)
{
	timed(t, [] { spin_beta<<<1, 1>>>(1000 * cycles_per_us, device_out); });
}

__attribute__((noinline)) static void launch_gamma(struct timing *t)
{
	timed(t, [] { spin_gamma<3><<<1, 1>>>(500 * cycles_per_us, device_out); });
}

int main(int argc, char **argv)
{
	struct timing timings[3] = { { "spin_alpha" }, { "spin_beta" }, { "spin_gamma<3>" } };
	long iterations = argc > 1 ? strtol(argv[1], NULL, 10) : 300;
	int clock_khz = 0, host_out[3];

	CHECK(cudaDeviceGetAttribute(&clock_khz, cudaDevAttrClockRate, 0));
	cycles_per_us = clock_khz / 1000;
	CHECK(cudaMalloc(&device_out, sizeof(host_out)));
	CHECK(cudaMemset(device_out, 0, sizeof(host_out)));
	for (int i = 0; i < 3; i++) {
		CHECK(cudaEventCreate(&timings[i].start));
		CHECK(cudaEventCreate(&timings[i].stop));
	}
	for (long i = 0; i < iterations; i++) {
		launch_alpha(&timings[0]);
		launch_beta(&timings[1]);
		launch_gamma(&timings[2]);
	}
	CHECK(cudaMemcpy(host_out, device_out, sizeof(host_out), cudaMemcpyDeviceToHost));
	for (int i = 0; i < 3; i++)
		printf("event %s %.1f %ld\n", timings[i].name, timings[i].total_ms * 1000,
		       timings[i].count);
	printf("checksum %d %d %d\n", host_out[0], host_out[1], host_out[2]);
	return 0;
}
