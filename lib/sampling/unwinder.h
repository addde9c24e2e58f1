/* SPDX-License-Identifier: GPL-2.0 */
/*
 * User stacks from a copy of the stack: the registers and the top of the
 * user stack that the BPF sampler copied are unwound with each binary's CFI
 * (.eh_frame, .debug_frame) through libdwfl, over the symbolizer's modules,
 * and completed from the frame-pointer chain where the copy runs out.
 */
#ifndef LLMPROF_UNWINDER_H
#define LLMPROF_UNWINDER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include <linux/types.h>

#include "unwind.h"

struct symbolizer;
struct unwinder;

/* Counts over a session, for -v and the benchmark. */
struct unwind_stats {
	uint64_t samples;	  /* samples that carried a stack copy */
	uint64_t copy_failed;	  /* the copy could not be read: frame pointers only */
	uint64_t complete;	  /* the CFI reached the outermost frame */
	uint64_t completed_by_fp; /* ended early, completed from the frame-pointer chain */
	uint64_t truncated;	  /* ended early with nothing to complete it */
	uint64_t frames;	  /* user frames produced */
	uint64_t copy_bytes;	  /* stack bytes the kernel copied */
	uint64_t record_bytes;	  /* ring-buffer bytes the samples took */
	uint64_t ns;		  /* CPU time spent unwinding */
};

/*
 * complete_with_fp: where the CFI stops early (the copy is exhausted, a
 * frame cannot be unwound), continue with the frame-pointer chain that
 * bpf_get_stack() walked (--unwind auto); false keeps the CFI's stack only
 * (--unwind dwarf).  0 or -errno.
 */
int unwinder__new(struct symbolizer *symbolizer, pid_t pid, bool complete_with_fp,
		  struct unwinder **out);
void unwinder__free(struct unwinder *unwinder);

/* unwinder__unwind(): the stack ran into code that no known module covers;
 * refreshing the modules and unwinding again may get further. */
#define UNWIND_STALE 1

/*
 * Unwinds one sample of thread tid.  On entry addrs[0..*nr) is the
 * frame-pointer chain (leaf first, as bpf_get_stack() gives it); on return
 * it is the unwound user stack, leaf first, at most max addresses.  Every
 * address but the first is a return address.  0, UNWIND_STALE or -errno.
 */
int unwinder__unwind(struct unwinder *unwinder, uint32_t tid, const struct user_stack_copy *copy,
		     size_t copy_bytes, uint64_t *addrs, uint16_t *nr, size_t max);

/* Whether the last unwinder__unwind() reached the outermost frame by CFI. */
bool unwinder__last_complete(const struct unwinder *unwinder);
const struct unwind_stats *unwinder__stats(const struct unwinder *unwinder);
/* The stats as one debug line (-v). */
void unwinder__report(const struct unwinder *unwinder);

#endif /* LLMPROF_UNWINDER_H */
