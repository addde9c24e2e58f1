/* SPDX-License-Identifier: GPL-2.0 */
/*
 * What the GPU memory probes (gpu_memory.c) and the accounting
 * (gpu_memory_account.c) share: the table of probed calls and the recorded
 * calls.
 */
#ifndef LLMPROF_GPU_MEMORY_INTERNAL_H
#define LLMPROF_GPU_MEMORY_INTERNAL_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include "gpu/gpu_memory.h"
#include "gpu/library_probe.h"
/* bpf/gpu_memory.h, the record layout: <> so that this directory's
 * gpu_memory.h is not taken for it. */
#include <gpu_memory.h>

enum gpu_memory_library {
	LIBRARY_DRIVER = 0, /* libcuda */
	LIBRARY_RUNTIME,    /* libcudart */
};

/* Which memory a call allocates or frees. */
enum gpu_memory_space {
	SPACE_NONE = 0, /* maps, unmaps, cudaSetDevice: no bytes of their own */
	SPACE_DEVICE,
	SPACE_MANAGED,
	SPACE_HOST,	/* pinned host memory */
	SPACE_PHYSICAL, /* cuMemCreate's handles, mapped with cuMemMap */
};

struct gpu_memory_call {
	const char *symbol; /* as exported */
	const char *name;   /* as the leaf shows it */
	enum gpu_memory_library library;
	enum gpu_memory_shape shape;
	enum gpu_memory_space space;
};

extern const struct gpu_memory_call gpu_memory_calls[];
extern const size_t gpu_memory_nr_calls;

/* Devices on the peak: GPUs by ordinal, and pinned host memory. */
#define GPU_MEMORY_MAX_DEVICES 64
#define GPU_MEMORY_HOST_DEVICE (-1)

#define NO_END UINT32_MAX

/* One recorded call. */
struct memory_event {
	uint64_t time_ns;  /* when it returned */
	uint64_t start_ns; /* when it was entered */
	uint64_t size, address, handle;
	pid_t pid; /* addresses are the process's own */
	int64_t result;
	int32_t device;
	uint16_t call;		/* index into gpu_memory_calls */
	uint32_t thread, stack; /* the session's raw indexes */
	uint32_t end;		/* allocations: the event that freed it, or NO_END */
	int64_t frames;		/* into gpu_memory.stacks.frames once resolved, or -1 */
	uint32_t nr_frames;
};

/* One process's accounting on one device (or in pinned host memory). */
struct device_memory {
	pid_t pid;
	int32_t device; /* ordinal, or GPU_MEMORY_HOST_DEVICE */
	uint64_t live, peak, end_live;
	uint64_t before; /* "[before attach]", in live and peak */
	uint64_t allocated, nr_allocs, nr_frees;
	uint64_t peak_time_ns; /* since the profile's start */
	size_t peak_event;     /* the call that reached the peak; SIZE_MAX: none */
	size_t first_event;    /* its first call, for the process's name; SIZE_MAX: none */
};

/* attach: what NVML says a process held on a device when probing started. */
struct memory_before {
	pid_t pid;
	int32_t device;
	uint64_t bytes;
};

/* Slots of struct device_memory: a few processes on a few devices. */
#define GPU_MEMORY_MAX_SLOTS 256

struct gpu_memory {
	struct gpu_memory_bpf *skel;
	struct session *session;
	struct library_probe probe;
	bool attach_mode;
	bool multi; /* multi-uprobe links (library_probe__attach_multi()) */
	/* The functions probed, by file and offset: an address the driver
	 * hands out is probed where none of them is. */
	struct probed_function {
		struct library_probe_file file;
		size_t offset;
	} * probed;
	size_t nr_probed, cap_probed;

	struct memory_event *events;
	size_t nr_events, cap_events;

	/* attach: what NVML says the processes held when probing started */
	bool before_known;
	struct memory_before *before;
	size_t nr_before, cap_before;

	/* Filled by gpu_memory__finish(). */
	const struct profile *frames_profile; /* the CPU profile the frames are in */
	struct library_probe_stacks stacks;   /* resolved stacks, root first */
	uint64_t start_ns, duration_ns;
	bool finished;
	struct device_memory devices[GPU_MEMORY_MAX_SLOTS];
	size_t nr_devices;
	size_t nr_processes; /* with a slot */
	uint64_t nr_allocs, allocated, nr_failed, nr_frees, unknown_frees, nr_maps;
};

int gpu_memory__account(struct gpu_memory *memory);
/* Fills profile->memory from the accounting (gpu_memory_facts.c). */
int gpu_memory__facts(const struct gpu_memory *memory, struct profile *profile);
/* "cudaErrorMemoryAllocation": a failed call's result by name. */
const char *gpu_memory__error_name(const struct memory_event *event);
/* Whether the call allocates (successfully or not). */
bool gpu_memory__is_alloc(const struct memory_event *event);

#endif /* LLMPROF_GPU_MEMORY_INTERNAL_H */
