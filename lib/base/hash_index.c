// SPDX-License-Identifier: GPL-2.0
/* Open-addressing hash tables: ids by key, and u64 to u64 (see hash_index.h). */
#include <errno.h>
#include <stdlib.h>

#include "base/hash_index.h"

int hash_index__grow(struct hash_index *index, size_t min_cap, hash_index_rehash_fn rehash,
		     const void *ctx)
{
	size_t cap = index->cap ? index->cap * 2 : min_cap;
	uint32_t *slots;

	while ((index->used + 1) * 2 > cap)
		cap *= 2;
	slots = calloc(cap, sizeof(*slots));
	if (!slots)
		return -ENOMEM;
	for (size_t i = 0; i < index->cap; i++) {
		uint32_t v = index->slots[i];
		size_t pos;

		if (!v)
			continue;
		pos = rehash(ctx, v - 1) & (cap - 1);
		while (slots[pos])
			pos = (pos + 1) & (cap - 1);
		slots[pos] = v;
	}
	free(index->slots);
	index->slots = slots;
	index->cap = cap;
	return 0;
}

void hash_index__free(struct hash_index *index)
{
	free(index->slots);
	index->slots = NULL;
	index->cap = index->used = 0;
}

static size_t u64_map__find(const struct u64_map *map, uint64_t key)
{
	size_t pos = hash__mix64(key) & (map->cap - 1);

	while (map->filled[pos] && map->keys[pos] != key)
		pos = (pos + 1) & (map->cap - 1);
	return pos;
}

static int u64_map__grow(struct u64_map *map)
{
	struct u64_map bigger = {.cap = map->cap ? map->cap * 2 : 1024};

	bigger.keys = malloc(bigger.cap * sizeof(*bigger.keys));
	bigger.values = malloc(bigger.cap * sizeof(*bigger.values));
	bigger.filled = calloc(bigger.cap, sizeof(*bigger.filled));
	if (!bigger.keys || !bigger.values || !bigger.filled) {
		u64_map__free(&bigger);
		return -ENOMEM;
	}
	for (size_t i = 0; i < map->cap; i++) {
		size_t pos;

		if (!map->filled[i])
			continue;
		pos = u64_map__find(&bigger, map->keys[i]);
		bigger.keys[pos] = map->keys[i];
		bigger.values[pos] = map->values[i];
		bigger.filled[pos] = 1;
	}
	bigger.used = map->used;
	u64_map__free(map);
	*map = bigger;
	return 0;
}

int u64_map__put(struct u64_map *map, uint64_t key, uint64_t value)
{
	size_t pos;

	if ((map->used + 1) * 2 > map->cap && u64_map__grow(map))
		return -ENOMEM;
	pos = u64_map__find(map, key);
	if (!map->filled[pos]) {
		map->keys[pos] = key;
		map->filled[pos] = 1;
		map->used++;
	}
	map->values[pos] = value;
	return 0;
}

bool u64_map__get(const struct u64_map *map, uint64_t key, uint64_t *value)
{
	size_t pos;

	if (!map->cap)
		return false;
	pos = u64_map__find(map, key);
	if (!map->filled[pos])
		return false;
	*value = map->values[pos];
	return true;
}

void u64_map__free(struct u64_map *map)
{
	free(map->keys);
	free(map->values);
	free(map->filled);
	*map = (struct u64_map){0};
}
