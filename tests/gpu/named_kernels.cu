// SPDX-License-Identifier: GPL-2.0
/*
 * A CUDA program for scripts/gpu-check.sh: named kernels that spin for a
 * set time, each launched from its own host function; host-to-device copies
 * from pageable and from pinned memory; a CUDA graph of two kernels; two
 * threads launching at once, each on its own stream; and, built with
 * -DWITH_CUBLAS -lcublas, cuBLAS SGEMMs (kernels launched through the
 * driver API).  Every operation is timed with CUDA events around it.
 * Prints "event NAME TOTAL_US COUNT" per group (COUNT operations: launches,
 * copies, graph launches, GEMM calls), "cublas none" when built without
 * cuBLAS, and a checksum.
 *
 * named_kernels [ITERATIONS]
 */
#include <cuda_runtime.h>
#ifdef WITH_CUBLAS
#include <cublas_v2.h>
#endif

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

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

__global__ void graph_node_first(long long cycles, int *out)
{
	long long start = clock64();

	while (clock64() - start < cycles)
		;
	out[3] += 1;
}

__global__ void graph_node_second(long long cycles, int *out)
{
	long long start = clock64();

	while (clock64() - start < cycles)
		;
	out[4] += 1;
}

__global__ void spin_thread_a(long long cycles, int *out)
{
	long long start = clock64();

	while (clock64() - start < cycles)
		;
	out[5] += 1;
}

__global__ void spin_thread_b(long long cycles, int *out)
{
	long long start = clock64();

	while (clock64() - start < cycles)
		;
	out[6] += 1;
}

struct timing {
	const char *name;
	double total_ms;
	long count;
	cudaEvent_t start, stop;
};

#define NR_OUT 7
#define COPY_BYTES (8 << 20)
#define GEMM_SIZE 2048

static long long cycles_per_us;
static int *device_out;

/* Each operation between two events on its stream; the events' elapsed
 * time is its GPU time. */
template <typename Launch>
static void timed(struct timing *t, Launch launch, cudaStream_t stream = 0)
{
	float ms = 0;

	CHECK(cudaEventRecord(t->start, stream));
	launch();
	CHECK(cudaEventRecord(t->stop, stream));
	CHECK(cudaEventSynchronize(t->stop));
	CHECK(cudaEventElapsedTime(&ms, t->start, t->stop));
	t->total_ms += ms;
	t->count++;
}

static void timing_init(struct timing *t, const char *name)
{
	memset(t, 0, sizeof(*t));
	t->name = name;
	CHECK(cudaEventCreate(&t->start));
	CHECK(cudaEventCreate(&t->stop));
}

static void timing_print(const struct timing *t)
{
	printf("event %s %.1f %ld\n", t->name, t->total_ms * 1000, t->count);
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

/* cudaMemcpy from malloc'd memory: staged by the driver, synchronous. */
__attribute__((noinline)) static void copy_pageable(struct timing *t, void *device, void *host)
{
	timed(t, [=] { CHECK(cudaMemcpy(device, host, COPY_BYTES, cudaMemcpyHostToDevice)); });
}

__attribute__((noinline)) static void copy_pinned(struct timing *t, void *device, void *host)
{
	timed(t, [=] {
		CHECK(cudaMemcpyAsync(device, host, COPY_BYTES, cudaMemcpyHostToDevice, 0));
	});
}

/* A graph of two kernels, captured once; each launch runs both. */
static cudaGraphExec_t build_graph(cudaStream_t stream)
{
	cudaGraphExec_t exec;
	cudaGraph_t graph;

	CHECK(cudaStreamBeginCapture(stream, cudaStreamCaptureModeGlobal));
	graph_node_first<<<1, 1, 0, stream>>>(300 * cycles_per_us, device_out);
	graph_node_second<<<1, 1, 0, stream>>>(200 * cycles_per_us, device_out);
	CHECK(cudaStreamEndCapture(stream, &graph));
	CHECK(cudaGraphInstantiate(&exec, graph, 0));
	CHECK(cudaGraphDestroy(graph));
	return exec;
}

__attribute__((noinline)) static void launch_graph(struct timing *t, cudaGraphExec_t exec,
						   cudaStream_t stream)
{
	timed(t, [=] { CHECK(cudaGraphLaunch(exec, stream)); }, stream);
}

struct thread_work {
	struct timing timing;
	long iterations;
};

__attribute__((noinline)) static void *thread_a_loop(void *arg)
{
	struct thread_work *w = (struct thread_work *)arg;
	cudaStream_t stream;

	CHECK(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
	for (long i = 0; i < w->iterations; i++)
		timed(&w->timing,
		      [=] { spin_thread_a<<<1, 1, 0, stream>>>(400 * cycles_per_us, device_out); },
		      stream);
	CHECK(cudaStreamDestroy(stream));
	return NULL;
}

__attribute__((noinline)) static void *thread_b_loop(void *arg)
{
	struct thread_work *w = (struct thread_work *)arg;
	cudaStream_t stream;

	CHECK(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
	for (long i = 0; i < w->iterations; i++)
		timed(&w->timing,
		      [=] { spin_thread_b<<<1, 1, 0, stream>>>(300 * cycles_per_us, device_out); },
		      stream);
	CHECK(cudaStreamDestroy(stream));
	return NULL;
}

#ifdef WITH_CUBLAS
#define CHECK_CUBLAS(call)                                                                         \
	do {                                                                                       \
		cublasStatus_t status_ = (call);                                                   \
		if (status_ != CUBLAS_STATUS_SUCCESS) {                                            \
			fprintf(stderr, "named_kernels: %s: cuBLAS status %d\n", #call,            \
				(int)status_);                                                     \
			exit(1);                                                                   \
		}                                                                                  \
	} while (0)

static void gemm(cublasHandle_t handle, const float *a, const float *b, float *c)
{
	const float one = 1, zero = 0;

	CHECK_CUBLAS(cublasSgemm(handle, CUBLAS_OP_N, CUBLAS_OP_N, GEMM_SIZE, GEMM_SIZE, GEMM_SIZE,
				 &one, a, GEMM_SIZE, b, GEMM_SIZE, &zero, c, GEMM_SIZE));
}

/* The handle, the workspace and the kernel's module load, outside the
 * timed calls (and under another function). */
__attribute__((noinline)) static void warm_cublas(cublasHandle_t handle, float *m)
{
	gemm(handle, m, m, m + 2 * GEMM_SIZE * GEMM_SIZE);
	CHECK(cudaDeviceSynchronize());
}

__attribute__((noinline)) static void launch_cublas(struct timing *t, cublasHandle_t handle,
						    float *m)
{
	timed(t, [=] { gemm(handle, m, m + GEMM_SIZE * GEMM_SIZE, m + 2 * GEMM_SIZE * GEMM_SIZE); });
}

static void run_cublas(long iterations)
{
	struct timing t;
	cublasHandle_t handle;
	float *m;

	timing_init(&t, "cublas_sgemm");
	CHECK(cudaMalloc(&m, 3ul * GEMM_SIZE * GEMM_SIZE * sizeof(float)));
	CHECK(cudaMemset(m, 0, 3ul * GEMM_SIZE * GEMM_SIZE * sizeof(float)));
	CHECK_CUBLAS(cublasCreate(&handle));
	warm_cublas(handle, m);
	for (long i = 0; i < iterations; i++)
		launch_cublas(&t, handle, m);
	CHECK_CUBLAS(cublasDestroy(handle));
	CHECK(cudaFree(m));
	timing_print(&t);
}
#else
static void run_cublas(long iterations)
{
	(void)iterations;
	printf("cublas none\n");
}
#endif

int main(int argc, char **argv)
{
	struct timing timings[3], pageable, pinned, graph;
	struct thread_work work_a, work_b;
	long iterations = argc > 1 ? strtol(argv[1], NULL, 10) : 300;
	long fewer = iterations / 3 ? iterations / 3 : 1;
	int clock_khz = 0, host_out[NR_OUT];
	void *device_copy, *host_pageable, *host_pinned;
	cudaGraphExec_t exec;
	cudaStream_t stream;
	pthread_t thread_a, thread_b;

	CHECK(cudaDeviceGetAttribute(&clock_khz, cudaDevAttrClockRate, 0));
	cycles_per_us = clock_khz / 1000;
	CHECK(cudaMalloc(&device_out, sizeof(host_out)));
	CHECK(cudaMemset(device_out, 0, sizeof(host_out)));
	timing_init(&timings[0], "spin_alpha");
	timing_init(&timings[1], "spin_beta");
	timing_init(&timings[2], "spin_gamma<3>");
	for (long i = 0; i < iterations; i++) {
		launch_alpha(&timings[0]);
		launch_beta(&timings[1]);
		launch_gamma(&timings[2]);
	}

	timing_init(&pageable, "memcpy_pageable");
	timing_init(&pinned, "memcpy_pinned");
	CHECK(cudaMalloc(&device_copy, COPY_BYTES));
	host_pageable = malloc(COPY_BYTES);
	if (!host_pageable) {
		fprintf(stderr, "named_kernels: out of memory\n");
		return 1;
	}
	memset(host_pageable, 1, COPY_BYTES);
	CHECK(cudaMallocHost(&host_pinned, COPY_BYTES));
	memset(host_pinned, 2, COPY_BYTES);
	for (long i = 0; i < fewer; i++) {
		copy_pageable(&pageable, device_copy, host_pageable);
		copy_pinned(&pinned, device_copy, host_pinned);
	}

	timing_init(&graph, "graph");
	CHECK(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
	exec = build_graph(stream);
	for (long i = 0; i < fewer; i++)
		launch_graph(&graph, exec, stream);
	CHECK(cudaGraphExecDestroy(exec));
	CHECK(cudaStreamDestroy(stream));

	timing_init(&work_a.timing, "spin_thread_a");
	timing_init(&work_b.timing, "spin_thread_b");
	work_a.iterations = work_b.iterations = fewer;
	if (pthread_create(&thread_a, NULL, thread_a_loop, &work_a) ||
	    pthread_create(&thread_b, NULL, thread_b_loop, &work_b)) {
		fprintf(stderr, "named_kernels: cannot start the launching threads\n");
		return 1;
	}
	pthread_join(thread_a, NULL);
	pthread_join(thread_b, NULL);

	CHECK(cudaMemcpy(host_out, device_out, sizeof(host_out), cudaMemcpyDeviceToHost));
	for (int i = 0; i < 3; i++)
		timing_print(&timings[i]);
	timing_print(&pageable);
	timing_print(&pinned);
	timing_print(&graph);
	timing_print(&work_a.timing);
	timing_print(&work_b.timing);
	run_cublas(fewer);
	printf("checksum %d %d %d %d %d %d %d\n", host_out[0], host_out[1], host_out[2], host_out[3],
	       host_out[4], host_out[5], host_out[6]);
	CHECK(cudaFreeHost(host_pinned));
	free(host_pageable);
	CHECK(cudaFree(device_copy));
	return 0;
}
