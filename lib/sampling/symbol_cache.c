// SPDX-License-Identifier: GPL-2.0
/* The frames of a file's addresses kept across runs; see symbol_cache.h. */
#include <errno.h>
#include <inttypes.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/uio.h>

#include "array.h"
#include "base/hash_index.h"
#include "status.h"
#include "sampling/symbol_cache.h"

#define NO_FILE UINT32_MAX

/* An entry: this header, the addresses (sorted by offset), the frames,
 * the strings (each ends in NUL).  No padding: the layout is the file's. */
struct store_header {
	char magic[8];
	uint32_t format;
	uint32_t build_id_size;
	uint8_t build_id[UNWIND_CACHE_MAX_BUILD_ID];
	uint64_t file_size;
	uint64_t nr_addresses;
	uint64_t nr_frames;
	uint64_t pool_bytes;
	uint64_t checksum; /* of the header (this field 0) and all that follows */
};

struct stored_address {
	uint64_t offset;
	uint32_t first, nr; /* frames[first .. first + nr), leaf first */
};

struct stored_frame {
	uint32_t name, file; /* in the pool; file NO_FILE: none */
	uint32_t line, kind;
};

_Static_assert(sizeof(struct store_header) == 8 + 2 * 4 + UNWIND_CACHE_MAX_BUILD_ID + 5 * 8,
	       "the header has no padding");
_Static_assert(sizeof(struct stored_address) == 16 && sizeof(struct stored_frame) == 16,
	       "records have no padding");

static const char store_magic[8] = "LLMPSYMB";

struct symbol_store {
	struct unwind_cache *cache;
	struct unwind_cache_key key;
	/* What was read: the mapped entry, or all NULL. */
	void *mapping;
	size_t mapping_size;
	const struct stored_address *addresses;
	const struct stored_frame *frames;
	const char *pool;
	size_t nr_addresses, nr_frames, pool_bytes;
	/* What this run adds; string offsets in the new pool. */
	struct stored_address *added;
	size_t nr_added, cap_added;
	struct stored_frame *added_frames;
	size_t nr_added_frames, cap_added_frames;
	char *added_pool;
	size_t added_pool_bytes, cap_added_pool;
	struct u64_map strings; /* hash of a string -> its offset in added_pool */
	struct u64_map offsets; /* offsets added -> 1 */
};

#define FNV_OFFSET 0xcbf29ce484222325ULL
#define FNV_PRIME 0x100000001b3ULL

static uint64_t fnv(uint64_t h, const void *data, size_t n)
{
	const unsigned char *p = data;

	for (size_t i = 0; i < n; i++)
		h = (h ^ p[i]) * FNV_PRIME;
	return h;
}

int symbol_store__entry_name(const struct unwind_cache_key *key, char *buf, size_t size)
{
	size_t n = 0;
	int len;

	if (!key->build_id_size || key->build_id_size > UNWIND_CACHE_MAX_BUILD_ID ||
	    size < 2 * key->build_id_size + 1)
		return -ENAMETOOLONG;
	for (uint32_t i = 0; i < key->build_id_size; i++)
		n += snprintf(buf + n, size - n, "%02x", key->build_id[i]);
	len = snprintf(buf + n, size - n, "-%" PRIx64 "-s%d" UNWIND_CACHE_OTHER_SUFFIX,
		       key->file_size, SYMBOL_CACHE_FORMAT);
	return len < 0 || (size_t)len >= size - n ? -ENAMETOOLONG : 0;
}

static uint64_t entry_checksum(const struct store_header *h, const void *rest, size_t rest_size)
{
	struct store_header copy = *h;

	copy.checksum = 0;
	return fnv(fnv(FNV_OFFSET, &copy, sizeof(copy)), rest, rest_size);
}

/* What is wrong with the entry, or NULL. */
static const char *entry_problem(const void *data, size_t size, const struct unwind_cache_key *key)
{
	const struct store_header *h = data;
	const struct stored_address *addresses;
	const struct stored_frame *frames;
	const char *pool;
	uint64_t want;

	if (size < sizeof(*h) || memcmp(h->magic, store_magic, sizeof(h->magic)))
		return "not a symbols cache entry";
	if (h->format != SYMBOL_CACHE_FORMAT)
		return "another format";
	if (h->build_id_size != key->build_id_size ||
	    memcmp(h->build_id, key->build_id, key->build_id_size) ||
	    h->file_size != key->file_size)
		return "another file's";
	if (h->nr_addresses > size / sizeof(*addresses) || h->nr_frames > size / sizeof(*frames) ||
	    h->pool_bytes > size)
		return "counts and size disagree";
	want = sizeof(*h) + h->nr_addresses * sizeof(*addresses) + h->nr_frames * sizeof(*frames) +
	       h->pool_bytes;
	if (want != size)
		return "counts and size disagree";
	if (entry_checksum(h, h + 1, size - sizeof(*h)) != h->checksum)
		return "checksum mismatch";
	addresses = (const void *)(h + 1);
	frames = (const void *)(addresses + h->nr_addresses);
	pool = (const char *)(frames + h->nr_frames);
	if (h->pool_bytes && pool[h->pool_bytes - 1])
		return "a string runs past the end";
	for (uint64_t i = 0; i < h->nr_addresses; i++)
		if ((uint64_t)addresses[i].first + addresses[i].nr > h->nr_frames ||
		    (i && addresses[i].offset <= addresses[i - 1].offset))
			return "bad address list";
	for (uint64_t i = 0; i < h->nr_frames; i++)
		if (frames[i].name >= h->pool_bytes ||
		    (frames[i].file != NO_FILE && frames[i].file >= h->pool_bytes))
			return "bad frame";
	return NULL;
}

int symbol_store__open(struct unwind_cache *cache, const struct unwind_cache_key *key,
		       struct symbol_store **out)
{
	struct symbol_store *store;
	const struct store_header *h;
	const char *why;
	char name[256];
	void *data;
	size_t size;
	int err;

	*out = NULL;
	err = symbol_store__entry_name(key, name, sizeof(name));
	if (err)
		return err;
	store = calloc(1, sizeof(*store));
	if (!store)
		return -ENOMEM;
	store->cache = cache;
	store->key = *key;
	err = unwind_cache__map_entry(cache, name, &data, &size);
	if (err == 0) {
		why = entry_problem(data, size, key);
		if (why) {
			status__debug("symbols cache: %s/%s ignored: %s", unwind_cache__dir(cache),
				      name, why);
			munmap(data, size);
		} else {
			h = data;
			store->mapping = data;
			store->mapping_size = size;
			store->addresses = (const void *)(h + 1);
			store->nr_addresses = h->nr_addresses;
			store->frames = (const void *)(store->addresses + h->nr_addresses);
			store->nr_frames = h->nr_frames;
			store->pool = (const char *)(store->frames + h->nr_frames);
			store->pool_bytes = h->pool_bytes;
		}
	}
	*out = store;
	return 0;
}

static const struct stored_address *find_stored(const struct symbol_store *store, uint64_t offset)
{
	size_t lo = 0, hi = store->nr_addresses;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (store->addresses[mid].offset < offset)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo < store->nr_addresses && store->addresses[lo].offset == offset
		   ? &store->addresses[lo]
		   : NULL;
}

size_t symbol_store__lookup(const struct symbol_store *store, uint64_t offset,
			    struct symbol_cache_frame *frames, size_t max)
{
	const struct stored_address *a = find_stored(store, offset);
	size_t n;

	if (!a || a->nr > max)
		return 0;
	n = a->nr;
	for (size_t i = 0; i < n; i++) {
		const struct stored_frame *f = &store->frames[a->first + i];

		frames[i] = (struct symbol_cache_frame){
		    .name = store->pool + f->name,
		    .file = f->file == NO_FILE ? NULL : store->pool + f->file,
		    .line = f->line,
		    .kind = f->kind,
		};
	}
	return n;
}

/* The offset of s in the added pool, kept once.  0 or -ENOMEM. */
static int added_string(struct symbol_store *store, const char *s, uint32_t *at)
{
	uint64_t hash = fnv(FNV_OFFSET, s, strlen(s)), found;
	size_t len = strlen(s) + 1;

	if (u64_map__get(&store->strings, hash, &found) && !strcmp(store->added_pool + found, s)) {
		*at = found;
		return 0;
	}
	if (store->added_pool_bytes + len > UINT32_MAX / 2 ||
	    array__grow((void **)&store->added_pool, &store->cap_added_pool,
			store->added_pool_bytes + len, 1))
		return -ENOMEM;
	memcpy(store->added_pool + store->added_pool_bytes, s, len);
	*at = store->added_pool_bytes;
	store->added_pool_bytes += len;
	/* A hash two strings share keeps the first; the other is stored
	 * again each time. */
	if (!u64_map__get(&store->strings, hash, &found) &&
	    u64_map__put(&store->strings, hash, *at))
		return -ENOMEM;
	return 0;
}

int symbol_store__add(struct symbol_store *store, uint64_t offset,
		      const struct symbol_cache_frame *frames, size_t n)
{
	uint64_t seen;
	int err;

	if (!n || store->nr_addresses + store->nr_added >= SYMBOL_CACHE_MAX_ADDRESSES ||
	    find_stored(store, offset) || u64_map__get(&store->offsets, offset, &seen))
		return 0;
	if (array__grow((void **)&store->added, &store->cap_added, store->nr_added + 1,
			sizeof(*store->added)) ||
	    array__grow((void **)&store->added_frames, &store->cap_added_frames,
			store->nr_added_frames + n, sizeof(*store->added_frames)))
		return -ENOMEM;
	for (size_t i = 0; i < n; i++) {
		struct stored_frame *f = &store->added_frames[store->nr_added_frames + i];

		err = added_string(store, frames[i].name ? frames[i].name : "", &f->name);
		if (!err && frames[i].file)
			err = added_string(store, frames[i].file, &f->file);
		else
			f->file = NO_FILE;
		if (err)
			return err;
		f->line = frames[i].line;
		f->kind = frames[i].kind;
	}
	if (u64_map__put(&store->offsets, offset, 1))
		return -ENOMEM;
	store->added[store->nr_added++] =
	    (struct stored_address){offset, store->nr_added_frames, n};
	store->nr_added_frames += n;
	return 0;
}

void symbol_store__counts(const struct symbol_store *store, size_t *read, size_t *added)
{
	*read = store ? store->nr_addresses : 0;
	*added = store ? store->nr_added : 0;
}

static int by_offset(const void *a, const void *b)
{
	const struct stored_address *x = a, *y = b;

	return x->offset < y->offset ? -1 : x->offset > y->offset;
}

/* The stored entry and the added addresses in one: the stored strings
 * first, the added after them; the stored frames first, the added after. */
static int write_merged(struct symbol_store *store)
{
	size_t nr = store->nr_addresses + store->nr_added, i = 0, j = 0, k = 0;
	size_t nr_frames = store->nr_frames + store->nr_added_frames;
	struct stored_address *addresses = malloc(nr * sizeof(*addresses));
	struct stored_frame *frames = malloc((nr_frames ? nr_frames : 1) * sizeof(*frames));
	struct store_header h = {0};
	uint64_t checksum;
	char name[256];
	int err;

	err = symbol_store__entry_name(&store->key, name, sizeof(name));
	if (!err && (!addresses || !frames))
		err = -ENOMEM;
	if (err)
		goto out;
	qsort(store->added, store->nr_added, sizeof(*store->added), by_offset);
	while (i < store->nr_addresses || j < store->nr_added) {
		if (j == store->nr_added || (i < store->nr_addresses &&
					     store->addresses[i].offset < store->added[j].offset)) {
			addresses[k++] = store->addresses[i++];
		} else {
			addresses[k] = store->added[j++];
			addresses[k++].first += store->nr_frames;
		}
	}
	if (store->nr_frames)
		memcpy(frames, store->frames, store->nr_frames * sizeof(*frames));
	for (size_t f = 0; f < store->nr_added_frames; f++) {
		struct stored_frame *to = &frames[store->nr_frames + f];

		*to = store->added_frames[f];
		to->name += store->pool_bytes;
		if (to->file != NO_FILE)
			to->file += store->pool_bytes;
	}
	memcpy(h.magic, store_magic, sizeof(h.magic));
	h.format = SYMBOL_CACHE_FORMAT;
	h.build_id_size = store->key.build_id_size;
	memcpy(h.build_id, store->key.build_id, store->key.build_id_size);
	h.file_size = store->key.file_size;
	h.nr_addresses = k;
	h.nr_frames = nr_frames;
	h.pool_bytes = store->pool_bytes + store->added_pool_bytes;
	checksum = fnv(FNV_OFFSET, &h, sizeof(h));
	checksum = fnv(checksum, addresses, k * sizeof(*addresses));
	checksum = fnv(checksum, frames, nr_frames * sizeof(*frames));
	checksum = fnv(checksum, store->pool, store->pool_bytes);
	h.checksum = fnv(checksum, store->added_pool, store->added_pool_bytes);
	err = unwind_cache__write_entry(
	    store->cache, name,
	    (struct iovec[]){{&h, sizeof(h)},
			     {addresses, k * sizeof(*addresses)},
			     {frames, nr_frames * sizeof(*frames)},
			     {(void *)store->pool, store->pool_bytes},
			     {store->added_pool, store->added_pool_bytes}},
	    5);
out:
	free(addresses);
	free(frames);
	return err;
}

int symbol_store__close(struct symbol_store *store)
{
	int err = 0;

	if (!store)
		return 0;
	if (store->nr_added)
		err = write_merged(store);
	if (store->mapping)
		munmap(store->mapping, store->mapping_size);
	free(store->added);
	free(store->added_frames);
	free(store->added_pool);
	u64_map__free(&store->strings);
	u64_map__free(&store->offsets);
	free(store);
	return err;
}
