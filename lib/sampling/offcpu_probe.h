/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The off-CPU probe family (bpf/offcpu.bpf.c): where the target's threads
 * wait and for how long.  It shares the session's ring buffer, counters and
 * target set, so its records arrive and unwind as CPU samples do.
 */
#ifndef LLMPROF_OFFCPU_PROBE_H
#define LLMPROF_OFFCPU_PROBE_H

#include <stddef.h>
#include <stdint.h>

struct session;
struct offcpu;

/* Loads the program into the session's maps; attaches nothing.  Blocks
 * shorter than min_block_ns are counted but get no record; with
 * wait_period_ns, a wait shorter than that gets one with a probability of
 * its length over it, weighing wait_period_ns (wall mode).  0 or -errno. */
int offcpu__open(struct offcpu **out, const struct session *session, uint64_t min_block_ns,
		 uint64_t wait_period_ns);
int offcpu__attach(struct offcpu *offcpu);
void offcpu__detach(struct offcpu *offcpu);
/*
 * After offcpu__detach(): hands emit() a record for every thread still off
 * the CPU whose stacks are known, as if it ran again at end_ns (detail
 * OFFCPU_DETAIL_OPEN set).  0 or the first error emit() returns.
 */
int offcpu__flush(struct offcpu *offcpu, uint64_t end_ns,
		  int (*emit)(void *ctx, void *data, size_t size), void *ctx);
void offcpu__close(struct offcpu *offcpu);

/*
 * Why a thread was off the CPU, for its "[off-cpu] REASON" leaf: from the
 * names of the kernel frames it blocked in (leaf first, may be empty), the
 * syscall it was in (-1 if none) and its state (0: runnable, so preempted).
 */
const char *offcpu__reason(const char *const *kernel_frames, size_t nr_frames, int64_t syscall,
			   uint64_t state);

#endif /* LLMPROF_OFFCPU_PROBE_H */
