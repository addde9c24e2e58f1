/* SPDX-License-Identifier: GPL-2.0 */
/*
 * GPU memory by the CPU stack that allocated it (bpf/gpu_memory.bpf.c):
 * uprobes on the CUDA driver's and runtime's allocation and free calls in
 * every copy of libcuda and libcudart the processes profiled map, charged to
 * the stack of the outermost call.  At the end: the peak per process and
 * device and what was live then, what is still allocated, and every byte
 * allocated (churn), each as a profile weighted in bytes whose leaves say
 * "[gpu-mem] CALL SIZE".
 */
#ifndef LLMPROF_GPU_MEMORY_H
#define LLMPROF_GPU_MEMORY_H

#include <stdbool.h>
#include <sys/types.h>

#include "profile/profile.h"
#include "sampling/session.h"

struct gpu_memory;

enum gpu_memory_view {
	GPU_MEMORY_VIEW_PEAK = 0, /* live at each device's highest total */
	GPU_MEMORY_VIEW_LEAKS,	  /* live when the profile ends */
	GPU_MEMORY_VIEW_ALLOC,	  /* every allocation, freed or not */
};

/*
 * Loads the probes into the session's maps and takes its GPU memory
 * records; attaches nothing.  stop_on_load: the target is our child (record),
 * so it is stopped while the probes go into a library it has just mapped,
 * and none of its calls is missed.  0 or -errno.
 */
int gpu_memory__open(struct gpu_memory **out, struct session *session, pid_t pid,
		     bool stop_on_load);
/* After session__start(): probes the CUDA libraries the processes of the
 * session map now and their dynamic loaders, to probe those mapped later
 * (by them or by processes that join the target set).  record reads nothing
 * before this (the command has not started); attach asks NVML, where it is
 * installed, what the process held already ("[before attach]"). */
int gpu_memory__attach(struct gpu_memory *memory, bool attach_mode);
/* Before session__finish(): no more calls are recorded. */
void gpu_memory__detach(struct gpu_memory *memory);
/* After session__finish(): the accounting, with the stacks resolved into
 * the finished CPU profile's frames.  0 or -errno. */
int gpu_memory__finish(struct gpu_memory *memory, struct session *session,
		       const struct profile *cpu_profile);
/* A new profile of the view, in bytes (UNIT_BYTES).  0 or -errno. */
int gpu_memory__profile(const struct gpu_memory *memory, enum gpu_memory_view view,
			struct profile **out);
/* The stderr summary: peak per device and when, the top stacks at the peak,
 * allocation rate, leaks, failed calls with their stacks. */
void gpu_memory__print_summary(const struct gpu_memory *memory);
void gpu_memory__close(struct gpu_memory *memory);

/* "64.0 MiB", "512 B": sizes as leaves and summaries show them. */
void gpu_memory__format_bytes(char *buf, size_t size, uint64_t bytes);
/* "memory-peak" etc.; 0 or -EINVAL. */
int gpu_memory__parse_view(const char *text, enum gpu_memory_view *view);

#endif /* LLMPROF_GPU_MEMORY_H */
