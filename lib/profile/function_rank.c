// SPDX-License-Identifier: GPL-2.0
/*
 * A profile's frames ranked as functions by folded name, and its stacks
 * sorted by those ranks, for the flame graph writers' one-pass merge.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "profile/function_rank.h"

static int compare_frame_keys(const void *a, const void *b, void *context)
{
	char **keys = context;
	uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;
	int c = strcmp(keys[x], keys[y]);

	return c ? c : (x < y ? -1 : x > y);
}

int function_rank__init(struct function_rank *ranks, const struct profile *profile)
{
	size_t n = profile->nr_frames ? profile->nr_frames : 1;
	uint32_t *sorted = malloc(n * sizeof(*sorted));

	*ranks = (struct function_rank){.profile = profile};
	ranks->keys = calloc(n, sizeof(*ranks->keys));
	ranks->rank = calloc(n, sizeof(*ranks->rank));
	ranks->first_frame = calloc(n, sizeof(*ranks->first_frame));
	if (!sorted || !ranks->keys || !ranks->rank || !ranks->first_frame)
		goto fail;
	for (size_t i = 0; i < profile->nr_frames; i++) {
		ranks->keys[i] = frame__folded_name(&profile->frames[i]);
		if (!ranks->keys[i])
			goto fail;
		sorted[i] = i;
	}
	qsort_r(sorted, profile->nr_frames, sizeof(*sorted), compare_frame_keys, ranks->keys);
	for (size_t i = 0; i < profile->nr_frames; i++) {
		if (!i || strcmp(ranks->keys[sorted[i]], ranks->keys[sorted[i - 1]]))
			ranks->first_frame[ranks->nr_functions++] = sorted[i];
		ranks->rank[sorted[i]] = ranks->nr_functions - 1;
	}
	free(sorted);
	return 0;
fail:
	free(sorted);
	function_rank__free(ranks);
	return -ENOMEM;
}

void function_rank__free(struct function_rank *ranks)
{
	if (ranks->keys)
		for (size_t i = 0; i < ranks->profile->nr_frames; i++)
			free(ranks->keys[i]);
	free(ranks->keys);
	free(ranks->rank);
	free(ranks->first_frame);
	*ranks = (struct function_rank){0};
}

static int compare_stacks(const void *a, const void *b, void *context)
{
	const struct function_rank *ranks = context;
	const struct stack *x = &ranks->profile->stacks[*(const uint32_t *)a];
	const struct stack *y = &ranks->profile->stacks[*(const uint32_t *)b];
	uint32_t depth = x->depth < y->depth ? x->depth : y->depth;

	for (uint32_t d = 0; d < depth; d++) {
		uint32_t fx = ranks->rank[x->frames[d]], fy = ranks->rank[y->frames[d]];

		if (fx != fy)
			return fx < fy ? -1 : 1;
	}
	if (x->depth != y->depth)
		return x->depth < y->depth ? -1 : 1;
	return *(const uint32_t *)a < *(const uint32_t *)b ? -1 : 1;
}

void function_rank__sort_stacks(const struct function_rank *ranks, uint32_t *stacks, size_t nr)
{
	qsort_r(stacks, nr, sizeof(*stacks), compare_stacks, (void *)ranks);
}
