/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The frames of addresses in one file kept across runs, under the file's
 * GNU build-id and size, in the unwind rows' cache directory and bound
 * (unwind_cache.h): profiling the same job again names its addresses from
 * here instead of opening the file's debug information (a libc with its
 * -dbg package inflates some 20 MB of DWARF for the file:line of a few
 * frames).  An entry: the file offsets, sorted, each with its frames
 * (leaf first: name, source file, line, kind); written whole and renamed
 * into place, checked on every read (magic, format, key, counts, string
 * bounds, checksum), merged with what a run adds.
 */
#ifndef LLMPROF_SYMBOL_CACHE_H
#define LLMPROF_SYMBOL_CACHE_H

#include <stddef.h>
#include <stdint.h>

#include "sampling/unwind_cache.h"

/* Bumped whenever the symbolizer names an address differently: another
 * format's entries are never read, and age out. */
#define SYMBOL_CACHE_FORMAT 1
/* A file's entry holds at most this many addresses; past it a run adds
 * none (what is there still serves). */
#define SYMBOL_CACHE_MAX_ADDRESSES (1u << 20)

struct symbol_cache_frame {
	const char *name;
	const char *file; /* NULL when unknown */
	uint32_t line;
	uint32_t kind; /* enum frame_kind */
};

struct symbol_store;

/* The entry of the file whose key is given, read when there is one (one
 * debug line when it fails a check: it is then written anew).  0 or
 * -errno; *out NULL only on error. */
int symbol_store__open(struct unwind_cache *cache, const struct unwind_cache_key *key,
		       struct symbol_store **out);
/* The frames (leaf first) stored for offset: their count, 0 when none.
 * frames[] points into the store, valid until it is closed. */
size_t symbol_store__lookup(const struct symbol_store *store, uint64_t offset,
			    struct symbol_cache_frame *frames, size_t max);
/* Keeps offset's n frames (leaf first; the strings are copied) to write
 * at close.  0 or -ENOMEM; past SYMBOL_CACHE_MAX_ADDRESSES, or offset
 * already there, 0 and nothing kept. */
int symbol_store__add(struct symbol_store *store, uint64_t offset,
		      const struct symbol_cache_frame *frames, size_t n);
/* Addresses read from the entry, and added in this run. */
void symbol_store__counts(const struct symbol_store *store, size_t *read, size_t *added);
/* Writes the entry where addresses were added (the stored and the new,
 * merged), then frees the store.  0 or -errno of the write. */
int symbol_store__close(struct symbol_store *store);

/* The entry's file name: BUILDID-SIZE-sFORMAT.symbols. */
int symbol_store__entry_name(const struct unwind_cache_key *key, char *buf, size_t size);

#endif /* LLMPROF_SYMBOL_CACHE_H */
