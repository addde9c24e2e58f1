/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The hash tables of llmprof, open addressing with linear probing at most
 * half full:
 *
 * - struct hash_index maps keys to dense ids 0, 1, ... whose keys live in
 *   the caller's own arrays (frames, stacks, strings, code objects): a slot
 *   is a 32-bit id, and the caller compares keys itself, inline, so the hot
 *   lookups cost what a hand-written table costs.  The table rehashes an id
 *   through the caller's callback when it grows.
 * - struct u64_map maps 64-bit keys to 64-bit values stored in the table.
 *
 * Lookups in a hash index go:
 *
 *	if (hash_index__reserve(index, MIN, rehash, ctx))
 *		return -ENOMEM;
 *	for (pos = hash_index__first(index, h); !hash_index__empty(index, pos);
 *	     pos = hash_index__next(index, pos))
 *		if (key of hash_index__id(index, pos) equals the key)
 *			return hash_index__id(index, pos);
 *	hash_index__set(index, pos, new_id);
 */
#ifndef LLMPROF_BASE_HASH_INDEX_H
#define LLMPROF_BASE_HASH_INDEX_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct hash_index {
	uint32_t *slots; /* id + 1; 0 is empty */
	size_t cap;	 /* a power of two, or 0 before the first id */
	size_t used;
};

/* The hash of the key of id, to place it again when the table grows. */
typedef uint64_t (*hash_index_rehash_fn)(const void *ctx, uint32_t id);

/* Makes room for one more id: doubles the table (to min_cap at first) when
 * it would be more than half full.  0 or -ENOMEM. */
int hash_index__grow(struct hash_index *index, size_t min_cap, hash_index_rehash_fn rehash,
		     const void *ctx);

static inline int hash_index__reserve(struct hash_index *index, size_t min_cap,
				      hash_index_rehash_fn rehash, const void *ctx)
{
	if ((index->used + 1) * 2 <= index->cap)
		return 0;
	return hash_index__grow(index, min_cap, rehash, ctx);
}

/* Only after a reserve, or on a table with cap > 0. */
static inline size_t hash_index__first(const struct hash_index *index, uint64_t hash)
{
	return hash & (index->cap - 1);
}

static inline size_t hash_index__next(const struct hash_index *index, size_t pos)
{
	return (pos + 1) & (index->cap - 1);
}

static inline bool hash_index__empty(const struct hash_index *index, size_t pos)
{
	return !index->slots[pos];
}

static inline uint32_t hash_index__id(const struct hash_index *index, size_t pos)
{
	return index->slots[pos] - 1;
}

/* Puts id into the empty slot pos that a lookup ended at. */
static inline void hash_index__set(struct hash_index *index, size_t pos, uint32_t id)
{
	index->slots[pos] = id + 1;
	index->used++;
}

void hash_index__free(struct hash_index *index);

/* 64-bit keys to 64-bit values. */
struct u64_map {
	uint64_t *keys;
	uint64_t *values;
	uint8_t *filled;
	size_t cap, used; /* cap a power of two, or 0 */
};

/* Sets key's value: 0 or -ENOMEM. */
int u64_map__put(struct u64_map *map, uint64_t key, uint64_t value);
/* Whether key is there; its value in *value. */
bool u64_map__get(const struct u64_map *map, uint64_t key, uint64_t *value);
void u64_map__free(struct u64_map *map);

/* Hashes.  FNV-1a over bytes, continuing from h (HASH_FNV1A_START at
 * first); a 64-bit finalizer (MurmurHash3's) for integer keys. */
#define HASH_FNV1A_START 0xcbf29ce484222325ULL
#define HASH_FNV1A_PRIME 0x100000001b3ULL

static inline uint64_t hash__fnv1a(uint64_t h, const void *data, size_t len)
{
	const unsigned char *p = data;

	for (size_t i = 0; i < len; i++)
		h = (h ^ p[i]) * HASH_FNV1A_PRIME;
	return h;
}

static inline uint64_t hash__mix64(uint64_t x)
{
	x ^= x >> 33;
	x *= 0xff51afd7ed558ccdULL;
	x ^= x >> 33;
	return x;
}

#endif
