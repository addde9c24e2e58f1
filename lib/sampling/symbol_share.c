// SPDX-License-Identifier: GPL-2.0
/* Frames resolved once for all of a profile's processes; see symbol_share.h. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "array.h"
#include "base/hash_index.h"
#include "sampling/symbol_share.h"

/* A file's address and its frames' run in the pool: first << 32 | count. */
struct shared_address {
	struct file_address address;
	uint64_t run;
};

struct symbol_share {
	const struct profile *profile; /* the frame ids are its: the first seen */
	struct u64_map index;	       /* hash of the address -> entry */
	struct shared_address *entries;
	size_t nr, cap;
	uint32_t *pool;
	size_t nr_pool, cap_pool;
	size_t reused; /* lookups answered from it */
};

int symbol_share__new(struct symbol_share **out)
{
	*out = calloc(1, sizeof(**out));
	return *out ? 0 : -ENOMEM;
}

void symbol_share__free(struct symbol_share *share)
{
	if (!share)
		return;
	u64_map__free(&share->index);
	free(share->entries);
	free(share->pool);
	free(share);
}

bool symbol_share__serves(const struct symbol_share *share, const struct profile *profile)
{
	return share && (!share->profile || share->profile == profile);
}

static uint64_t hash_of(const struct file_address *a)
{
	uint64_t h = (a->dev * 0x9e3779b97f4a7c15ull) ^ (a->inode * 0xc2b2ae3d27d4eb4full) ^
		     (a->offset * 0xff51afd7ed558ccdull);

	return h ^ (h >> 31);
}

const uint32_t *symbol_share__find(struct symbol_share *share, const struct file_address *a,
				   size_t *n)
{
	const struct shared_address *e;
	uint64_t at;

	if (!u64_map__get(&share->index, hash_of(a), &at) || at >= share->nr)
		return NULL;
	/* A hash that two addresses share keeps the first: the other is
	 * resolved each time, never given the wrong frames. */
	e = &share->entries[at];
	if (e->address.dev != a->dev || e->address.inode != a->inode ||
	    e->address.offset != a->offset)
		return NULL;
	share->reused++;
	*n = (uint32_t)e->run;
	return share->pool + (e->run >> 32);
}

int symbol_share__add(struct symbol_share *share, const struct profile *profile,
		      const struct file_address *a, const uint32_t *frames, size_t n)
{
	uint64_t hash = hash_of(a), at;

	if (u64_map__get(&share->index, hash, &at))
		return 0;
	if (array__grow((void **)&share->entries, &share->cap, share->nr + 1,
			sizeof(*share->entries)) ||
	    array__grow((void **)&share->pool, &share->cap_pool, share->nr_pool + n,
			sizeof(*share->pool)) ||
	    u64_map__put(&share->index, hash, share->nr))
		return -ENOMEM;
	share->profile = profile;
	share->entries[share->nr++] =
	    (struct shared_address){*a, (uint64_t)share->nr_pool << 32 | n};
	memcpy(share->pool + share->nr_pool, frames, n * sizeof(*frames));
	share->nr_pool += n;
	return 0;
}

void symbol_share__counts(const struct symbol_share *share, size_t *resolved, size_t *reused)
{
	*resolved = share ? share->nr : 0;
	*reused = share ? share->reused : 0;
}
