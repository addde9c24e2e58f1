// SPDX-License-Identifier: GPL-2.0
/*
 * A CUDA application for the mock runtime: named kernels with known
 * durations (the first argument, in microseconds), launched from distinct
 * named CPU functions through cudaLaunchKernel, cudaLaunchKernelExC, the
 * CUDA 13 __cudaLaunchKernel path and a captured graph, with memcpy and
 * memset, in a loop; prints a checksum that does not depend on how many
 * iterations ran.
 *
 * mock_app [--seconds S] [--until FILE] [--iterations N] [--subscribe-first]
 *          [--attach-agent LIB [--attach-count K]] [--bench N]
 *          [--spawn-child | --spawn-child-closed] [--child] [--api-coverage]
 *          [--profiler-window START:END] [--foreign-clock START]
 *          [--load-library LIB] [--failed-launch] [--long-names N] [--two-sites]
 *
 * --subscribe-first takes CUPTI (dlopen of $LLMPROF_CUPTI_LIBRARY) before
 * any CUDA call, as a profiler of its own would; --attach-agent loads the
 * agent itself and calls llmprof_agent_start($MOCK_ATTACH_SOCKET), as the
 * injector does, again each time the previous session ended, K times;
 * --bench launches N empty kernels and prints the cost per launch;
 * --spawn-child runs a second copy with --child beside the loop (its own
 * CUDA runtime and correlation ids), --spawn-child-closed the same with every
 * descriptor above 2 closed first, as Python's subprocess does; --child
 * launches child_kernel from child_step() only, and prints nothing on
 * stdout; --api-coverage first calls, once each from a function of its own,
 * the other copy and launch entry points (2D, peer, to-symbol and batched
 * copies, the per-thread-stream launch, and the driver API's synchronous
 * copies and launchers).  --profiler-window runs, from START to END seconds
 * into the loop, a profiler of the application's own as torch.profiler's
 * Kineto uses CUPTI: without subscribing, it registers its own activity
 * buffer callbacks and enables kernel, memcpy and memset records, and at the
 * end synchronizes, flushes and disables those kinds; it prints how many
 * kernel records it got of the kernels the loop launched in its window.
 * --foreign-clock registers, START seconds into the loop, a CUPTI timestamp
 * callback that returns TSC cycles (of a 3 GHz TSC), as Kineto does.
 * --load-library opens LIB (RTLD_GLOBAL) before any CUDA call, as
 * libtorch's bundled libraries (libcupti-HASH.so.13) come in; at the end
 * mock_app prints how many libcupti files it maps.  --failed-launch adds to
 * each step a launch of a function that is no kernel, which fails and puts
 * no work on the GPU.  --long-names registers N more kernels whose names
 * are 64 KiB each (distinct in their first characters), and each step
 * launches each of them once, 10 us long, from run_long_names(): more name
 * bytes than the agent keeps.  --two-sites launches gemm_kernel a second
 * time in each step, from run_gemm_again(), for a quarter of its time.
 */
#include <cuda.h>
#include <cuda_runtime_api.h>
#include <cupti.h>

#include <dlfcn.h>
#include <errno.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

/* The CUDA 13 launch entry nvcc generated stubs call (crt/device_functions.h
 * declares it for C++ only). */
cudaError_t __cudaGetKernel(cudaKernel_t *kernel, const void *func);
cudaError_t __cudaLaunchKernel(cudaKernel_t kernel, dim3 grid, dim3 block, void **args,
			       size_t shared_memory, cudaStream_t stream);
void **__cudaRegisterFatBinary(void *fat_cubin);
void __cudaRegisterFatBinaryEnd(void **handle);
void __cudaRegisterFunction(void **handle, const char *host_fun, char *device_fun,
			    const char *device_name, int thread_limit, uint3 *tid, uint3 *bid,
			    dim3 *block, dim3 *grid, int *warp_size);

#define GEMM_US 2000
#define SOFTMAX_US 1000
#define ATTENTION_US 500
#define LAYERNORM_US 300
#define MLP_US 400
#define RESIDUAL_US 200
#define BATCH_FLOATS (256 * 1024)

#define CHECK(call)                                                                                \
	do {                                                                                       \
		cudaError_t err_ = (call);                                                         \
		if (err_ != cudaSuccess) {                                                         \
			fprintf(stderr, "mock_app: %s: %s\n", #call, cudaGetErrorString(err_));    \
			exit(1);                                                                   \
		}                                                                                  \
	} while (0)

/* Host stubs: their addresses name the kernels, as in nvcc output. */
#define STUB(name)                                                                                 \
	__attribute__((noinline)) static void name(unsigned int us, float *data)                   \
	{                                                                                          \
		__asm__ volatile("" ::"r"(us), "r"(data) : "memory");                              \
	}
STUB(gemm_stub)
STUB(softmax_stub)
STUB(attention_stub)
STUB(layernorm_stub)
STUB(mlp_stub)
STUB(residual_stub)
STUB(empty_stub)
STUB(child_stub)

static char fatbin[16];

/* What nvcc's __sti____cudaRegisterAll does before main(). */
__attribute__((constructor)) static void register_kernels(void)
{
	static const struct {
		void (*stub)(unsigned int, float *);
		const char *name;
	} table[] = {
	    {gemm_stub, "_Z11gemm_kerneljPf"},
	    {softmax_stub, "softmax_kernel"},
	    {attention_stub, "_ZN5flash13attention_fwdILi128EEEvjPf"},
	    {layernorm_stub, "_Z16layernorm_kerneljPf"},
	    {mlp_stub, "_Z10mlp_kerneljPf"},
	    {residual_stub, "_Z12residual_addjPf"},
	    {empty_stub, "_Z12empty_kerneljPf"},
	    {child_stub, "_Z12child_kerneljPf"},
	};
	void **handle = __cudaRegisterFatBinary(fatbin);

	for (size_t i = 0; i < sizeof(table) / sizeof(table[0]); i++)
		__cudaRegisterFunction(handle, (const char *)table[i].stub, (char *)table[i].name,
				       table[i].name, -1, NULL, NULL, NULL, NULL, NULL);
	__cudaRegisterFatBinaryEnd(handle);
}

/* --long-names: a kernel name of LONG_NAME_BYTES each; the host stubs'
 * addresses are bytes of long_name_stubs, as the mock runtime only compares
 * them. */
#define MAX_LONG_NAMES 200
#define LONG_NAME_BYTES 65536
static char long_name_stubs[MAX_LONG_NAMES];
static long nr_long_names;

static void register_long_names(long n)
{
	void **handle = __cudaRegisterFatBinary(fatbin);

	for (long i = 0; i < n; i++) {
		char *name = malloc(LONG_NAME_BYTES + 1);

		if (!name)
			exit(1);
		memset(name, 'k', LONG_NAME_BYTES);
		name[LONG_NAME_BYTES] = '\0';
		memcpy(name, "_Z", 2);
		snprintf(name + 2, 16, "%05ld", i);
		name[7] = 'k';
		__cudaRegisterFunction(handle, &long_name_stubs[i], name, name, -1, NULL, NULL,
				       NULL, NULL, NULL);
	}
	__cudaRegisterFatBinaryEnd(handle);
	nr_long_names = n;
}

static cudaStream_t stream;
static cudaGraphExec_t graph;
static float *host_in, *host_out, *device_buf;

__attribute__((noinline)) static void run_gemm(void)
{
	unsigned int us = GEMM_US;
	void *args[] = {&us, &device_buf};

	CHECK(cudaLaunchKernel((const void *)gemm_stub, (dim3){64, 4, 1}, (dim3){128, 1, 1}, args,
			       0, stream));
}

static bool two_sites;

/* The same kernel from another call site (--two-sites). */
__attribute__((noinline)) static void run_gemm_again(void)
{
	unsigned int us = GEMM_US / 4;
	void *args[] = {&us, &device_buf};

	CHECK(cudaLaunchKernel((const void *)gemm_stub, (dim3){64, 4, 1}, (dim3){128, 1, 1}, args,
			       0, stream));
}

__attribute__((noinline)) static void run_softmax(void)
{
	unsigned int us = SOFTMAX_US;
	void *args[] = {&us, &device_buf};
	cudaLaunchConfig_t config = {
	    .gridDim = {32, 1, 1},
	    .blockDim = {256, 1, 1},
	    .stream = stream,
	};

	CHECK(cudaLaunchKernelExC(&config, (const void *)softmax_stub, args));
}

__attribute__((noinline)) static void run_attention(void)
{
	unsigned int us = ATTENTION_US;
	void *args[] = {&us, &device_buf};
	cudaKernel_t kernel;

	CHECK(__cudaGetKernel(&kernel, (const void *)attention_stub));
	CHECK(__cudaLaunchKernel(kernel, (dim3){16, 16, 1}, (dim3){64, 1, 1}, args, 0, stream));
}

static void launch_plain(void (*stub)(unsigned int, float *), unsigned int us)
{
	void *args[] = {&us, &device_buf};

	CHECK(cudaLaunchKernel((const void *)stub, (dim3){1, 1, 1}, (dim3){32, 1, 1}, args, 0,
			       stream));
}

__attribute__((noinline)) static void build_graph(void)
{
	cudaGraph_t g;

	CHECK(cudaStreamBeginCapture(stream, cudaStreamCaptureModeGlobal));
	launch_plain(layernorm_stub, LAYERNORM_US);
	launch_plain(mlp_stub, MLP_US);
	launch_plain(residual_stub, RESIDUAL_US);
	CHECK(cudaStreamEndCapture(stream, &g));
	CHECK(cudaGraphInstantiate(&graph, g, 0));
	CHECK(cudaGraphDestroy(g));
}

__attribute__((noinline)) static void run_graph_step(void)
{
	CHECK(cudaGraphLaunch(graph, stream));
}

__attribute__((noinline)) static void upload_batch(void)
{
	CHECK(
	    cudaMemcpy(device_buf, host_in, BATCH_FLOATS * sizeof(float), cudaMemcpyHostToDevice));
}

__attribute__((noinline)) static void clear_tail(void)
{
	CHECK(cudaMemset(device_buf + BATCH_FLOATS / 2, 0, BATCH_FLOATS / 2 * sizeof(float)));
}

__attribute__((noinline)) static void download_result(void)
{
	CHECK(cudaMemcpyAsync(host_out, device_buf, BATCH_FLOATS * sizeof(float),
			      cudaMemcpyDeviceToHost, stream));
	CHECK(cudaStreamSynchronize(stream));
}

static bool failed_launch;

/* A launch the runtime rejects: no GPU work, no record. */
__attribute__((noinline)) static void launch_not_a_kernel(void)
{
	unsigned int us = 0;
	void *args[] = {&us, &device_buf};

	if (cudaLaunchKernel((const void *)launch_not_a_kernel, (dim3){1, 1, 1}, (dim3){1, 1, 1},
			     args, 0, stream) != cudaErrorInvalidDeviceFunction) {
		fprintf(stderr, "mock_app: a launch of no kernel did not fail\n");
		exit(1);
	}
}

__attribute__((noinline)) static void run_long_names(void)
{
	unsigned int us = 10;
	void *args[] = {&us, &device_buf};

	for (long i = 0; i < nr_long_names; i++)
		CHECK(cudaLaunchKernel(&long_name_stubs[i], (dim3){1, 1, 1}, (dim3){32, 1, 1}, args,
				       0, stream));
}

__attribute__((noinline)) static void train_step(void)
{
	if (failed_launch)
		launch_not_a_kernel();
	upload_batch();
	clear_tail();
	run_gemm();
	if (two_sites)
		run_gemm_again();
	run_softmax();
	run_attention();
	run_graph_step();
	run_long_names();
	download_result();
}

/* Every other entry point, once each, from a function of its own. */
cudaError_t cudaLaunchKernel_ptsz(const void *func, dim3 grid, dim3 block, void **args,
				  size_t shared_memory, cudaStream_t stream);

#define COVER_BYTES 4096
static char cover_host[COVER_BYTES], cover_symbol[COVER_BYTES];

__attribute__((noinline)) static void cover_memcpy_2d(void)
{
	CHECK(cudaMemcpy2D(device_buf, 1024, cover_host, 1024, 1024, 4, cudaMemcpyHostToDevice));
	CHECK(cudaMemcpy2DAsync(device_buf, 512, cover_host, 512, 512, 4, cudaMemcpyHostToDevice,
				stream));
}

__attribute__((noinline)) static void cover_memcpy_peer(void)
{
	CHECK(cudaMemcpyPeer(device_buf, 0, device_buf + BATCH_FLOATS / 2, 0, COVER_BYTES));
	CHECK(cudaMemcpyPeerAsync(device_buf, 0, device_buf + BATCH_FLOATS / 2, 0, COVER_BYTES,
				  stream));
}

__attribute__((noinline)) static void cover_memcpy_symbol(void)
{
	CHECK(cudaMemcpyToSymbol(cover_symbol, cover_host, 256, 0, cudaMemcpyHostToDevice));
	CHECK(cudaMemcpyToSymbolAsync(cover_symbol, cover_host, 256, 256, cudaMemcpyHostToDevice,
				      stream));
}

__attribute__((noinline)) static void cover_memcpy_batch(void)
{
	void *dsts[] = {device_buf, device_buf + 1024, device_buf + 2048};
	const void *srcs[] = {cover_host, cover_host + 1024, cover_host + 2048};
	size_t sizes[] = {1024, 1024, 1024};
	struct cudaMemcpyAttributes attrs = {.srcAccessOrder = cudaMemcpySrcAccessOrderStream};
	size_t index = 0;

	CHECK(cudaMemcpyBatchAsync(dsts, srcs, sizes, 3, &attrs, &index, 1, stream));
}

__attribute__((noinline)) static void cover_launch_ptsz(void)
{
	unsigned int us = MLP_US;
	void *args[] = {&us, &device_buf};

	CHECK(cudaLaunchKernel_ptsz((const void *)mlp_stub, (dim3){2, 1, 1}, (dim3){32, 1, 1}, args,
				    0, stream));
}

#define CHECK_DRIVER(call)                                                                         \
	do {                                                                                       \
		if ((call) != CUDA_SUCCESS) {                                                      \
			fprintf(stderr, "mock_app: %s failed\n", #call);                           \
			exit(1);                                                                   \
		}                                                                                  \
	} while (0)

__attribute__((noinline)) static void cover_driver_copies(void)
{
	CHECK_DRIVER(cuMemcpyHtoD_v2((CUdeviceptr)device_buf, cover_host, COVER_BYTES));
	CHECK_DRIVER(cuMemcpyDtoH_v2(cover_host, (CUdeviceptr)device_buf, COVER_BYTES));
}

__attribute__((noinline)) static void cover_driver_launches(void)
{
	unsigned int us = RESIDUAL_US;
	void *args[] = {&us, &device_buf};
	CUlaunchConfig config = {
	    .gridDimX = 4,
	    .gridDimY = 1,
	    .gridDimZ = 1,
	    .blockDimX = 64,
	    .blockDimY = 1,
	    .blockDimZ = 1,
	    .hStream = (CUstream)stream,
	};

	CHECK_DRIVER(cuLaunchKernel((CUfunction)residual_stub, 1, 1, 1, 32, 1, 1, 0,
				    (CUstream)stream, args, NULL));
	CHECK_DRIVER(cuLaunchKernelEx(&config, (CUfunction)softmax_stub, args, NULL));
	CHECK_DRIVER(cuGraphLaunch((CUgraphExec)graph, (CUstream)stream));
}

static void cover_apis(void)
{
	cover_memcpy_2d();
	cover_memcpy_peer();
	cover_memcpy_symbol();
	cover_memcpy_batch();
	cover_launch_ptsz();
	cover_driver_copies();
	cover_driver_launches();
	CHECK(cudaDeviceSynchronize());
}

/* The child's loop: one kernel, from one function of its own. */
__attribute__((noinline)) static void child_step(void)
{
	unsigned int us = GEMM_US;
	void *args[] = {&us, &device_buf};

	CHECK(cudaLaunchKernel((const void *)child_stub, (dim3){8, 1, 1}, (dim3){64, 1, 1}, args, 0,
			       stream));
	CHECK(cudaStreamSynchronize(stream));
}

static pid_t spawn_child(const char *self, double seconds, bool close_descriptors)
{
	char text[32];
	pid_t pid;

	snprintf(text, sizeof(text), "%g", seconds);
	pid = fork();
	if (pid)
		return pid;
	if (close_descriptors)
		for (int fd = 3; fd < 1024; fd++)
			close(fd);
	execl(self, self, "--child", "--seconds", text, (char *)NULL);
	_exit(127);
}

static uint32_t checksum(void)
{
	uint32_t h = 2166136261u;
	const unsigned char *p = (const unsigned char *)host_out;

	for (size_t i = 0; i < BATCH_FLOATS * sizeof(float); i++) {
		h ^= p[i];
		h *= 16777619u;
	}
	return h;
}

static double now_seconds(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

/* Another profiler's subscription; counts its callbacks. */
static unsigned long own_callbacks;

static void CUPTIAPI own_callback(void *userdata, CUpti_CallbackDomain domain,
				  CUpti_CallbackId cbid, const void *data)
{
	__atomic_add_fetch(&own_callbacks, 1, __ATOMIC_RELAXED);
}

static void subscribe_first(void)
{
	const char *path = getenv("LLMPROF_CUPTI_LIBRARY");
	void *handle = dlopen(path ? path : "libcupti.so", RTLD_NOW);
	__typeof__(cuptiSubscribe) *subscribe;
	__typeof__(cuptiEnableDomain) *enable_domain;
	CUpti_SubscriberHandle subscriber;

	if (!handle) {
		fprintf(stderr, "mock_app: %s\n", dlerror());
		exit(1);
	}
	subscribe = (__typeof__(subscribe))dlsym(handle, "cuptiSubscribe");
	enable_domain = (__typeof__(enable_domain))dlsym(handle, "cuptiEnableDomain");
	if (!subscribe || !enable_domain ||
	    subscribe(&subscriber, own_callback, NULL) != CUPTI_SUCCESS ||
	    enable_domain(1, subscriber, CUPTI_CB_DOMAIN_RUNTIME_API) != CUPTI_SUCCESS) {
		fprintf(stderr, "mock_app: cannot subscribe to CUPTI\n");
		exit(1);
	}
}

/* The application's own profiler, as Kineto drives CUPTI. */
static struct {
	__typeof__(cuptiActivityRegisterCallbacks) *register_callbacks;
	__typeof__(cuptiActivityEnable) *enable;
	__typeof__(cuptiActivityDisable) *disable;
	__typeof__(cuptiActivityFlushAll) *flush_all;
	__typeof__(cuptiActivityGetNextRecord) *next_record;
	__typeof__(cuptiGetTimestamp) *get_timestamp;
	double start, end;
	bool on, done;
	uint64_t since;		/* CUPTI time at the window's start */
	unsigned long kernels;	/* records of kernels that started in the window */
	unsigned long launched; /* kernels the loop launched in the window */
} profiler = {.start = -1};

static void CUPTIAPI profiler_buffer_requested(uint8_t **buffer, size_t *size, size_t *max_records)
{
	*size = 1 << 20;
	*buffer = aligned_alloc(8, *size);
	*max_records = 0;
}

static void CUPTIAPI profiler_buffer_completed(CUcontext context, uint32_t stream_id,
					       uint8_t *buffer, size_t size, size_t valid)
{
	CUpti_Activity *record = NULL;

	while (profiler.next_record(buffer, valid, &record) == CUPTI_SUCCESS) {
		const CUpti_ActivityKernel10 *k = (const CUpti_ActivityKernel10 *)record;

		if ((record->kind == CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL ||
		     record->kind == CUPTI_ACTIVITY_KIND_KERNEL) &&
		    k->start >= profiler.since)
			__atomic_add_fetch(&profiler.kernels, 1, __ATOMIC_RELAXED);
	}
	free(buffer);
}

static void profiler_setup(const char *window)
{
	const char *path = getenv("LLMPROF_CUPTI_LIBRARY");
	void *handle = dlopen(path ? path : "libcupti.so", RTLD_NOW);
	char *end;

	profiler.start = strtod(window, &end);
	if (*end != ':' || profiler.start < 0 ||
	    (profiler.end = strtod(end + 1, &end)) <= profiler.start || *end) {
		fprintf(stderr, "mock_app: bad value for --profiler-window: %s\n", window);
		exit(2);
	}
	if (!handle) {
		fprintf(stderr, "mock_app: %s\n", dlerror());
		exit(1);
	}
	profiler.register_callbacks = (__typeof__(profiler.register_callbacks))dlsym(
	    handle, "cuptiActivityRegisterCallbacks");
	profiler.enable = (__typeof__(profiler.enable))dlsym(handle, "cuptiActivityEnable");
	profiler.disable = (__typeof__(profiler.disable))dlsym(handle, "cuptiActivityDisable");
	profiler.flush_all = (__typeof__(profiler.flush_all))dlsym(handle, "cuptiActivityFlushAll");
	profiler.next_record =
	    (__typeof__(profiler.next_record))dlsym(handle, "cuptiActivityGetNextRecord");
	profiler.get_timestamp =
	    (__typeof__(profiler.get_timestamp))dlsym(handle, "cuptiGetTimestamp");
	if (!profiler.register_callbacks || !profiler.enable || !profiler.disable ||
	    !profiler.flush_all || !profiler.next_record || !profiler.get_timestamp) {
		fprintf(stderr, "mock_app: libcupti lacks the activity API\n");
		exit(1);
	}
}

static const CUpti_ActivityKind profiler_kinds[] = {
    CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL,
    CUPTI_ACTIVITY_KIND_MEMCPY,
    CUPTI_ACTIVITY_KIND_MEMSET,
};

/* Called between steps, with no work in flight. */
static void profiler_step(double elapsed)
{
	if (profiler.start < 0 || profiler.done)
		return;
	if (!profiler.on && elapsed >= profiler.start) {
		profiler.get_timestamp(&profiler.since);
		if (profiler.register_callbacks(profiler_buffer_requested,
						profiler_buffer_completed) != CUPTI_SUCCESS) {
			fprintf(stderr, "mock_app: cannot register activity callbacks\n");
			exit(1);
		}
		for (size_t i = 0; i < sizeof(profiler_kinds) / sizeof(profiler_kinds[0]); i++)
			profiler.enable(profiler_kinds[i]);
		profiler.on = true;
	} else if (profiler.on && elapsed >= profiler.end) {
		CHECK(cudaDeviceSynchronize());
		profiler.flush_all(0);
		for (size_t i = 0; i < sizeof(profiler_kinds) / sizeof(profiler_kinds[0]); i++)
			profiler.disable(profiler_kinds[i]);
		profiler.on = false;
		profiler.done = true;
	}
}

static double foreign_clock_at = -1;

static uint64_t CUPTIAPI tsc_cycles(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC_RAW, &ts);
	return (ts.tv_sec * 1000000000ull + ts.tv_nsec) * 3;
}

static void foreign_clock_step(double elapsed)
{
	const char *path = getenv("LLMPROF_CUPTI_LIBRARY");
	__typeof__(cuptiActivityRegisterTimestampCallback) *register_timestamp;
	void *handle;

	if (foreign_clock_at < 0 || elapsed < foreign_clock_at)
		return;
	foreign_clock_at = -1;
	handle = dlopen(path ? path : "libcupti.so", RTLD_NOW);
	register_timestamp = handle ? (__typeof__(register_timestamp))dlsym(
					  handle, "cuptiActivityRegisterTimestampCallback")
				    : NULL;
	if (!register_timestamp || register_timestamp(tsc_cycles) != CUPTI_SUCCESS) {
		fprintf(stderr, "mock_app: cannot register a timestamp callback\n");
		exit(1);
	}
}

/* The injector's part: load the agent and start it, again each time the
 * previous session has ended. */
static const char *attach_library;
static int attach_count = 1, attach_starts;

static void *attach_thread(void *arg)
{
	const char *socket_name = getenv("MOCK_ATTACH_SOCKET");
	void *handle;
	int (*start)(const char *);

	usleep(200 * 1000);
	handle = dlopen(attach_library, RTLD_NOW | RTLD_LOCAL);
	start = handle ? (int (*)(const char *))dlsym(handle, "llmprof_agent_start") : NULL;
	if (!start || !socket_name) {
		fprintf(stderr, "mock_app: cannot attach: %s\n", handle ? "no socket" : dlerror());
		return NULL;
	}
	while (__atomic_load_n(&attach_starts, __ATOMIC_RELAXED) < attach_count) {
		int err = start(socket_name);

		if (!err)
			__atomic_add_fetch(&attach_starts, 1, __ATOMIC_RELAXED);
		else if (err != -EALREADY && err != -EBUSY)
			fprintf(stderr, "mock_app: llmprof_agent_start: %s\n", strerror(-err));
		usleep(100 * 1000);
	}
	return NULL;
}

/* Distinct libcupti files this process maps, whatever their names. */
static int cupti_files_mapped(void)
{
	FILE *maps = fopen("/proc/self/maps", "re");
	char line[4096 + 256], seen[8][4096];
	int nr = 0;

	if (!maps)
		return -1;
	while (fgets(line, sizeof(line), maps)) {
		char *file = strchr(line, '/'), *base;
		bool known = false;

		if (!file)
			continue;
		file[strcspn(file, "\n")] = '\0';
		base = strrchr(file, '/') + 1;
		if (strncmp(base, "libcupti", 8))
			continue;
		for (int i = 0; i < nr; i++)
			known |= !strcmp(seen[i], file);
		if (!known && nr < 8)
			snprintf(seen[nr++], sizeof(seen[0]), "%s", file);
	}
	fclose(maps);
	return nr;
}

static double thread_cpu_seconds(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

/* A thread outside CUDA, as training jobs have (loggers, heartbeats): the
 * injector only borrows a thread that holds no CUDA lock. */
static void *heartbeat_thread(void *arg)
{
	for (;;)
		usleep(50 * 1000);
	return NULL;
}

/* Wall time per launch, and the launching thread's own CPU time (which
 * counts probe traps but not other threads competing for the CPUs). */
__attribute__((noinline)) static void bench(long n)
{
	double start, end, cpu_start, cpu_end;

	for (int warm = 0; warm < 1000; warm++)
		launch_plain(empty_stub, 0);
	CHECK(cudaDeviceSynchronize());
	start = now_seconds();
	cpu_start = thread_cpu_seconds();
	for (long i = 0; i < n; i++)
		launch_plain(empty_stub, 0);
	cpu_end = thread_cpu_seconds();
	end = now_seconds();
	CHECK(cudaDeviceSynchronize());
	fprintf(stderr, "bench %ld launches %.1f ns/launch %.1f ns/launch cpu\n", n,
		(end - start) * 1e9 / n, (cpu_end - cpu_start) * 1e9 / n);
}

static long parse_number(const char *text, const char *option)
{
	char *end;
	long value;

	errno = 0;
	value = strtol(text, &end, 10);
	if (errno || end == text || *end || value < 0) {
		fprintf(stderr, "mock_app: bad value for %s: %s\n", option, text);
		exit(2);
	}
	return value;
}

int main(int argc, char **argv)
{
	double seconds = 1, deadline;
	long iterations = 0, bench_launches = 0, done = 0;
	pthread_t attacher, heartbeat;
	int spawn = 0, child_status = 0;
	bool child = false, coverage = false;
	const char *until = NULL; /* stop early once this file exists */
	bool loaded_library = false;
	pid_t child_pid = 0;

	for (int i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "--seconds") && i + 1 < argc) {
			char *end;

			seconds = strtod(argv[++i], &end);
			if (*end || end == argv[i] || seconds < 0) {
				fprintf(stderr, "mock_app: bad value for --seconds: %s\n", argv[i]);
				return 2;
			}
		} else if (!strcmp(argv[i], "--until") && i + 1 < argc) {
			until = argv[++i];
		} else if (!strcmp(argv[i], "--iterations") && i + 1 < argc) {
			iterations = parse_number(argv[++i], "--iterations");
		} else if (!strcmp(argv[i], "--subscribe-first")) {
			subscribe_first();
		} else if (!strcmp(argv[i], "--attach-agent") && i + 1 < argc) {
			attach_library = argv[++i];
		} else if (!strcmp(argv[i], "--attach-count") && i + 1 < argc) {
			attach_count = parse_number(argv[++i], "--attach-count");
		} else if (!strcmp(argv[i], "--spawn-child")) {
			spawn = 1;
		} else if (!strcmp(argv[i], "--spawn-child-closed")) {
			spawn = 2;
		} else if (!strcmp(argv[i], "--child")) {
			child = true;
		} else if (!strcmp(argv[i], "--api-coverage")) {
			coverage = true;
		} else if (!strcmp(argv[i], "--bench") && i + 1 < argc) {
			bench_launches = parse_number(argv[++i], "--bench");
		} else if (!strcmp(argv[i], "--foreign-clock") && i + 1 < argc) {
			char *end;

			foreign_clock_at = strtod(argv[++i], &end);
			if (*end || end == argv[i] || foreign_clock_at < 0) {
				fprintf(stderr, "mock_app: bad value for --foreign-clock: %s\n",
					argv[i]);
				return 2;
			}
		} else if (!strcmp(argv[i], "--profiler-window") && i + 1 < argc) {
			profiler_setup(argv[++i]);
		} else if (!strcmp(argv[i], "--long-names") && i + 1 < argc) {
			long n = parse_number(argv[++i], "--long-names");

			if (n > MAX_LONG_NAMES) {
				fprintf(stderr, "mock_app: --long-names: at most %d\n",
					MAX_LONG_NAMES);
				return 2;
			}
			register_long_names(n);
		} else if (!strcmp(argv[i], "--two-sites")) {
			two_sites = true;
		} else if (!strcmp(argv[i], "--failed-launch")) {
			failed_launch = true;
		} else if (!strcmp(argv[i], "--load-library") && i + 1 < argc) {
			if (!dlopen(argv[++i], RTLD_NOW | RTLD_GLOBAL)) {
				fprintf(stderr, "mock_app: %s\n", dlerror());
				return 1;
			}
			loaded_library = true;
		} else {
			fprintf(stderr,
				"usage: mock_app [--seconds S] [--until FILE] [--iterations N] "
				"[--subscribe-first] [--attach-agent LIB [--attach-count K]] "
				"[--bench N] [--spawn-child | --spawn-child-closed] [--child] "
				"[--api-coverage] [--profiler-window START:END] "
				"[--foreign-clock START] [--load-library LIB] [--failed-launch] "
				"[--long-names N] [--two-sites]\n");
			return 2;
		}
	}

	host_in = malloc(BATCH_FLOATS * sizeof(float));
	host_out = malloc(BATCH_FLOATS * sizeof(float));
	if (!host_in || !host_out)
		return 1;
	for (size_t i = 0; i < BATCH_FLOATS; i++)
		host_in[i] = (float)(i % 1000) * 0.5f;
	CHECK(cudaMalloc((void **)&device_buf, BATCH_FLOATS * sizeof(float)));
	CHECK(cudaStreamCreate(&stream));
	if (attach_library && pthread_create(&attacher, NULL, attach_thread, NULL))
		return 1;
	if (pthread_create(&heartbeat, NULL, heartbeat_thread, NULL))
		return 1;
	if (spawn)
		child_pid = spawn_child("/proc/self/exe", seconds, spawn == 2);
	if (child) {
		deadline = now_seconds() + seconds;
		while (now_seconds() < deadline) {
			child_step();
			done++;
		}
		fprintf(stderr, "child iterations %ld\n", done);
		return 0;
	}
	if (bench_launches) {
		bench(bench_launches);
	} else {
		build_graph();
		if (coverage)
			cover_apis();
		double loop_start = now_seconds();

		deadline = loop_start + seconds;
		while (iterations ? done < iterations
				  : now_seconds() < deadline && (!until || access(until, F_OK))) {
			profiler_step(now_seconds() - loop_start);
			foreign_clock_step(now_seconds() - loop_start);
			train_step();
			/* gemm, softmax, attention and the graph's three */
			profiler.launched += profiler.on ? 6 : 0;
			done++;
		}
		if (profiler.on)
			profiler_step(profiler.end);
	}
	CHECK(cudaDeviceSynchronize());
	if (child_pid > 0 && (waitpid(child_pid, &child_status, 0) != child_pid ||
			      !WIFEXITED(child_status) || WEXITSTATUS(child_status))) {
		fprintf(stderr, "mock_app: the child failed (%d)\n", child_status);
		return 1;
	}
	if (attach_library)
		fprintf(stderr, "agent starts %d\n",
			__atomic_load_n(&attach_starts, __ATOMIC_RELAXED));
	if (own_callbacks)
		fprintf(stderr, "own callbacks %lu\n", own_callbacks);
	if (loaded_library)
		fprintf(stderr, "cupti libraries mapped %d\n", cupti_files_mapped());
	if (profiler.done)
		fprintf(stderr, "profiler kernels %lu of %lu\n", profiler.kernels,
			profiler.launched);
	fprintf(stderr, "iterations %ld\n", done);
	printf("checksum %08x\n", checksum());
	return fflush(stdout) ? 1 : 0;
}
