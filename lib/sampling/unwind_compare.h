/* SPDX-License-Identifier: GPL-2.0 */
/*
 * --unwind compare: each sample's user stack as the BPF unwinder walked it,
 * checked against the one libdw unwinds from a copy of the same stack
 * taken in the same sample, the reference.  Counts how often they agree
 * and shows the first stacks that do not, by module and offset, for
 * addr2line.
 */
#ifndef LLMPROF_UNWIND_COMPARE_H
#define LLMPROF_UNWIND_COMPARE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct symbolizer;

struct unwind_compare {
	uint64_t samples;
	uint64_t same;	    /* every frame alike */
	uint64_t deeper;    /* alike as far as the copy reached; BPF went on */
	uint64_t shorter;   /* alike as far as BPF went; the copy's unwind went on */
	uint64_t differ;    /* a frame differs */
	uint64_t no_copy;   /* the copy could not be read or unwound */
	unsigned int shown; /* differences written with -v */
};

/* One sample: BPF's frames (bpf_whole: the walk reached the outermost
 * frame) and the reference's (ref_complete: its unwind reached the
 * outermost frame; otherwise the copy ran out or the unwind stopped). */
void unwind_compare__sample(struct unwind_compare *c, const struct symbolizer *symbolizer,
			    const uint64_t *bpf, size_t nr_bpf, const uint64_t *ref, size_t nr_ref,
			    bool ref_complete);
/* The counts as one debug line (-v). */
void unwind_compare__report(const struct unwind_compare *c);

#endif /* LLMPROF_UNWIND_COMPARE_H */
