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

/* A stack and a window of its functions' ranks + 1 packed high to low (0
 * past its end), which order as compare_stacks() does: stacks are sorted
 * a window at a time, most significant first, as strings are by radix. */
struct stack_key {
	uint64_t key;
	uint32_t stack;
};

struct key_sort {
	const struct function_rank *ranks;
	unsigned int bits, per_key; /* per rank, ranks per key */
	struct stack_key *other;    /* as long as the keys */
};

static int compare_keys(const void *a, const void *b, void *context)
{
	const struct stack_key *x = a, *y = b;

	if (x->key != y->key)
		return x->key < y->key ? -1 : 1;
	return compare_stacks(&x->stack, &y->stack, context);
}

/* keys by key a byte at a time, least significant first, a pass per byte
 * in which they differ; other as long as keys. */
static void radix_sort(struct stack_key *keys, size_t nr, uint64_t differ, struct stack_key *other)
{
	struct stack_key *from = keys, *to = other;

	for (unsigned int shift = 0; shift < 64; shift += 8) {
		size_t count[257] = {0};

		if (!(differ >> shift & 0xff))
			continue;
		for (size_t i = 0; i < nr; i++)
			count[(from[i].key >> shift & 0xff) + 1]++;
		for (size_t b = 1; b < 257; b++)
			count[b] += count[b - 1];
		for (size_t i = 0; i < nr; i++)
			to[count[from[i].key >> shift & 0xff]++] = from[i];
		to = from;
		from = from == keys ? other : keys;
	}
	if (from != keys)
		memcpy(keys, from, nr * sizeof(*keys));
}

/* keys[0, nr) by their window from frame first on, then each run of equal
 * keys by the next window, or by compare_stacks() where the run is short
 * or its stacks ended (equal functions: by id). */
static void sort_window(const struct key_sort *k, struct stack_key *keys, size_t nr, uint32_t first)
{
	uint64_t differ = 0;

	for (size_t i = 0; i < nr; i++) {
		const struct stack *s = &k->ranks->profile->stacks[keys[i].stack];
		uint64_t key = 0;

		for (uint32_t d = first; d < first + k->per_key; d++)
			key = key << k->bits |
			      (d < s->depth ? k->ranks->rank[s->frames[d]] + 1ULL : 0);
		keys[i].key = key;
		differ |= key ^ keys[0].key;
	}
	radix_sort(keys, nr, differ, k->other);
	for (size_t start = 0, end; start < nr; start = end) {
		for (end = start + 1; end < nr && keys[end].key == keys[start].key; end++)
			;
		if (end - start < 2)
			continue;
		if (end - start < 16 || !(keys[start].key & ((1ULL << k->bits) - 1)))
			qsort_r(keys + start, end - start, sizeof(*keys), compare_keys,
				(void *)k->ranks);
		else
			sort_window(k, keys + start, end - start, first + k->per_key);
	}
}

void function_rank__sort_stacks(const struct function_rank *ranks, uint32_t *stacks, size_t nr)
{
	struct stack_key *keys = malloc(nr * sizeof(*keys));
	struct key_sort k = {.ranks = ranks, .bits = 1};

	k.other = malloc(nr * sizeof(*k.other));
	if (!keys || !k.other) {
		free(keys);
		free(k.other);
		qsort_r(stacks, nr, sizeof(*stacks), compare_stacks, (void *)ranks);
		return;
	}
	while (k.bits < 32 && (1ULL << k.bits) <= ranks->nr_functions)
		k.bits++;
	k.per_key = 64 / k.bits;
	for (size_t i = 0; i < nr; i++)
		keys[i].stack = stacks[i];
	sort_window(&k, keys, nr, 0);
	for (size_t i = 0; i < nr; i++)
		stacks[i] = keys[i].stack;
	free(keys);
	free(k.other);
}
