// SPDX-License-Identifier: GPL-2.0
/*
 * GPU memory fixture on the mock CUDA stack: known sizes from known
 * functions.  weights: 64 MiB by cudaMalloc in load_weights(), kept;
 * activations: 3 x 16 MiB by cudaMalloc in alloc_activation(), freed by
 * cudaFree; workspace: 8 MiB by the driver's cuMemAlloc in
 * leak_workspace(), never freed; and one cudaMalloc of 1 TiB in
 * try_huge_batch() that fails.  So the peak is 112 MiB (weights and
 * activations), 72 MiB leak, 120 MiB are allocated.
 *   --wait     first 32 MiB in allocate_early(), then "ready" and wait for
 *              SIGUSR1 (attach), freeing the early memory at the end
 *   --extras   also the virtual memory calls, pinned host memory, the
 *              stream-ordered and pitched calls
 *   --bench N  N cudaMalloc/cudaFree pairs of 4 KiB, timed
 *   --healthy  weights and activations only, all freed: nothing to find
 *   --leak-steps N  --healthy, then N steps 30 ms apart that each keep
 *              1 MiB from cache_step_output() (a steady leak)
 *   --fork     fork first: parent and child (no exec, the libraries and
 *              their probes already mapped) each run the workload, at the
 *              same addresses
 *   --entry-points  only, in entry_points(): cuMemAllocAsync 4 MiB (freed)
 *              through cuGetProcAddress's pointers for the per-thread
 *              default stream, as NCCL takes them; cuMemCreate and cuMemMap
 *              2 MiB (kept), and cuMemCreate 1 MiB and cuMemRelease,
 *              through cudaGetDriverEntryPointByVersion's, as PyTorch's
 *              expandable segments take them; prints the bytes allocated
 *              and freed
 */
#include <cuda.h>
#include <cuda_runtime_api.h>

#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define MiB (1024ULL * 1024)
#define NOINLINE __attribute__((noinline))

static void check(cudaError_t err, const char *what)
{
	if (err != cudaSuccess) {
		fprintf(stderr, "%s failed: %d\n", what, err);
		exit(1);
	}
}

NOINLINE static void *allocate_early(void)
{
	void *p;

	check(cudaMalloc(&p, 32 * MiB), "cudaMalloc early");
	return p;
}

NOINLINE static void *load_weights(void)
{
	void *p;

	check(cudaMalloc(&p, 64 * MiB), "cudaMalloc weights");
	return p;
}

NOINLINE static void *alloc_activation(void)
{
	void *p;

	check(cudaMalloc(&p, 16 * MiB), "cudaMalloc activation");
	return p;
}

NOINLINE static void forward(void)
{
	void *activations[3];

	for (int i = 0; i < 3; i++)
		activations[i] = alloc_activation();
	for (int i = 0; i < 3; i++)
		check(cudaFree(activations[i]), "cudaFree");
}

NOINLINE static CUdeviceptr leak_workspace(void)
{
	CUdeviceptr p = 0;

	if (cuMemAlloc(&p, 8 * MiB) != CUDA_SUCCESS)
		exit(1);
	return p;
}

NOINLINE static int try_huge_batch(void)
{
	void *p = NULL;

	return cudaMalloc(&p, 1024 * 1024 * MiB);
}

NOINLINE static void grow_segment(void)
{
	CUmemAllocationProp prop = {.type = CU_MEM_ALLOCATION_TYPE_PINNED,
				    .location = {.type = CU_MEM_LOCATION_TYPE_DEVICE, .id = 0}};
	CUmemGenericAllocationHandle handle;
	CUdeviceptr address = 0x7f0000000000ULL;

	if (cuMemCreate(&handle, 2 * MiB, &prop, 0) || cuMemMap(address, 2 * MiB, 0, handle, 0) ||
	    cuMemUnmap(address, 2 * MiB) || cuMemRelease(handle))
		exit(1);
}

NOINLINE static void *stage_pinned(void)
{
	void *p;

	check(cudaMallocHost(&p, 1 * MiB), "cudaMallocHost");
	return p;
}

NOINLINE static void stream_ordered(void)
{
	void *p;

	check(cudaMallocAsync(&p, 4 * MiB, NULL), "cudaMallocAsync");
	check(cudaFreeAsync(p, NULL), "cudaFreeAsync");
}

/* A driver function through cudaGetDriverEntryPointByVersion. */
static void *runtime_entry_point(const char *symbol)
{
	enum cudaDriverEntryPointQueryResult status;
	void *function = NULL;

	if (cudaGetDriverEntryPointByVersion(symbol, &function, 12000, cudaEnableDefault,
					     &status) ||
	    status != cudaDriverEntryPointSuccess || !function)
		exit(1);
	return function;
}

/* As NCCL's buffers and PyTorch's expandable segments do: the driver's
 * functions through the pointers its entry point table gives, never by
 * their exported names. */
NOINLINE static void entry_points(void)
{
	CUresult (*alloc_async)(CUdeviceptr *, size_t, CUstream);
	CUresult (*free_async)(CUdeviceptr, CUstream);
	CUresult (*create)(CUmemGenericAllocationHandle *, size_t, const CUmemAllocationProp *,
			   unsigned long long);
	CUresult (*map)(CUdeviceptr, size_t, size_t, CUmemGenericAllocationHandle,
			unsigned long long);
	CUresult (*release)(CUmemGenericAllocationHandle);
	cuuint64_t flags = CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM;
	CUmemAllocationProp prop = {.type = CU_MEM_ALLOCATION_TYPE_PINNED};
	CUmemGenericAllocationHandle handle, scratch;
	CUdeviceptr p = 0, address = 4096;

	if (cuGetProcAddress("cuMemAllocAsync", (void **)&alloc_async, 12000, flags, NULL) ||
	    cuGetProcAddress("cuMemFreeAsync", (void **)&free_async, 12000, flags, NULL))
		exit(1);
	create = runtime_entry_point("cuMemCreate");
	map = runtime_entry_point("cuMemMap");
	release = runtime_entry_point("cuMemRelease");
	if (alloc_async(&p, 4 * MiB, NULL) || free_async(p, NULL) ||
	    create(&handle, 2 * MiB, &prop, 0) || map(address, 2 * MiB, 0, handle, 0) ||
	    create(&scratch, 1 * MiB, &prop, 0) || release(scratch))
		exit(1);
	printf("entry points: allocated %llu bytes, freed %llu bytes\n", 7 * MiB, 5 * MiB);
}

NOINLINE static void *pitched(void)
{
	size_t pitch;
	void *p;

	check(cudaMallocPitch(&p, &pitch, 1000, 100), "cudaMallocPitch");
	return p;
}

NOINLINE static void *cache_step_output(void)
{
	void *p;

	check(cudaMalloc(&p, 1 * MiB), "cudaMalloc step output");
	return p;
}

static double now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

NOINLINE static void bench(long n)
{
	double start = now(), seconds;

	for (long i = 0; i < n; i++) {
		void *p;

		check(cudaMalloc(&p, 4096), "cudaMalloc");
		check(cudaFree(p), "cudaFree");
	}
	seconds = now() - start;
	printf("%ld cudaMalloc/cudaFree pairs in %.3f s: %.0f pairs/s, %.2f us per pair\n", n,
	       seconds, n / seconds, seconds * 1e6 / n);
}

int main(int argc, char **argv)
{
	bool wait = false, extras = false, healthy = false, fork_first = false;
	pid_t child = -1;
	void *early = NULL, *weights, *pinned = NULL;
	long leak_steps = 0;

	for (int i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "--wait"))
			wait = true;
		else if (!strcmp(argv[i], "--extras"))
			extras = true;
		else if (!strcmp(argv[i], "--healthy"))
			healthy = true;
		else if (!strcmp(argv[i], "--leak-steps") && i + 1 < argc)
			healthy = true, leak_steps = atol(argv[++i]);
		else if (!strcmp(argv[i], "--fork"))
			fork_first = true;
		else if (!strcmp(argv[i], "--entry-points")) {
			entry_points();
			return 0;
		} else if (!strcmp(argv[i], "--bench") && i + 1 < argc) {
			bench(atol(argv[++i]));
			return 0;
		}
	}
	if (wait) {
		sigset_t set;
		int sig;

		sigemptyset(&set);
		sigaddset(&set, SIGUSR1);
		sigprocmask(SIG_BLOCK, &set, NULL);
		early = allocate_early();
		printf("ready\n");
		fflush(stdout);
		sigwait(&set, &sig);
	}
	if (fork_first) {
		fflush(stdout);
		child = fork();
		if (child < 0)
			return 1;
	}
	weights = load_weights();
	forward();
	if (healthy) {
		for (long i = 0; i < leak_steps; i++) {
			struct timespec step = {0, 30 * 1000 * 1000};

			forward();
			cache_step_output();
			nanosleep(&step, NULL);
		}
		check(cudaFree(weights), "cudaFree weights");
		printf("done\n");
		return 0;
	}
	leak_workspace();
	if (try_huge_batch() == cudaSuccess)
		return 1;
	if (extras) {
		grow_segment();
		pinned = stage_pinned();
		stream_ordered();
		pitched();
		cudaFreeHost(pinned);
	}
	if (early)
		check(cudaFree(early), "cudaFree early");
	printf("weights at %p\n", weights);
	fflush(stdout);
	if (child > 0) {
		int status;

		if (waitpid(child, &status, 0) != child || !WIFEXITED(status) ||
		    WEXITSTATUS(status))
			return 1;
	}
	return 0;
}
