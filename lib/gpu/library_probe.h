/* SPDX-License-Identifier: GPL-2.0 */
/*
 * What the probe families on a CUDA-stack library share (GPU memory on
 * libcuda/libcudart, NCCL on libnccl): finding the functions to probe in the
 * library's ELF file, removing many uprobes at once, and the short form of
 * a call's stack the summaries print.
 */
#ifndef LLMPROF_LIBRARY_PROBE_H
#define LLMPROF_LIBRARY_PROBE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "profile/profile.h"

struct bpf_link;

/*
 * The file offset of the functions a library defines, for uprobes: for each
 * defined function symbol (.dynsym, and .symtab unless dynsym_only),
 * index_of() says which of the caller's functions it is (or -1); the first
 * offset found for each index goes into offsets[index], which the caller
 * zeroed.  0 when any was found, -ENOENT when none, or -errno.
 */
int library_probe__function_offsets(const char *path, bool dynsym_only,
				    int (*index_of)(const char *name, void *ctx), void *ctx,
				    size_t *offsets);

/* Destroys the links; removing a uprobe waits for a grace period (some
 * 70 ms), so they go in parallel: ending a profile takes one, not one per
 * probe. */
void library_probe__destroy_links(struct bpf_link **links, size_t nr);

/*
 * Multi-uprobe links (BPF_TRACE_UPROBE_MULTI, Linux 6.6): every function of a
 * library on one link, for every process, removed with one grace period
 * where a uprobe through perf events takes one each, one after the other
 * (some 50 ms: seconds for a few dozen).  The program must have been loaded
 * with that attach type (library_probe__multi_supported() says whether the
 * kernel has it).  pid: the process filtered to in the kernel, or 0 for
 * every process that maps the file.  A link's descriptor, or -errno; close()
 * removes it.
 */
#define LIBRARY_PROBE_UPROBE_MULTI 48 /* enum bpf_attach_type */
bool library_probe__multi_supported(void);
int library_probe__attach_multi(int prog_fd, const char *path, const size_t *offsets,
				const uint64_t *cookies, uint32_t count, bool retprobe, pid_t pid);
/* Closes link descriptors in parallel. */
void library_probe__close_links(const int *fds, size_t nr);

/* "load_weights < main": the innermost frames (at most
 * LIBRARY_PROBE_STACK_FRAMES) of a stack of frame ids in profile, root
 * first, up to its process or thread frame; "[no stack]" when none. */
#define LIBRARY_PROBE_STACK_FRAMES 4
void library_probe__describe_stack(const struct profile *profile, const uint32_t *frames,
				   size_t nr_frames, char *buf, size_t size);

#endif /* LLMPROF_LIBRARY_PROBE_H */
