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

static uint64_t hash_of(const struct file_address *a)
{
	uint64_t h = (a->dev * 0x9e3779b97f4a7c15ull) ^ (a->inode * 0xc2b2ae3d27d4eb4full) ^
		     (a->offset * 0xff51afd7ed558ccdull);

	return h ^ (h >> 31);
}

/* The file's store, once opened (NULL where it has none or is not open). */
static struct file_store *find_store(struct symbol_share *share, const struct file_address *a)
{
	for (size_t i = 0; i < share->nr_stores; i++)
		if (share->stores[i].dev == a->dev && share->stores[i].inode == a->inode)
			return &share->stores[i];
	return NULL;
}

/* The store of a's file, opened at its first address (its key read from
 * fd); NULL where there is none. */
static struct symbol_store *store_of(struct symbol_share *share, const struct file_address *a,
				     int fd)
{
	struct file_store *known = find_store(share, a);
	struct unwind_cache_key key;
	struct symbol_store *store = NULL;
	char dir[4096];

	if (known)
		return known->store;
	if (!share->cache_tried) {
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

/* Keeps a's n frames (root first) in the share; their run in the pool. */
static int add_entry(struct symbol_share *share, const struct profile *profile,
		     const struct file_address *a, const uint32_t *frames, size_t n,
		     const uint32_t **run)
{
	uint64_t hash = hash_of(a), at;

	*run = NULL;
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
	*run = share->pool + share->nr_pool;
	share->nr_pool += n;
	return 0;
}

/* a's frames as an earlier run stored them, interned into profile and
 * kept in the share; NULL where none are stored. */
static const uint32_t *find_in_store(struct symbol_share *share, struct profile *profile,
				     const struct file_address *a, int fd, size_t *n)
{
	struct symbol_cache_frame stored[SYMBOL_SHARE_MAX_FRAMES];
	uint32_t frames[SYMBOL_SHARE_MAX_FRAMES];
	struct symbol_store *store = store_of(share, a, fd);
	const uint32_t *run;
	size_t nr;

	nr = store ? symbol_store__lookup(store, a->offset, stored, SYMBOL_SHARE_MAX_FRAMES) : 0;
	if (!nr)
		return NULL;
	/* Stored leaf first; the stack wants them root first. */
	for (size_t i = 0; i < nr; i++) {
		int64_t id = profile__intern_frame(profile, stored[i].name, stored[i].file,
						   stored[i].line, stored[i].kind);

		if (id < 0)
			return NULL;
		frames[nr - 1 - i] = id;
	}
	if (add_entry(share, profile, a, frames, nr, &run) || !run)
		return NULL;
	share->from_cache++;
	*n = nr;
	return run;
}

const uint32_t *symbol_share__find(struct symbol_share *share, struct profile *profile,
				   const struct file_address *a, int fd, size_t *n)
{
	const struct shared_address *e;
	uint64_t at;

	if (!u64_map__get(&share->index, hash_of(a), &at) || at >= share->nr)
		return share->cache_wanted ? find_in_store(share, profile, a, fd, n) : NULL;
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

/* Keeps a's frames (root first, ids of profile) in its file's store. */
static int keep_in_store(struct symbol_share *share, const struct profile *profile,
			 const struct file_address *a, const uint32_t *frames, size_t n)
{
	struct symbol_cache_frame leaf_first[SYMBOL_SHARE_MAX_FRAMES];
	struct file_store *known = find_store(share, a);

	if (!known || !known->store || n > SYMBOL_SHARE_MAX_FRAMES)
		return 0;
	for (size_t i = 0; i < n; i++) {
		const struct frame *f = &profile->frames[frames[n - 1 - i]];

		leaf_first[i] =
		    (struct symbol_cache_frame){f->name, f->file, f->line, (uint32_t)f->kind};
	}
	return symbol_store__add(known->store, a->offset, leaf_first, n);
}

int symbol_share__add(struct symbol_share *share, const struct profile *profile,
		      const struct file_address *a, const uint32_t *frames, size_t n)
{
	const uint32_t *run;
	int err = add_entry(share, profile, a, frames, n, &run);

	if (err || !run || !share->cache_wanted)
		return err;
	return keep_in_store(share, profile, a, frames, n);
}

void symbol_share__counts(const struct symbol_share *share, size_t *resolved, size_t *reused,
			  size_t *from_cache)
{
	*resolved = share ? share->nr : 0;
	*reused = share ? share->reused : 0;
	if (from_cache)
		*from_cache = share ? share->from_cache : 0;
}
