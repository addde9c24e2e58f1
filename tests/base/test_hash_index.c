// SPDX-License-Identifier: GPL-2.0
/*
 * lib/base/hash_index.c: a hash index and a u64 map grown to a million
 * entries, with keys that collide in their low bits, checked against the
 * arrays that hold every key.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/hash_index.h"
#include "check.h"

#define NR_KEYS 1000000

struct keys {
	uint64_t *keys;
	uint32_t nr;
};

/* Keys that share their low 20 bits: the hash must spread them. */
static uint64_t key_of(uint32_t i)
{
	return (uint64_t)i << 20 | 0xabcde;
}

static uint64_t hash_key(uint64_t key)
{
	return hash__mix64(key);
}

static uint64_t rehash(const void *ctx, uint32_t id)
{
	return hash_key(((const struct keys *)ctx)->keys[id]);
}

/* The id of key, added when new. */
static int64_t intern(struct hash_index *index, struct keys *k, uint64_t key)
{
	size_t pos;

	if (hash_index__reserve(index, 16, rehash, k))
		return -1;
	for (pos = hash_index__first(index, hash_key(key)); !hash_index__empty(index, pos);
	     pos = hash_index__next(index, pos))
		if (k->keys[hash_index__id(index, pos)] == key)
			return hash_index__id(index, pos);
	k->keys[k->nr] = key;
	hash_index__set(index, pos, k->nr);
	return k->nr++;
}

static void test_hash_index(void)
{
	struct keys k = {.keys = malloc(NR_KEYS * sizeof(uint64_t))};
	struct hash_index index = {0};
	int64_t id;

	for (uint32_t i = 0; i < NR_KEYS; i++) {
		id = intern(&index, &k, key_of(i));
		if (id != i) {
			CHECK(0, "key %u got id %lld", i, (long long)id);
			break;
		}
	}
	CHECK(k.nr == NR_KEYS && index.used == NR_KEYS, "%u keys, %zu used", k.nr, index.used);
	CHECK(index.cap >= 2 * NR_KEYS && index.cap <= 4 * NR_KEYS, "cap %zu", index.cap);
	/* Every key again, backwards: the same ids, nothing added. */
	for (uint32_t i = NR_KEYS; i-- > 0;) {
		id = intern(&index, &k, key_of(i));
		if (id != i) {
			CHECK(0, "key %u found as %lld", i, (long long)id);
			break;
		}
	}
	CHECK(k.nr == NR_KEYS, "lookups added keys: %u", k.nr);
	hash_index__free(&index);
	hash_index__free(&index);
	free(k.keys);
}

static void test_u64_map(void)
{
	struct u64_map map = {0};
	uint64_t value = 0;
	bool ok = true;

	CHECK(!u64_map__get(&map, 0, &value), "empty map has 0");
	for (uint32_t i = 0; i < NR_KEYS && ok; i++)
		ok = !u64_map__put(&map, key_of(i), i * 3ULL);
	/* Key 0 and the largest key are ordinary keys. */
	ok = ok && !u64_map__put(&map, 0, 42) && !u64_map__put(&map, UINT64_MAX, 43);
	CHECK(ok && map.used == NR_KEYS + 2, "put: %zu used", map.used);
	for (uint32_t i = 0; i < NR_KEYS; i++) {
		if (!u64_map__get(&map, key_of(i), &value) || value != i * 3ULL) {
			CHECK(0, "key %u: %llu", i, (unsigned long long)value);
			break;
		}
	}
	CHECK(u64_map__get(&map, 0, &value) && value == 42, "key 0");
	CHECK(u64_map__get(&map, UINT64_MAX, &value) && value == 43, "largest key");
	CHECK(!u64_map__get(&map, key_of(NR_KEYS), &value), "absent key found");
	CHECK(!u64_map__get(&map, 1, &value), "absent key 1 found");
	/* Setting again replaces. */
	CHECK(!u64_map__put(&map, key_of(7), 1) && u64_map__get(&map, key_of(7), &value) &&
		  value == 1 && map.used == NR_KEYS + 2,
	      "replace");
	u64_map__free(&map);
	CHECK(!u64_map__get(&map, 0, &value), "freed map has 0");
}

static void test_fnv1a(void)
{
	/* The published FNV-1a 64-bit test vectors. */
	CHECK(hash__fnv1a(HASH_FNV1A_START, "", 0) == 0xcbf29ce484222325ULL, "empty");
	CHECK(hash__fnv1a(HASH_FNV1A_START, "a", 1) == 0xaf63dc4c8601ec8cULL, "a");
	CHECK(hash__fnv1a(HASH_FNV1A_START, "foobar", 6) == 0x85944171f73967e8ULL, "foobar");
}

int main(void)
{
	test_hash_index();
	test_u64_map();
	test_fnv1a();
	if (failures)
		return 1;
	printf("hash_index: all checks passed\n");
	return 0;
}
