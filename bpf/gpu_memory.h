/* SPDX-License-Identifier: GPL-2.0 */
/*
 * GPU memory records (gpu_memory.bpf.c) as userspace reads them: a
 * sample_event of kind SAMPLE_KIND_GPU_MEMORY for each outermost CUDA
 * allocation, free or mapping call of a target thread, sent when the call
 * returns, with the stacks of its caller.  The uprobes carry a cookie that
 * says which call they are on and how to read its arguments.
 */
#ifndef LLMPROF_BPF_GPU_MEMORY_H
#define LLMPROF_BPF_GPU_MEMORY_H

/* How a call's arguments are read (the cookie's low byte). */
enum gpu_memory_shape {
	GPU_MEMORY_ALLOC = 1,	/* (T **out, size_t size, ...) */
	GPU_MEMORY_ALLOC_PITCH, /* (T **out, size_t *pitch, size_t width, size_t height) */
	GPU_MEMORY_CREATE,	/* cuMemCreate(handle *out, size, const prop *, flags) */
	GPU_MEMORY_FREE,	/* (T *address, ...), cuMemRelease(handle) */
	GPU_MEMORY_MAP,		/* cuMemMap(address, size, offset, handle, flags) */
	GPU_MEMORY_UNMAP,	/* cuMemUnmap(address, size) */
	GPU_MEMORY_SET_DEVICE,	/* cudaSetDevice(int device) */
	GPU_MEMORY_LOADER,	/* the dynamic loader mapped or unmapped a library */
	/* cuGetProcAddress(symbol, void **out, ...): a driver function handed
	 * out by name; its record's cookie names the call of that name. */
	GPU_MEMORY_ENTRY_POINT,
};

/* The uprobe cookie: shape | call << 8, call being userspace's index into
 * its table of functions. */
#define GPU_MEMORY_COOKIE(shape, call) ((__u64)(shape) | (__u64)(call) << 8)
#define GPU_MEMORY_COOKIE_SHAPE(cookie) ((cookie)&0xff)
#define GPU_MEMORY_COOKIE_CALL(cookie) (((cookie) >> 8) & 0xffff)

/* sample_event.detail[] of a GPU memory record. */
enum gpu_memory_detail {
	GPU_MEMORY_DETAIL_CALL = 0, /* shape | call << 8, as the cookie */
	GPU_MEMORY_DETAIL_RESULT,   /* CUresult / cudaError_t, sign-extended */
	GPU_MEMORY_DETAIL_SIZE,	    /* bytes asked for (pitch: pitch * height) */
	GPU_MEMORY_DETAIL_ADDRESS,  /* returned or freed address, or handle */
	GPU_MEMORY_DETAIL_DEVICE,   /* device ordinal (see below) */
	GPU_MEMORY_DETAIL_HANDLE,   /* cuMemMap: the handle mapped */
	GPU_MEMORY_DETAIL_START_NS, /* when the outermost call was entered */
};

/* sample_event.detail[] of an entry point record: the address handed out
 * for a call of gpu_memory_entry_names, the first time in its process. */
#define GPU_MEMORY_DETAIL_ENTRY_ADDRESS 1
/* The names of the calls looked up by name, NUL padded: the map's key. */
#define GPU_MEMORY_ENTRY_NAME_BYTES 32
#define GPU_MEMORY_MAX_ENTRY_POINTS 4096

/* The calling thread's device when it never called cudaSetDevice (the
 * runtime's default is device 0 too). */
#define GPU_MEMORY_DEFAULT_DEVICE 0
#define GPU_MEMORY_MAX_THREADS 65536

#endif /* LLMPROF_BPF_GPU_MEMORY_H */
