/* SPDX-License-Identifier: GPL-2.0 */
/*
 * A profile's frames as functions, ranked by folded name, and its stacks
 * sorted by those ranks: the order in which the flame graph writers (SVG
 * and the HTML page's) merge stacks in one pass, so that every frame's
 * children come in name order.  Frames differing only by line are one
 * function.
 */
#ifndef LLMPROF_FUNCTION_RANK_H
#define LLMPROF_FUNCTION_RANK_H

#include <stddef.h>
#include <stdint.h>

#include "profile/profile.h"

struct function_rank {
	const struct profile *profile;
	char **keys;	       /* per frame: its folded name, the function's identity */
	uint32_t *rank;	       /* per frame: its function, ranked by folded name */
	uint32_t *first_frame; /* per function: its first frame */
	uint32_t nr_functions;
};

/* Ranks the profile's frames.  0 or -ENOMEM; on failure, *ranks holds
 * nothing to free. */
int function_rank__init(struct function_rank *ranks, const struct profile *profile);
void function_rank__free(struct function_rank *ranks);

/* Sorts stack ids by their frames' functions, root first, a stack before
 * the longer ones it begins; equal stacks by id. */
void function_rank__sort_stacks(const struct function_rank *ranks, uint32_t *stacks, size_t nr);

#endif
