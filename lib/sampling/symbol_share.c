// SPDX-License-Identifier: GPL-2.0
/* Frames resolved once for all of a profile's processes; see symbol_share.h. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "array.h"
#include "base/hash_index.h"
#include "sampling/symbol_cache.h"
#include "sampling/symbol_share.h"
#include "status.h"

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
	/* The frames kept across runs (symbol_cache.h), a store per file. */
	bool cache_wanted, cache_tried;
	struct unwind_cache *cache;
	struct file_store *stores;
	size_t nr_stores, cap_stores;
	size_t from_cache; /* addresses named from the stores */
};

/* A file's store; NULL where it has no build-id, or none could be read. */
struct file_store {
	uint64_t dev, inode;
	struct symbol_store *store;
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
	for (size_t i = 0; i < share->nr_stores; i++) {
		int err = symbol_store__close(share->stores[i].store);

		if (err)
			status__debug("symbols cache: cannot write an entry: %s", strerror(-err));
	}
	free(share->stores);
	unwind_cache__close(share->cache);
	free(share);
}

void symbol_share__use_cache(struct symbol_share *share)
{
	if (share)
		share->cache_wanted = true;
}

bool symbol_share__serves(const struct symbol_share *share, const struct profile *profile)
{
	return share && (!share->profile || share->profile == profile);
}

static int keep_in_store(struct symbol_share *share, const struct profile *profile,
			 const struct file_address *a, const uint32_t *frames, size_t n);

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
	return share->cache_wanted ? keep_in_store(share, profile, a, frames, n) : 0;
}

void symbol_share__counts(const struct symbol_share *share, size_t *resolved, size_t *reused)
{
	*resolved = share ? share->nr : 0;
	*reused = share ? share->reused : 0;
}

size_t symbol_share__from_cache_count(const struct symbol_share *share)
{
	return share ? share->from_cache : 0;
}

/* The store of a's file, opened at its first address (its key read from
 * fd); NULL where there is none. */
static struct symbol_store *store_of(struct symbol_share *share, const struct file_address *a,
				     int fd)
{
	struct unwind_cache_key key;
	struct symbol_store *store = NULL;
	char dir[4096];

	for (size_t i = 0; i < share->nr_stores; i++)
		if (share->stores[i].dev == a->dev && share->stores[i].inode == a->inode)
			return share->stores[i].store;
	if (!share->cache_tried && share->cache_wanted) {
		share->cache_tried = true;
		if (!unwind_cache__default_dir(dir, sizeof(dir)))
			unwind_cache__open(dir, UNWIND_CACHE_MAX_BYTES, &share->cache);
	}
	if (share->cache && fd >= 0 && !unwind_cache__key(fd, &key))
		symbol_store__open(share->cache, &key, &store);
	if (array__grow((void **)&share->stores, &share->cap_stores, share->nr_stores + 1,
			sizeof(*share->stores))) {
		symbol_store__close(store);
		return NULL;
	}
	share->stores[share->nr_stores++] = (struct file_store){a->dev, a->inode, store};
	return store;
}

int symbol_share__from_cache(struct symbol_share *share, struct profile *profile,
			     const struct file_address *a, int fd, uint32_t *frames, size_t max)
{
	struct symbol_cache_frame stored[SYMBOL_SHARE_MAX_FRAMES];
	struct symbol_store *store;
	size_t n;
	int err;

	if (!share->cache_wanted || !symbol_share__serves(share, profile))
		return 0;
	store = store_of(share, a, fd);
	n = store ? symbol_store__lookup(store, a->offset, stored, SYMBOL_SHARE_MAX_FRAMES) : 0;
	if (!n || n > max)
		return 0;
	/* Stored leaf first; the stack wants them root first. */
	for (size_t i = 0; i < n; i++) {
		int64_t id = profile__intern_frame(profile, stored[i].name, stored[i].file,
						   stored[i].line, stored[i].kind);

		if (id < 0)
			return id;
		frames[n - 1 - i] = id;
	}
	err = symbol_share__add(share, profile, a, frames, n);
	if (err)
		return err;
	share->from_cache++;
	return n;
}

/* Keeps a's frames (root first, ids of profile) in its file's store. */
static int keep_in_store(struct symbol_share *share, const struct profile *profile,
			 const struct file_address *a, const uint32_t *frames, size_t n)
{
	struct symbol_cache_frame leaf_first[SYMBOL_SHARE_MAX_FRAMES];
	struct symbol_store *store = NULL;

	for (size_t i = 0; i < share->nr_stores && !store; i++)
		if (share->stores[i].dev == a->dev && share->stores[i].inode == a->inode)
			store = share->stores[i].store;
	if (!store || n > SYMBOL_SHARE_MAX_FRAMES)
		return 0;
	for (size_t i = 0; i < n; i++) {
		const struct frame *f = &profile->frames[frames[n - 1 - i]];

		leaf_first[i] =
		    (struct symbol_cache_frame){f->name, f->file, f->line, (uint32_t)f->kind};
	}
	return symbol_store__add(store, a->offset, leaf_first, n);
}
