// SPDX-License-Identifier: GPL-2.0
/*
 * A mock libcuda.so.1 for tests without a GPU: the driver API's memory
 * calls with their real names (the _v2 ones where cuda.h maps to them) and
 * signatures, on host memory.  The mock device holds MOCK_DEVICE_BYTES; a
 * larger request fails with CUDA_ERROR_OUT_OF_MEMORY, as the real driver's
 * would.  The mock runtime calls these inside its own allocation calls, as
 * the real runtime does.  MOCK_CUDA_ALLOC_SPIN_MS makes each cuMemAlloc_v2
 * burn that much CPU, a call slow enough to be sampled inside.
 *
 * cuGetProcAddress (cuda.h's name for cuGetProcAddress_v2) answers as the
 * real driver's table does: an exported function for each name, the _v2
 * one for a name cuda.h versions (cuMemAlloc -> cuMemAlloc_v2), and with
 * CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM the per-thread-stream
 * variant where there is one (cuMemAllocAsync -> cuMemAllocAsync_ptsz), a
 * function of its own, as what cudaGetDriverEntryPointByVersion hands to a
 * program built for the per-thread default stream.  cuGetProcAddress (the
 * first version, without symbolStatus) is exported too, as the real
 * driver's is.
 *
 * MOCK_CUDA_INTERNAL_ENTRY_POINTS=1: cuGetProcAddress hands out the
 * driver's internal functions instead, as a real driver's table may: static
 * functions, in no symbol table a loader reads, that do the work without
 * calling the exported ones.
 */
#include <cuda.h>

#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define EXPORT __attribute__((visibility("default")))
#define MOCK_DEVICE_BYTES (80ULL << 30)

/* A cuMemCreate handle: the physical memory it stands for. */
struct physical {
	void *memory;
	size_t size;
};

static CUresult host_alloc(void **out, size_t size)
{
	if (!out)
		return CUDA_ERROR_INVALID_VALUE;
	if (size > MOCK_DEVICE_BYTES)
		return CUDA_ERROR_OUT_OF_MEMORY;
	*out = calloc(1, size ? size : 1);
	return *out ? CUDA_SUCCESS : CUDA_ERROR_OUT_OF_MEMORY;
}

static CUresult device_alloc(CUdeviceptr *dptr, size_t size)
{
	void *memory = NULL;
	CUresult result = host_alloc(&memory, size);

	if (!result)
		*dptr = (CUdeviceptr)(uintptr_t)memory;
	return result;
}

/* Burns ms of this thread's CPU time. */
static __attribute__((noinline)) void spin(long ms)
{
	struct timespec start, now;

	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &start);
	do {
		clock_gettime(CLOCK_THREAD_CPUTIME_ID, &now);
	} while ((now.tv_sec - start.tv_sec) * 1000 + (now.tv_nsec - start.tv_nsec) / 1000000 < ms);
}

EXPORT CUresult cuMemAlloc_v2(CUdeviceptr *dptr, size_t bytesize)
{
	const char *ms = getenv("MOCK_CUDA_ALLOC_SPIN_MS");

	if (ms)
		spin(atol(ms));
	return device_alloc(dptr, bytesize);
}

EXPORT CUresult cuMemAllocAsync(CUdeviceptr *dptr, size_t bytesize, CUstream hStream)
{
	return device_alloc(dptr, bytesize);
}

EXPORT CUresult cuMemAllocManaged(CUdeviceptr *dptr, size_t bytesize, unsigned int flags)
{
	return device_alloc(dptr, bytesize);
}

EXPORT CUresult cuMemAllocPitch_v2(CUdeviceptr *dptr, size_t *pPitch, size_t WidthInBytes,
				   size_t Height, unsigned int ElementSizeBytes)
{
	/* Rows padded to 512 bytes, as a real device's alignment. */
	size_t pitch = (WidthInBytes + 511) & ~(size_t)511;

	if (!pPitch)
		return CUDA_ERROR_INVALID_VALUE;
	*pPitch = pitch;
	return device_alloc(dptr, pitch * Height);
}

/* Per-thread default stream: no stream semantics in the mock, the same
 * allocation. */
EXPORT CUresult cuMemAllocAsync_ptsz(CUdeviceptr *dptr, size_t bytesize, CUstream hStream)
{
	return device_alloc(dptr, bytesize);
}

EXPORT CUresult cuMemFree_v2(CUdeviceptr dptr)
{
	free((void *)(uintptr_t)dptr);
	return CUDA_SUCCESS;
}

EXPORT CUresult cuMemFreeAsync(CUdeviceptr dptr, CUstream hStream)
{
	free((void *)(uintptr_t)dptr);
	return CUDA_SUCCESS;
}

EXPORT CUresult cuMemFreeAsync_ptsz(CUdeviceptr dptr, CUstream hStream)
{
	free((void *)(uintptr_t)dptr);
	return CUDA_SUCCESS;
}

EXPORT CUresult cuMemAllocHost_v2(void **pp, size_t bytesize)
{
	return host_alloc(pp, bytesize);
}

EXPORT CUresult cuMemHostAlloc(void **pp, size_t bytesize, unsigned int Flags)
{
	return host_alloc(pp, bytesize);
}

EXPORT CUresult cuMemFreeHost(void *p)
{
	free(p);
	return CUDA_SUCCESS;
}

EXPORT CUresult cuMemCreate(CUmemGenericAllocationHandle *handle, size_t size,
			    const CUmemAllocationProp *prop, unsigned long long flags)
{
	struct physical *physical;
	CUresult result;

	if (!handle || !prop)
		return CUDA_ERROR_INVALID_VALUE;
	physical = calloc(1, sizeof(*physical));
	if (!physical)
		return CUDA_ERROR_OUT_OF_MEMORY;
	result = host_alloc(&physical->memory, size);
	if (result) {
		free(physical);
		return result;
	}
	physical->size = size;
	*handle = (CUmemGenericAllocationHandle)(uintptr_t)physical;
	return CUDA_SUCCESS;
}

EXPORT CUresult cuMemRelease(CUmemGenericAllocationHandle handle)
{
	struct physical *physical = (struct physical *)(uintptr_t)handle;

	if (!physical)
		return CUDA_ERROR_INVALID_VALUE;
	free(physical->memory);
	free(physical);
	return CUDA_SUCCESS;
}

/* The mock has no page tables: a mapping is only checked. */
EXPORT CUresult cuMemMap(CUdeviceptr ptr, size_t size, size_t offset,
			 CUmemGenericAllocationHandle handle, unsigned long long flags)
{
	struct physical *physical = (struct physical *)(uintptr_t)handle;

	if (!ptr || !physical || offset + size > physical->size)
		return CUDA_ERROR_INVALID_VALUE;
	return CUDA_SUCCESS;
}

EXPORT CUresult cuMemUnmap(CUdeviceptr ptr, size_t size)
{
	return ptr ? CUDA_SUCCESS : CUDA_ERROR_INVALID_VALUE;
}

/*
 * The driver's internal functions (MOCK_CUDA_INTERNAL_ENTRY_POINTS): the
 * same work, none calling an exported function.  Each counts its calls, so
 * that no two bodies are alike and the compiler cannot fold one into an
 * exported function.
 */
static volatile unsigned long internal_calls[8];

static __attribute__((noinline)) CUresult internal_alloc(CUdeviceptr *dptr, size_t bytesize)
{
	internal_calls[0]++;
	return device_alloc(dptr, bytesize);
}

static __attribute__((noinline)) CUresult internal_free(CUdeviceptr dptr)
{
	internal_calls[1]++;
	free((void *)(uintptr_t)dptr);
	return CUDA_SUCCESS;
}

static __attribute__((noinline)) CUresult internal_alloc_async(CUdeviceptr *dptr, size_t bytesize,
							       CUstream hStream)
{
	internal_calls[2]++;
	return device_alloc(dptr, bytesize);
}

static __attribute__((noinline)) CUresult internal_free_async(CUdeviceptr dptr, CUstream hStream)
{
	internal_calls[3]++;
	free((void *)(uintptr_t)dptr);
	return CUDA_SUCCESS;
}

static __attribute__((noinline)) CUresult internal_create(CUmemGenericAllocationHandle *handle,
							  size_t size,
							  const CUmemAllocationProp *prop,
							  unsigned long long flags)
{
	struct physical *physical;

	internal_calls[4]++;
	if (!handle || !prop)
		return CUDA_ERROR_INVALID_VALUE;
	physical = calloc(1, sizeof(*physical));
	if (!physical)
		return CUDA_ERROR_OUT_OF_MEMORY;
	if (host_alloc(&physical->memory, size)) {
		free(physical);
		return CUDA_ERROR_OUT_OF_MEMORY;
	}
	physical->size = size;
	*handle = (CUmemGenericAllocationHandle)(uintptr_t)physical;
	return CUDA_SUCCESS;
}

static __attribute__((noinline)) CUresult internal_release(CUmemGenericAllocationHandle handle)
{
	struct physical *physical = (struct physical *)(uintptr_t)handle;

	internal_calls[5]++;
	if (!physical)
		return CUDA_ERROR_INVALID_VALUE;
	free(physical->memory);
	free(physical);
	return CUDA_SUCCESS;
}

static __attribute__((noinline)) CUresult internal_map(CUdeviceptr ptr, size_t size, size_t offset,
						       CUmemGenericAllocationHandle handle,
						       unsigned long long flags)
{
	struct physical *physical = (struct physical *)(uintptr_t)handle;

	internal_calls[6]++;
	if (!ptr || !physical || offset + size > physical->size)
		return CUDA_ERROR_INVALID_VALUE;
	return CUDA_SUCCESS;
}

static __attribute__((noinline)) CUresult internal_unmap(CUdeviceptr ptr, size_t size)
{
	internal_calls[7]++;
	return ptr ? CUDA_SUCCESS : CUDA_ERROR_INVALID_VALUE;
}

/* The driver's table of entry points, by the name asked for. */
static const struct {
	const char *name;
	void *function;
	void *per_thread; /* with CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM */
	void *internal;	  /* MOCK_CUDA_INTERNAL_ENTRY_POINTS, either way */
} entry_points[] = {
    {"cuMemAlloc", (void *)cuMemAlloc_v2, NULL, (void *)internal_alloc},
    {"cuMemFree", (void *)cuMemFree_v2, NULL, (void *)internal_free},
    {"cuMemAllocAsync", (void *)cuMemAllocAsync, (void *)cuMemAllocAsync_ptsz,
     (void *)internal_alloc_async},
    {"cuMemFreeAsync", (void *)cuMemFreeAsync, (void *)cuMemFreeAsync_ptsz,
     (void *)internal_free_async},
    {"cuMemCreate", (void *)cuMemCreate, NULL, (void *)internal_create},
    {"cuMemRelease", (void *)cuMemRelease, NULL, (void *)internal_release},
    {"cuMemMap", (void *)cuMemMap, NULL, (void *)internal_map},
    {"cuMemUnmap", (void *)cuMemUnmap, NULL, (void *)internal_unmap},
};

static void *entry_point(const char *symbol, cuuint64_t flags)
{
	const char *internal = getenv("MOCK_CUDA_INTERNAL_ENTRY_POINTS");

	for (size_t i = 0; i < sizeof(entry_points) / sizeof(entry_points[0]); i++) {
		if (strcmp(symbol, entry_points[i].name))
			continue;
		if (internal && !strcmp(internal, "1"))
			return entry_points[i].internal;
		return (flags & CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM) &&
			       entry_points[i].per_thread
			   ? entry_points[i].per_thread
			   : entry_points[i].function;
	}
	return NULL;
}

EXPORT CUresult cuGetProcAddress_v2(const char *symbol, void **pfn, int cudaVersion,
				    cuuint64_t flags, CUdriverProcAddressQueryResult *symbolStatus)
{
	(void)cudaVersion;
	if (!symbol || !pfn)
		return CUDA_ERROR_INVALID_VALUE;
	*pfn = entry_point(symbol, flags);
	if (symbolStatus)
		*symbolStatus =
		    *pfn ? CU_GET_PROC_ADDRESS_SUCCESS : CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND;
	return *pfn ? CUDA_SUCCESS : CUDA_ERROR_NOT_FOUND;
}

/* cuda.h names cuGetProcAddress_v2 cuGetProcAddress; the first version keeps
 * its own name among the exports. */
EXPORT CUresult get_proc_address_v1(const char *symbol, void **pfn, int cudaVersion,
				    cuuint64_t flags) __asm__("cuGetProcAddress");
EXPORT CUresult get_proc_address_v1(const char *symbol, void **pfn, int cudaVersion,
				    cuuint64_t flags)
{
	(void)cudaVersion;
	if (!symbol || !pfn)
		return CUDA_ERROR_INVALID_VALUE;
	*pfn = entry_point(symbol, flags);
	return *pfn ? CUDA_SUCCESS : CUDA_ERROR_NOT_FOUND;
}
