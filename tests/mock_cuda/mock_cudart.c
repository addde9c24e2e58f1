// SPDX-License-Identifier: GPL-2.0
/*
 * A mock libcudart.so.13 for tests without a GPU.  It does what the agent
 * depends on: on first use it loads CUDA_INJECTION64_PATH and calls its
 * InitializeInjection(); __cudaRegisterFunction() maps host stubs to kernel
 * names; every API call passes through the tool hooks (mock_cuda.h) with
 * the CUPTI callback ids and parameter structs of the real runtime,
 * including the driver call the real runtime makes inside; and one "device"
 * thread runs the operations in submission order, a kernel taking as many
 * microseconds as its first argument says, so durations are known.  With
 * MOCK_CUDA_CONCURRENT_STREAMS=1 each stream has its own queue, so kernels
 * on different streams overlap as on a real GPU; MOCK_CUDA_DEVICES=N lets
 * cudaSetDevice() choose among N devices (one per process).
 * cudaGetDriverEntryPoint* ask the mock driver's cuGetProcAddress.
 */
#include <cuda.h>
#include <cuda_runtime_api.h>
/* For the callback ids and parameter structs only; nothing of CUPTI is
 * linked. */
#include <cupti.h>

#include <dlfcn.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "mock_cuda.h"

#define EXPORT __attribute__((visibility("default")))
#define MAX_KERNELS 256
#define MAX_GRAPH_NODES 64
#define DEFAULT_STREAM_ID 7
/* The mock copy engine: 10 GB/s, plus 5 us per operation. */
#define COPY_NS_PER_BYTE 0.1
#define COPY_FIXED_NS 5000
#define MAX_QUEUES 8

struct kernel {
	const void *host;
	const char *name;
};

enum op_kind {
	OP_KERNEL = 0,
	OP_MEMCPY,
	OP_MEMSET,
};

struct op {
	enum op_kind kind;
	struct CUstream_st *stream;
	uint64_t duration_ns;
	const char *name;
	dim3 grid, block;
	uint32_t correlation, driver_correlation;
	uint32_t graph_id;
	uint64_t graph_node_id;
	void *dst;
	const void *src;
	size_t bytes;
	int value;
	uint8_t copy_kind;
	uint64_t token;
	uint64_t start_ns; /* concurrent streams: planned at submission */
	struct op *next;
};

struct CUstream_st {
	uint32_t id;
	uint64_t submitted, completed; /* under device.lock */
	struct CUgraph_st *capture;
};

struct CUgraph_st {
	uint32_t id;
	struct op nodes[MAX_GRAPH_NODES];
	int nr_nodes;
};

struct CUgraphExec_st {
	uint32_t id; /* first: MOCK_GRAPH_EXEC_ID */
	struct CUgraph_st graph;
};

static struct kernel kernels[MAX_KERNELS];
static int nr_kernels;
static pthread_mutex_t kernels_lock = PTHREAD_MUTEX_INITIALIZER;

static const struct mock_cuda_tool *_Atomic tool;
static pthread_once_t init_once = PTHREAD_ONCE_INIT;
static struct CUstream_st default_stream = {.id = DEFAULT_STREAM_ID};
static _Atomic uint32_t next_stream_id = DEFAULT_STREAM_ID + 6;
static _Atomic uint32_t next_graph_id = 1;
static _Atomic uint64_t next_token = 1;
static __thread cudaError_t last_error;

struct queue {
	pthread_cond_t wake;
	struct op *head, *tail;
	bool running;
	uint64_t busy_until; /* concurrent streams: when its last op ends */
};

static struct {
	pthread_mutex_t lock;
	pthread_cond_t done;
	struct queue queues[MAX_QUEUES];
	bool concurrent; /* a queue per stream */
	uint32_t device; /* cudaSetDevice()'s, for the whole process */
	int nr_devices;
	uint64_t submitted, completed;
} device = {
    .lock = PTHREAD_MUTEX_INITIALIZER,
    .done = PTHREAD_COND_INITIALIZER,
    .nr_devices = 1,
};

EXPORT void mock_cuda_register_tool(const struct mock_cuda_tool *hooks)
{
	atomic_store(&tool, hooks);
}

static uint64_t monotonic_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1000000000ull + ts.tv_nsec;
}

static void sleep_until(uint64_t ns)
{
	struct timespec ts = {.tv_sec = ns / 1000000000ull, .tv_nsec = ns % 1000000000ull};

	while (clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, NULL))
		;
}

static void report(const struct op *op, uint64_t start, uint64_t end, bool queued)
{
	const struct mock_cuda_tool *t = atomic_load(&tool);
	struct mock_activity a = {
	    .token = op->token,
	    .kind = op->kind == OP_KERNEL   ? MOCK_KERNEL
		    : op->kind == OP_MEMCPY ? MOCK_MEMCPY
					    : MOCK_MEMSET,
	    .start_ns = start,
	    .end_ns = end,
	    .device = device.device,
	    .context = 1,
	    .stream = op->stream->id,
	    .correlation = op->correlation,
	    .driver_correlation = op->driver_correlation,
	    .name = op->name,
	    .grid = {op->grid.x, op->grid.y, op->grid.z},
	    .block = {op->block.x, op->block.y, op->block.z},
	    .bytes = op->bytes,
	    .copy_kind = op->copy_kind,
	    .value = op->value,
	    .graph_id = op->graph_id,
	    .graph_node_id = op->graph_node_id,
	};

	if (t && queued)
		t->activity_queued(&a);
	else if (t)
		t->activity(&a);
}

/* Runs operations one after another, like one GPU queue. */
static void *device_thread(void *arg)
{
	struct queue *q = arg;

	for (;;) {
		uint64_t start, end;
		struct op *op;

		pthread_mutex_lock(&device.lock);
		while (!q->head)
			pthread_cond_wait(&q->wake, &device.lock);
		op = q->head;
		q->head = op->next;
		if (!q->head)
			q->tail = NULL;
		pthread_mutex_unlock(&device.lock);

		/* With a queue per stream each operation's times are planned
		 * when it is submitted, so how the queues' threads happen to
		 * be scheduled does not decide which kernels overlap. */
		start = op->start_ns ? op->start_ns : monotonic_ns();
		end = start + op->duration_ns;
		if (op->duration_ns || op->start_ns)
			sleep_until(end);
		if (op->kind == OP_MEMCPY)
			memcpy(op->dst, op->src, op->bytes);
		else if (op->kind == OP_MEMSET)
			memset(op->dst, op->value, op->bytes);
		/* The device is exact: the programmed time is the true time. */
		report(op, start, end, false);

		pthread_mutex_lock(&device.lock);
		op->stream->completed++;
		device.completed++;
		pthread_cond_broadcast(&device.done);
		pthread_mutex_unlock(&device.lock);
		free(op);
	}
	return NULL;
}

/* Under device.lock. */
static void start_queue(struct queue *q)
{
	pthread_t thread;

	if (q->running)
		return;
	pthread_cond_init(&q->wake, NULL);
	if (pthread_create(&thread, NULL, device_thread, q))
		abort();
	pthread_detach(thread);
	q->running = true;
}

static void submit(const struct op *template)
{
	struct op *op = malloc(sizeof(*op));
	struct queue *q;

	if (!op)
		abort();
	*op = *template;
	op->next = NULL;
	op->token = atomic_fetch_add(&next_token, 1);
	report(op, 0, 0, true);
	pthread_mutex_lock(&device.lock);
	q = &device.queues[device.concurrent ? op->stream->id % MAX_QUEUES : 0];
	start_queue(q);
	if (device.concurrent) {
		uint64_t now = monotonic_ns();

		op->start_ns = q->busy_until > now ? q->busy_until : now;
		q->busy_until = op->start_ns + op->duration_ns;
	}
	op->stream->submitted++;
	device.submitted++;
	if (q->tail)
		q->tail->next = op;
	else
		q->head = op;
	q->tail = op;
	pthread_cond_signal(&q->wake);
	pthread_mutex_unlock(&device.lock);
}

/* What the real driver does at cuInit: load the injection library. */
static void runtime_init(void)
{
	const char *path = getenv("CUDA_INJECTION64_PATH");
	const char *concurrent = getenv("MOCK_CUDA_CONCURRENT_STREAMS");
	const char *devices = getenv("MOCK_CUDA_DEVICES");

	device.concurrent = concurrent && !strcmp(concurrent, "1");
	if (devices && atoi(devices) > 0)
		device.nr_devices = atoi(devices);
	pthread_mutex_lock(&device.lock);
	start_queue(&device.queues[0]);
	pthread_mutex_unlock(&device.lock);
	if (path && path[0]) {
		void *handle = dlopen(path, RTLD_NOW | RTLD_LOCAL);
		int (*initialize)(void) = handle ? dlsym(handle, "InitializeInjection") : NULL;

		if (initialize)
			initialize();
		else
			fprintf(stderr, "mock_cudart: cannot inject %s: %s\n", path, dlerror());
	}
}

static void init(void)
{
	pthread_once(&init_once, runtime_init);
}

static uint32_t api_enter(int domain, uint32_t cbid, const char *function, const void *params,
			  const char *symbol)
{
	const struct mock_cuda_tool *t = atomic_load(&tool);

	return t ? t->api_enter(domain, cbid, function, params, symbol) : 0;
}

/* As CUPTI's exit callbacks do, with the call's return value. */
static void api_exit_result(int domain, uint32_t cbid, uint32_t correlation, const char *function,
			    const void *params, const char *symbol, const void *result)
{
	const struct mock_cuda_tool *t = atomic_load(&tool);

	if (t)
		t->api_exit(domain, cbid, correlation, function, params, symbol, result);
}

static void api_exit(int domain, uint32_t cbid, uint32_t correlation, const char *function,
		     const void *params, const char *symbol)
{
	api_exit_result(domain, cbid, correlation, function, params, symbol, NULL);
}

static cudaError_t fail(cudaError_t error)
{
	last_error = error;
	return error;
}

static struct CUstream_st *stream_of(cudaStream_t stream)
{
	return stream ? stream : &default_stream;
}

static const char *kernel_name(const void *host)
{
	const char *name = NULL;

	pthread_mutex_lock(&kernels_lock);
	for (int i = 0; i < nr_kernels && !name; i++)
		if (kernels[i].host == host)
			name = kernels[i].name;
	pthread_mutex_unlock(&kernels_lock);
	return name;
}

/* Registration, as nvcc's generated host code does it before main(). */

EXPORT void **__cudaRegisterFatBinary(void *fat_cubin)
{
	static void *handle;

	return &handle;
}

EXPORT void __cudaRegisterFatBinaryEnd(void **handle)
{
}

EXPORT void __cudaUnregisterFatBinary(void **handle)
{
}

EXPORT void __cudaRegisterFunction(void **handle, const char *host_fun, char *device_fun,
				   const char *device_name, int thread_limit, uint3 *tid,
				   uint3 *bid, dim3 *block, dim3 *grid, int *warp_size)
{
	pthread_mutex_lock(&kernels_lock);
	if (nr_kernels < MAX_KERNELS)
		kernels[nr_kernels++] = (struct kernel){host_fun, device_name};
	pthread_mutex_unlock(&kernels_lock);
}

/* A kernel launch on a stream: queued, or recorded while capturing. */
static cudaError_t launch(const void *func, dim3 grid, dim3 block, void **args, cudaStream_t stream,
			  uint32_t correlation, uint32_t driver_correlation)
{
	struct CUstream_st *s = stream_of(stream);
	const char *name = kernel_name(func);
	struct op op = {
	    .kind = OP_KERNEL,
	    .stream = s,
	    .name = name,
	    .grid = grid,
	    .block = block,
	    .correlation = correlation,
	    .driver_correlation = driver_correlation,
	};

	if (!name)
		return fail(cudaErrorInvalidDeviceFunction);
	/* The first argument is the duration in microseconds. */
	if (args && args[0])
		op.duration_ns = *(const unsigned int *)args[0] * 1000ull;
	if (s->capture) {
		struct CUgraph_st *g = s->capture;

		if (g->nr_nodes == MAX_GRAPH_NODES)
			return fail(cudaErrorMemoryAllocation);
		op.graph_id = g->id;
		op.graph_node_id = (uint64_t)g->id << 32 | (g->nr_nodes + 1);
		g->nodes[g->nr_nodes++] = op;
		return cudaSuccess;
	}
	submit(&op);
	return cudaSuccess;
}

static cudaError_t runtime_launch(uint32_t cbid, uint32_t driver_cbid, const void *func, dim3 grid,
				  dim3 block, void **args, size_t shared_memory,
				  cudaStream_t stream);

EXPORT cudaError_t cudaLaunchKernel(const void *func, dim3 grid, dim3 block, void **args,
				    size_t shared_memory, cudaStream_t stream)
{
	return runtime_launch(CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernel_v7000,
			      CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel, func, grid, block, args,
			      shared_memory, stream);
}

/* What code built with --default-stream per-thread calls. */
EXPORT cudaError_t cudaLaunchKernel_ptsz(const void *func, dim3 grid, dim3 block, void **args,
					 size_t shared_memory, cudaStream_t stream)
{
	return runtime_launch(CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernel_ptsz_v7000,
			      CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel_ptsz, func, grid, block, args,
			      shared_memory, stream);
}

static cudaError_t runtime_launch(uint32_t cbid, uint32_t driver_cbid, const void *func, dim3 grid,
				  dim3 block, void **args, size_t shared_memory,
				  cudaStream_t stream)
{
	cudaLaunchKernel_v7000_params params = {func, grid, block, args, shared_memory, stream};
	cuLaunchKernel_params driver = {
	    .f = (CUfunction)func,
	    .gridDimX = grid.x,
	    .gridDimY = grid.y,
	    .gridDimZ = grid.z,
	    .blockDimX = block.x,
	    .blockDimY = block.y,
	    .blockDimZ = block.z,
	    .sharedMemBytes = shared_memory,
	    .hStream = (CUstream)stream,
	    .kernelParams = args,
	};
	const char *name = kernel_name(func);
	uint32_t correlation, driver_correlation;
	CUresult driver_err;
	cudaError_t err;

	init();
	correlation =
	    api_enter(CUPTI_CB_DOMAIN_RUNTIME_API, cbid, "cudaLaunchKernel", &params, name);
	/* The real runtime launches through the driver, inside the call. */
	driver_correlation =
	    api_enter(CUPTI_CB_DOMAIN_DRIVER_API, driver_cbid, "cuLaunchKernel", &driver, name);
	err = launch(func, grid, block, args, stream, correlation, driver_correlation);
	driver_err = err == cudaSuccess ? CUDA_SUCCESS : CUDA_ERROR_INVALID_VALUE;
	api_exit_result(CUPTI_CB_DOMAIN_DRIVER_API, driver_cbid, driver_correlation,
			"cuLaunchKernel", &driver, name, &driver_err);
	api_exit_result(CUPTI_CB_DOMAIN_RUNTIME_API, cbid, correlation, "cudaLaunchKernel", &params,
			name, &err);
	return err;
}

/* The driver API alone, as Triton, cuBLASLt and CUDA graphs in PyTorch call
 * it: a CUfunction here is the host stub the kernel was registered with. */
EXPORT CUresult cuLaunchKernel(CUfunction f, unsigned int grid_x, unsigned int grid_y,
			       unsigned int grid_z, unsigned int block_x, unsigned int block_y,
			       unsigned int block_z, unsigned int shared_memory, CUstream stream,
			       void **args, void **extra)
{
	cuLaunchKernel_params params = {f,	 grid_x,	grid_y, grid_z, block_x, block_y,
					block_z, shared_memory, stream, args,	extra};
	const char *name = kernel_name(f);
	uint32_t correlation;
	cudaError_t err;

	init();
	correlation = api_enter(CUPTI_CB_DOMAIN_DRIVER_API, CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel,
				"cuLaunchKernel", &params, name);
	err = launch(f, (dim3){grid_x, grid_y, grid_z}, (dim3){block_x, block_y, block_z}, args,
		     (cudaStream_t)stream, correlation, 0);
	api_exit(CUPTI_CB_DOMAIN_DRIVER_API, CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel, correlation,
		 "cuLaunchKernel", &params, name);
	return err == cudaSuccess ? CUDA_SUCCESS : CUDA_ERROR_INVALID_VALUE;
}

EXPORT CUresult cuLaunchKernelEx(const CUlaunchConfig *config, CUfunction f, void **args,
				 void **extra)
{
	cuLaunchKernelEx_params params = {config, f, args, extra};
	const char *name = kernel_name(f);
	uint32_t correlation;
	cudaError_t err;

	init();
	if (!config)
		return CUDA_ERROR_INVALID_VALUE;
	correlation =
	    api_enter(CUPTI_CB_DOMAIN_DRIVER_API, CUPTI_DRIVER_TRACE_CBID_cuLaunchKernelEx,
		      "cuLaunchKernelEx", &params, name);
	err = launch(f, (dim3){config->gridDimX, config->gridDimY, config->gridDimZ},
		     (dim3){config->blockDimX, config->blockDimY, config->blockDimZ}, args,
		     (cudaStream_t)config->hStream, correlation, 0);
	api_exit(CUPTI_CB_DOMAIN_DRIVER_API, CUPTI_DRIVER_TRACE_CBID_cuLaunchKernelEx, correlation,
		 "cuLaunchKernelEx", &params, name);
	return err == cudaSuccess ? CUDA_SUCCESS : CUDA_ERROR_INVALID_VALUE;
}

EXPORT cudaError_t cudaLaunchKernelExC(const cudaLaunchConfig_t *config, const void *func,
				       void **args)
{
	cudaLaunchKernelExC_v11060_params params = {config, func, args};
	cuLaunchKernelEx_params driver = {.f = (CUfunction)func, .kernelParams = args};
	const char *name = kernel_name(func);
	uint32_t correlation, driver_correlation;
	cudaError_t err;

	init();
	if (!config)
		return fail(cudaErrorInvalidValue);
	correlation = api_enter(CUPTI_CB_DOMAIN_RUNTIME_API,
				CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernelExC_v11060,
				"cudaLaunchKernelExC", &params, name);
	driver_correlation =
	    api_enter(CUPTI_CB_DOMAIN_DRIVER_API, CUPTI_DRIVER_TRACE_CBID_cuLaunchKernelEx,
		      "cuLaunchKernelEx", &driver, name);
	err = launch(func, config->gridDim, config->blockDim, args, config->stream, correlation,
		     driver_correlation);
	api_exit(CUPTI_CB_DOMAIN_DRIVER_API, CUPTI_DRIVER_TRACE_CBID_cuLaunchKernelEx,
		 driver_correlation, "cuLaunchKernelEx", &driver, name);
	api_exit(CUPTI_CB_DOMAIN_RUNTIME_API, CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernelExC_v11060,
		 correlation, "cudaLaunchKernelExC", &params, name);
	return err;
}

/* What nvcc 13 generated launch stubs call: a kernel handle from
 * __cudaGetKernel(), no nested driver call. */
EXPORT cudaError_t __cudaGetKernel(cudaKernel_t *kernel, const void *func)
{
	if (!kernel_name(func))
		return fail(cudaErrorInvalidDeviceFunction);
	*kernel = (cudaKernel_t)func;
	return cudaSuccess;
}

EXPORT cudaError_t __cudaLaunchKernel(cudaKernel_t kernel, dim3 grid, dim3 block, void **args,
				      size_t shared_memory, cudaStream_t stream)
{
	const char *name = kernel_name(kernel);
	uint32_t correlation;
	cudaError_t err;

	init();
	correlation = api_enter(CUPTI_CB_DOMAIN_RUNTIME_API,
				CUPTI_RUNTIME_TRACE_CBID___cudaLaunchKernel_v13000,
				"__cudaLaunchKernel", NULL, name);
	err = launch(kernel, grid, block, args, stream, correlation, 0);
	api_exit(CUPTI_CB_DOMAIN_RUNTIME_API, CUPTI_RUNTIME_TRACE_CBID___cudaLaunchKernel_v13000,
		 correlation, "__cudaLaunchKernel", NULL, name);
	return err;
}

static uint8_t copy_kind(enum cudaMemcpyKind kind)
{
	switch (kind) {
	case cudaMemcpyHostToDevice:
		return 1;
	case cudaMemcpyDeviceToHost:
		return 2;
	case cudaMemcpyDeviceToDevice:
		return 8;
	case cudaMemcpyHostToHost:
		return 9;
	default:
		return 0;
	}
}

static uint32_t driver_memcpy_cbid(enum cudaMemcpyKind kind, bool async)
{
	if (kind == cudaMemcpyHostToDevice)
		return async ? CUPTI_DRIVER_TRACE_CBID_cuMemcpyHtoDAsync_v2
			     : CUPTI_DRIVER_TRACE_CBID_cuMemcpyHtoD_v2;
	if (kind == cudaMemcpyDeviceToHost)
		return async ? CUPTI_DRIVER_TRACE_CBID_cuMemcpyDtoHAsync_v2
			     : CUPTI_DRIVER_TRACE_CBID_cuMemcpyDtoH_v2;
	return async ? CUPTI_DRIVER_TRACE_CBID_cuMemcpyAsync : CUPTI_DRIVER_TRACE_CBID_cuMemcpy;
}

static void wait_stream(struct CUstream_st *s)
{
	pthread_mutex_lock(&device.lock);
	while (s->completed != s->submitted)
		pthread_cond_wait(&device.done, &device.lock);
	pthread_mutex_unlock(&device.lock);
}

/* A copy or memset through the runtime (runtime_cbid, with the driver call
 * inside), or, with runtime_cbid 0, a driver call (driver_cbid) alone. */
static cudaError_t memory_op_as(enum op_kind kind, void *dst, const void *src, size_t bytes,
				int value, enum cudaMemcpyKind copy, cudaStream_t stream,
				bool async, uint32_t runtime_cbid, uint32_t driver_cbid,
				const char *function, const void *params)
{
	struct CUstream_st *s = stream_of(stream);
	uint32_t correlation = 0, driver_correlation;
	struct op op = {
	    .kind = kind,
	    .stream = s,
	    .duration_ns = COPY_FIXED_NS + (uint64_t)(bytes * COPY_NS_PER_BYTE),
	    .dst = dst,
	    .src = src,
	    .bytes = bytes,
	    .value = value,
	    .copy_kind = kind == OP_MEMCPY ? copy_kind(copy) : 0,
	};

	init();
	if (!dst || (kind == OP_MEMCPY && !src))
		return fail(cudaErrorInvalidValue);
	if (runtime_cbid)
		correlation =
		    api_enter(CUPTI_CB_DOMAIN_RUNTIME_API, runtime_cbid, function, params, NULL);
	driver_correlation = api_enter(CUPTI_CB_DOMAIN_DRIVER_API, driver_cbid,
				       runtime_cbid ? "cuMem" : function, NULL, NULL);
	if (!runtime_cbid)
		correlation = driver_correlation;
	/* The real memcpy record carries the driver call's id and the
	 * runtime's as runtimeCorrelationId. */
	op.correlation = correlation;
	op.driver_correlation = driver_correlation;
	submit(&op);
	if (!async)
		wait_stream(s);
	api_exit(CUPTI_CB_DOMAIN_DRIVER_API, driver_cbid, driver_correlation,
		 runtime_cbid ? "cuMem" : function, NULL, NULL);
	if (runtime_cbid)
		api_exit(CUPTI_CB_DOMAIN_RUNTIME_API, runtime_cbid, correlation, function, params,
			 NULL);
	return cudaSuccess;
}

static cudaError_t memory_op(enum op_kind kind, void *dst, const void *src, size_t bytes, int value,
			     enum cudaMemcpyKind copy, cudaStream_t stream, bool async,
			     uint32_t runtime_cbid, const char *function, const void *params)
{
	uint32_t driver_cbid = kind == OP_MEMCPY ? driver_memcpy_cbid(copy, async)
			       : async		 ? CUPTI_DRIVER_TRACE_CBID_cuMemsetD8Async
						 : CUPTI_DRIVER_TRACE_CBID_cuMemsetD8_v2;

	return memory_op_as(kind, dst, src, bytes, value, copy, stream, async, runtime_cbid,
			    driver_cbid, function, params);
}

EXPORT cudaError_t cudaMemcpy(void *dst, const void *src, size_t count, enum cudaMemcpyKind kind)
{
	cudaMemcpy_v3020_params params = {dst, src, count, kind};

	return memory_op(OP_MEMCPY, dst, src, count, 0, kind, NULL, false,
			 CUPTI_RUNTIME_TRACE_CBID_cudaMemcpy_v3020, "cudaMemcpy", &params);
}

EXPORT cudaError_t cudaMemcpyAsync(void *dst, const void *src, size_t count,
				   enum cudaMemcpyKind kind, cudaStream_t stream)
{
	cudaMemcpyAsync_v3020_params params = {dst, src, count, kind, stream};

	return memory_op(OP_MEMCPY, dst, src, count, 0, kind, stream, true,
			 CUPTI_RUNTIME_TRACE_CBID_cudaMemcpyAsync_v3020, "cudaMemcpyAsync",
			 &params);
}

EXPORT cudaError_t cudaMemset(void *ptr, int value, size_t count)
{
	cudaMemset_v3020_params params = {ptr, value, count};

	return memory_op(OP_MEMSET, ptr, NULL, count, value, cudaMemcpyDefault, NULL, false,
			 CUPTI_RUNTIME_TRACE_CBID_cudaMemset_v3020, "cudaMemset", &params);
}

EXPORT cudaError_t cudaMemsetAsync(void *ptr, int value, size_t count, cudaStream_t stream)
{
	cudaMemsetAsync_v3020_params params = {ptr, value, count, stream};

	return memory_op(OP_MEMSET, ptr, NULL, count, value, cudaMemcpyDefault, stream, true,
			 CUPTI_RUNTIME_TRACE_CBID_cudaMemsetAsync_v3020, "cudaMemsetAsync",
			 &params);
}

EXPORT cudaError_t cudaMemcpy2D(void *dst, size_t dst_pitch, const void *src, size_t src_pitch,
				size_t width, size_t height, enum cudaMemcpyKind kind)
{
	cudaMemcpy2D_v3020_params params = {dst, dst_pitch, src, src_pitch, width, height, kind};

	/* The mock copies rows packed: pitch is width. */
	if (dst_pitch != width || src_pitch != width)
		return fail(cudaErrorInvalidPitchValue);
	return memory_op(OP_MEMCPY, dst, src, width * height, 0, kind, NULL, false,
			 CUPTI_RUNTIME_TRACE_CBID_cudaMemcpy2D_v3020, "cudaMemcpy2D", &params);
}

EXPORT cudaError_t cudaMemcpy2DAsync(void *dst, size_t dst_pitch, const void *src, size_t src_pitch,
				     size_t width, size_t height, enum cudaMemcpyKind kind,
				     cudaStream_t stream)
{
	cudaMemcpy2DAsync_v3020_params params = {dst,	dst_pitch, src,	 src_pitch,
						 width, height,	   kind, stream};

	if (dst_pitch != width || src_pitch != width)
		return fail(cudaErrorInvalidPitchValue);
	return memory_op(OP_MEMCPY, dst, src, width * height, 0, kind, stream, true,
			 CUPTI_RUNTIME_TRACE_CBID_cudaMemcpy2DAsync_v3020, "cudaMemcpy2DAsync",
			 &params);
}

EXPORT cudaError_t cudaMemcpyPeer(void *dst, int dst_device, const void *src, int src_device,
				  size_t count)
{
	cudaMemcpyPeer_v4000_params params = {dst, dst_device, src, src_device, count};

	return memory_op_as(OP_MEMCPY, dst, src, count, 0, cudaMemcpyDeviceToDevice, NULL, false,
			    CUPTI_RUNTIME_TRACE_CBID_cudaMemcpyPeer_v4000,
			    CUPTI_DRIVER_TRACE_CBID_cuMemcpyPeer, "cudaMemcpyPeer", &params);
}

EXPORT cudaError_t cudaMemcpyPeerAsync(void *dst, int dst_device, const void *src, int src_device,
				       size_t count, cudaStream_t stream)
{
	cudaMemcpyPeerAsync_v4000_params params = {dst, dst_device, src, src_device, count, stream};

	return memory_op_as(OP_MEMCPY, dst, src, count, 0, cudaMemcpyDeviceToDevice, stream, true,
			    CUPTI_RUNTIME_TRACE_CBID_cudaMemcpyPeerAsync_v4000,
			    CUPTI_DRIVER_TRACE_CBID_cuMemcpyPeerAsync, "cudaMemcpyPeerAsync",
			    &params);
}

EXPORT cudaError_t cudaMemcpyToSymbol(const void *symbol, const void *src, size_t count,
				      size_t offset, enum cudaMemcpyKind kind)
{
	cudaMemcpyToSymbol_v3020_params params = {symbol, src, count, offset, kind};

	return memory_op(OP_MEMCPY, (char *)symbol + offset, src, count, 0, kind, NULL, false,
			 CUPTI_RUNTIME_TRACE_CBID_cudaMemcpyToSymbol_v3020, "cudaMemcpyToSymbol",
			 &params);
}

EXPORT cudaError_t cudaMemcpyToSymbolAsync(const void *symbol, const void *src, size_t count,
					   size_t offset, enum cudaMemcpyKind kind,
					   cudaStream_t stream)
{
	cudaMemcpyToSymbolAsync_v3020_params params = {symbol, src, count, offset, kind, stream};

	return memory_op(OP_MEMCPY, (char *)symbol + offset, src, count, 0, kind, stream, true,
			 CUPTI_RUNTIME_TRACE_CBID_cudaMemcpyToSymbolAsync_v3020,
			 "cudaMemcpyToSymbolAsync", &params);
}

/* One API call, several copies, each its own record with the call's id. */
EXPORT cudaError_t cudaMemcpyBatchAsync(void *const *dsts, const void *const *srcs,
					const size_t *sizes, size_t count,
					struct cudaMemcpyAttributes *attrs, size_t *attrs_indices,
					size_t nr_attrs, cudaStream_t stream)
{
	cudaMemcpyBatchAsync_v13000_params params = {dsts,  srcs,	   sizes,    count,
						     attrs, attrs_indices, nr_attrs, stream};
	uint32_t correlation, driver_correlation;
	struct CUstream_st *s = stream_of(stream);

	init();
	if (!dsts || !srcs || !sizes || !count)
		return fail(cudaErrorInvalidValue);
	correlation = api_enter(CUPTI_CB_DOMAIN_RUNTIME_API,
				CUPTI_RUNTIME_TRACE_CBID_cudaMemcpyBatchAsync_v13000,
				"cudaMemcpyBatchAsync", &params, NULL);
	driver_correlation =
	    api_enter(CUPTI_CB_DOMAIN_DRIVER_API, CUPTI_DRIVER_TRACE_CBID_cuMemcpyBatchAsync_v2,
		      "cuMemcpyBatchAsync_v2", NULL, NULL);
	for (size_t i = 0; i < count; i++) {
		struct op op = {
		    .kind = OP_MEMCPY,
		    .stream = s,
		    .duration_ns = COPY_FIXED_NS + (uint64_t)(sizes[i] * COPY_NS_PER_BYTE),
		    .dst = dsts[i],
		    .src = srcs[i],
		    .bytes = sizes[i],
		    .copy_kind = copy_kind(cudaMemcpyHostToDevice),
		    .correlation = correlation,
		    .driver_correlation = driver_correlation,
		};

		submit(&op);
	}
	api_exit(CUPTI_CB_DOMAIN_DRIVER_API, CUPTI_DRIVER_TRACE_CBID_cuMemcpyBatchAsync_v2,
		 driver_correlation, "cuMemcpyBatchAsync_v2", NULL, NULL);
	api_exit(CUPTI_CB_DOMAIN_RUNTIME_API, CUPTI_RUNTIME_TRACE_CBID_cudaMemcpyBatchAsync_v13000,
		 correlation, "cudaMemcpyBatchAsync", &params, NULL);
	return cudaSuccess;
}

/* Synchronous driver copies, called directly. */
EXPORT CUresult cuMemcpyHtoD_v2(CUdeviceptr dst, const void *src, size_t bytes)
{
	return memory_op_as(OP_MEMCPY, (void *)dst, src, bytes, 0, cudaMemcpyHostToDevice, NULL,
			    false, 0, CUPTI_DRIVER_TRACE_CBID_cuMemcpyHtoD_v2, "cuMemcpyHtoD_v2",
			    NULL)
		   ? CUDA_ERROR_INVALID_VALUE
		   : CUDA_SUCCESS;
}

EXPORT CUresult cuMemcpyDtoH_v2(void *dst, CUdeviceptr src, size_t bytes)
{
	return memory_op_as(OP_MEMCPY, dst, (const void *)src, bytes, 0, cudaMemcpyDeviceToHost,
			    NULL, false, 0, CUPTI_DRIVER_TRACE_CBID_cuMemcpyDtoH_v2,
			    "cuMemcpyDtoH_v2", NULL)
		   ? CUDA_ERROR_INVALID_VALUE
		   : CUDA_SUCCESS;
}

/* Calls that only pass through the hooks. */
#define PLAIN_CALL(cbid, function)                                                                 \
	uint32_t correlation_ =                                                                    \
	    api_enter(CUPTI_CB_DOMAIN_RUNTIME_API, cbid, function, NULL, NULL);                    \
	api_exit(CUPTI_CB_DOMAIN_RUNTIME_API, cbid, correlation_, function, NULL, NULL)

/* Memory goes through the mock driver, as the real runtime's does: one
 * allocation, two API calls. */
static cudaError_t from_driver(CUresult result)
{
	return result == CUDA_SUCCESS		    ? cudaSuccess
	       : result == CUDA_ERROR_OUT_OF_MEMORY ? fail(cudaErrorMemoryAllocation)
						    : fail(cudaErrorInvalidValue);
}

static cudaError_t driver_alloc(void **ptr, CUresult result, const CUdeviceptr *address)
{
	if (result == CUDA_SUCCESS)
		*ptr = (void *)(uintptr_t)*address;
	return from_driver(result);
}

EXPORT cudaError_t cudaMalloc(void **ptr, size_t size)
{
	CUdeviceptr address = 0;

	init();
	PLAIN_CALL(CUPTI_RUNTIME_TRACE_CBID_cudaMalloc_v3020, "cudaMalloc");
	return driver_alloc(ptr, cuMemAlloc_v2(&address, size), &address);
}

EXPORT cudaError_t cudaMallocAsync(void **ptr, size_t size, cudaStream_t stream)
{
	CUdeviceptr address = 0;

	init();
	return driver_alloc(ptr, cuMemAllocAsync(&address, size, NULL), &address);
}

EXPORT cudaError_t cudaMallocManaged(void **ptr, size_t size, unsigned int flags)
{
	CUdeviceptr address = 0;

	init();
	return driver_alloc(ptr, cuMemAllocManaged(&address, size, flags), &address);
}

EXPORT cudaError_t cudaMallocPitch(void **ptr, size_t *pitch, size_t width, size_t height)
{
	CUdeviceptr address = 0;

	init();
	return driver_alloc(ptr, cuMemAllocPitch_v2(&address, pitch, width, height, 4), &address);
}

EXPORT cudaError_t cudaMallocHost(void **ptr, size_t size)
{
	init();
	return from_driver(cuMemHostAlloc(ptr, size, 0));
}

EXPORT cudaError_t cudaHostAlloc(void **ptr, size_t size, unsigned int flags)
{
	init();
	return from_driver(cuMemHostAlloc(ptr, size, flags));
}

EXPORT cudaError_t cudaFree(void *ptr)
{
	init();
	PLAIN_CALL(CUPTI_RUNTIME_TRACE_CBID_cudaFree_v3020, "cudaFree");
	cudaDeviceSynchronize();
	return from_driver(cuMemFree_v2((CUdeviceptr)(uintptr_t)ptr));
}

EXPORT cudaError_t cudaFreeAsync(void *ptr, cudaStream_t stream)
{
	init();
	return from_driver(cuMemFreeAsync((CUdeviceptr)(uintptr_t)ptr, NULL));
}

EXPORT cudaError_t cudaFreeHost(void *ptr)
{
	init();
	return from_driver(cuMemFreeHost(ptr));
}

/* The driver's entry points, asked of the driver's cuGetProcAddress as the
 * real runtime asks it: a symbol not found is no error, driverStatus says
 * so and *funcPtr is NULL. */
static cudaError_t driver_entry_point(uint32_t cbid, const char *function, const char *symbol,
				      void **funcPtr, unsigned int cudaVersion,
				      unsigned long long flags,
				      enum cudaDriverEntryPointQueryResult *driverStatus)
{
	CUdriverProcAddressQueryResult found = CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND;
	CUresult result;

	init();
	PLAIN_CALL(cbid, function);
	if (!symbol || !funcPtr)
		return fail(cudaErrorInvalidValue);
	result = cuGetProcAddress_v2(symbol, funcPtr, cudaVersion, flags, &found);
	if (driverStatus)
		*driverStatus = found == CU_GET_PROC_ADDRESS_SUCCESS ? cudaDriverEntryPointSuccess
				: found == CU_GET_PROC_ADDRESS_VERSION_NOT_SUFFICIENT
				    ? cudaDriverEntryPointVersionNotSufficent
				    : cudaDriverEntryPointSymbolNotFound;
	return result == CUDA_SUCCESS || result == CUDA_ERROR_NOT_FOUND
		   ? cudaSuccess
		   : fail(cudaErrorInvalidValue);
}

EXPORT cudaError_t cudaGetDriverEntryPointByVersion(
    const char *symbol, void **funcPtr, unsigned int cudaVersion, unsigned long long flags,
    enum cudaDriverEntryPointQueryResult *driverStatus)
{
	return driver_entry_point(CUPTI_RUNTIME_TRACE_CBID_cudaGetDriverEntryPointByVersion_v12050,
				  "cudaGetDriverEntryPointByVersion", symbol, funcPtr, cudaVersion,
				  flags, driverStatus);
}

EXPORT cudaError_t cudaGetDriverEntryPoint(const char *symbol, void **funcPtr,
					   unsigned long long flags,
					   enum cudaDriverEntryPointQueryResult *driverStatus)
{
	return driver_entry_point(CUPTI_RUNTIME_TRACE_CBID_cudaGetDriverEntryPoint_v11030,
				  "cudaGetDriverEntryPoint", symbol, funcPtr, CUDART_VERSION, flags,
				  driverStatus);
}

EXPORT cudaError_t cudaStreamCreate(cudaStream_t *stream)
{
	struct CUstream_st *s;

	init();
	PLAIN_CALL(CUPTI_RUNTIME_TRACE_CBID_cudaStreamCreate_v3020, "cudaStreamCreate");
	s = calloc(1, sizeof(*s));
	if (!s)
		return fail(cudaErrorMemoryAllocation);
	s->id = atomic_fetch_add(&next_stream_id, 1);
	*stream = s;
	return cudaSuccess;
}

EXPORT cudaError_t cudaStreamDestroy(cudaStream_t stream)
{
	init();
	PLAIN_CALL(CUPTI_RUNTIME_TRACE_CBID_cudaStreamDestroy_v5050, "cudaStreamDestroy");
	if (stream) {
		wait_stream(stream);
		free(stream);
	}
	return cudaSuccess;
}

EXPORT cudaError_t cudaStreamSynchronize(cudaStream_t stream)
{
	init();
	uint32_t correlation = api_enter(CUPTI_CB_DOMAIN_RUNTIME_API,
					 CUPTI_RUNTIME_TRACE_CBID_cudaStreamSynchronize_v3020,
					 "cudaStreamSynchronize", NULL, NULL);
	wait_stream(stream_of(stream));
	api_exit(CUPTI_CB_DOMAIN_RUNTIME_API, CUPTI_RUNTIME_TRACE_CBID_cudaStreamSynchronize_v3020,
		 correlation, "cudaStreamSynchronize", NULL, NULL);
	return cudaSuccess;
}

EXPORT cudaError_t cudaDeviceSynchronize(void)
{
	init();
	uint32_t correlation = api_enter(CUPTI_CB_DOMAIN_RUNTIME_API,
					 CUPTI_RUNTIME_TRACE_CBID_cudaDeviceSynchronize_v3020,
					 "cudaDeviceSynchronize", NULL, NULL);
	pthread_mutex_lock(&device.lock);
	while (device.completed != device.submitted)
		pthread_cond_wait(&device.done, &device.lock);
	pthread_mutex_unlock(&device.lock);
	api_exit(CUPTI_CB_DOMAIN_RUNTIME_API, CUPTI_RUNTIME_TRACE_CBID_cudaDeviceSynchronize_v3020,
		 correlation, "cudaDeviceSynchronize", NULL, NULL);
	return cudaSuccess;
}

/* Graphs, through stream capture. */

EXPORT cudaError_t cudaStreamBeginCapture(cudaStream_t stream, enum cudaStreamCaptureMode mode)
{
	struct CUstream_st *s = stream_of(stream);

	init();
	PLAIN_CALL(CUPTI_RUNTIME_TRACE_CBID_cudaStreamBeginCapture_v10000,
		   "cudaStreamBeginCapture");
	if (!stream || s->capture)
		return fail(cudaErrorStreamCaptureUnsupported);
	s->capture = calloc(1, sizeof(*s->capture));
	if (!s->capture)
		return fail(cudaErrorMemoryAllocation);
	s->capture->id = atomic_fetch_add(&next_graph_id, 1);
	return cudaSuccess;
}

EXPORT cudaError_t cudaStreamEndCapture(cudaStream_t stream, cudaGraph_t *graph)
{
	struct CUstream_st *s = stream_of(stream);

	init();
	PLAIN_CALL(CUPTI_RUNTIME_TRACE_CBID_cudaStreamEndCapture_v10000, "cudaStreamEndCapture");
	if (!s->capture)
		return fail(cudaErrorIllegalState);
	*graph = s->capture;
	s->capture = NULL;
	return cudaSuccess;
}

EXPORT cudaError_t cudaGraphInstantiate(cudaGraphExec_t *exec, cudaGraph_t graph,
					unsigned long long flags)
{
	struct CUgraphExec_st *e;

	init();
	PLAIN_CALL(CUPTI_RUNTIME_TRACE_CBID_cudaGraphInstantiate_v12000, "cudaGraphInstantiate");
	if (!graph)
		return fail(cudaErrorInvalidValue);
	e = calloc(1, sizeof(*e));
	if (!e)
		return fail(cudaErrorMemoryAllocation);
	e->id = atomic_fetch_add(&next_graph_id, 1);
	e->graph = *graph;
	*exec = e;
	return cudaSuccess;
}

static void graph_submit(cudaGraphExec_t exec, cudaStream_t stream, uint32_t correlation,
			 uint32_t driver_correlation)
{
	for (int i = 0; i < exec->graph.nr_nodes; i++) {
		struct op op = exec->graph.nodes[i];

		op.stream = stream_of(stream);
		op.correlation = correlation;
		op.driver_correlation = driver_correlation;
		submit(&op);
	}
}

EXPORT CUresult cuGraphLaunch(CUgraphExec exec, CUstream stream)
{
	cuGraphLaunch_params params = {exec, stream};
	uint32_t correlation;

	init();
	if (!exec)
		return CUDA_ERROR_INVALID_VALUE;
	correlation = api_enter(CUPTI_CB_DOMAIN_DRIVER_API, CUPTI_DRIVER_TRACE_CBID_cuGraphLaunch,
				"cuGraphLaunch", &params, NULL);
	graph_submit((cudaGraphExec_t)exec, (cudaStream_t)stream, correlation, 0);
	api_exit(CUPTI_CB_DOMAIN_DRIVER_API, CUPTI_DRIVER_TRACE_CBID_cuGraphLaunch, correlation,
		 "cuGraphLaunch", &params, NULL);
	return CUDA_SUCCESS;
}

EXPORT cudaError_t cudaGraphLaunch(cudaGraphExec_t exec, cudaStream_t stream)
{
	cudaGraphLaunch_v10000_params params = {exec, stream};
	cuGraphLaunch_params driver = {(CUgraphExec)exec, (CUstream)stream};
	uint32_t correlation, driver_correlation;

	init();
	if (!exec)
		return fail(cudaErrorInvalidValue);
	correlation =
	    api_enter(CUPTI_CB_DOMAIN_RUNTIME_API, CUPTI_RUNTIME_TRACE_CBID_cudaGraphLaunch_v10000,
		      "cudaGraphLaunch", &params, NULL);
	driver_correlation =
	    api_enter(CUPTI_CB_DOMAIN_DRIVER_API, CUPTI_DRIVER_TRACE_CBID_cuGraphLaunch,
		      "cuGraphLaunch", &driver, NULL);
	/* Every kernel of one graph launch carries that launch's id. */
	graph_submit(exec, stream, correlation, driver_correlation);
	api_exit(CUPTI_CB_DOMAIN_DRIVER_API, CUPTI_DRIVER_TRACE_CBID_cuGraphLaunch,
		 driver_correlation, "cuGraphLaunch", &driver, NULL);
	api_exit(CUPTI_CB_DOMAIN_RUNTIME_API, CUPTI_RUNTIME_TRACE_CBID_cudaGraphLaunch_v10000,
		 correlation, "cudaGraphLaunch", &params, NULL);
	return cudaSuccess;
}

EXPORT cudaError_t cudaGraphExecDestroy(cudaGraphExec_t exec)
{
	init();
	PLAIN_CALL(CUPTI_RUNTIME_TRACE_CBID_cudaGraphExecDestroy_v10000, "cudaGraphExecDestroy");
	cudaDeviceSynchronize();
	free(exec);
	return cudaSuccess;
}

EXPORT cudaError_t cudaGraphDestroy(cudaGraph_t graph)
{
	init();
	PLAIN_CALL(CUPTI_RUNTIME_TRACE_CBID_cudaGraphDestroy_v10000, "cudaGraphDestroy");
	free(graph);
	return cudaSuccess;
}

EXPORT cudaError_t cudaGetDeviceCount(int *count)
{
	init();
	*count = device.nr_devices;
	return cudaSuccess;
}

EXPORT cudaError_t cudaSetDevice(int dev)
{
	init();
	if (dev < 0 || dev >= device.nr_devices)
		return fail(cudaErrorInvalidDevice);
	device.device = dev;
	return cudaSuccess;
}

EXPORT cudaError_t cudaGetLastError(void)
{
	cudaError_t err = last_error;

	last_error = cudaSuccess;
	return err;
}

EXPORT const char *cudaGetErrorString(cudaError_t error)
{
	switch (error) {
	case cudaSuccess:
		return "no error";
	case cudaErrorInvalidValue:
		return "invalid argument";
	case cudaErrorMemoryAllocation:
		return "out of memory";
	case cudaErrorInvalidDeviceFunction:
		return "invalid device function";
	case cudaErrorInvalidDevice:
		return "invalid device ordinal";
	default:
		return "unknown error";
	}
}
