/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The on-disk cache of compiled unwind rows: a file's rows (and the
 * segments that place them) kept across runs under its GNU build-id, so
 * that profiling the same job again reads them instead of compiling the
 * same .eh_frame again.  One file an entry, written whole under a
 * temporary name and renamed into place; checked on every read (magic,
 * format, key, row count, checksum); the directory the effective user's
 * own, and bounded in size, the least recently used entries removed.
 */
#ifndef LLMPROF_UNWIND_CACHE_H
#define LLMPROF_UNWIND_CACHE_H

#include <stddef.h>
#include <stdint.h>

#include "sampling/unwind_table.h"

/* The entries' layout.  The key also holds the row size, a hash of the
 * compiler's source and the rows' layout (set by lib/CMakeLists.txt) and
 * libdw's version: no build reads rows that another made differently. */
#define UNWIND_CACHE_FORMAT 1
/* The cache's bound: past it the least recently used entries go. */
#define UNWIND_CACHE_MAX_BYTES (512ULL << 20)

#define UNWIND_CACHE_MAX_BUILD_ID 64

/* What makes a file's rows: its build-id, and its size, since a stripped
 * copy keeps the build-id but loses the .debug_frame that some files'
 * rows come from. */
struct unwind_cache_key {
	uint8_t build_id[UNWIND_CACHE_MAX_BUILD_ID];
	uint32_t build_id_size;
	uint64_t file_size;
};

struct unwind_cache;

/* The cache directory: $LLMPROF_CACHE_DIR, else $XDG_CACHE_HOME/llmprof,
 * else ~/.cache/llmprof of the effective user.  0 or -errno. */
int unwind_cache__default_dir(char *buf, size_t size);
/* Opens dir, creating it (0700) and its missing parents.  A directory
 * that is not the effective user's, or that group or others may write,
 * is refused with -EPERM and one debug line.  0 or -errno. */
int unwind_cache__open(const char *dir, uint64_t max_bytes, struct unwind_cache **out);
void unwind_cache__close(struct unwind_cache *cache);
const char *unwind_cache__dir(const struct unwind_cache *cache);

/* The key of the ELF file open at fd: 0, -ENOENT where it has no
 * build-id (never cached), or -errno. */
int unwind_cache__key(int fd, struct unwind_cache_key *key);
/* The table stored under key, rows allocated: 0, -ENOENT where there is
 * none, -EBADMSG where the entry fails a check (one debug line says
 * which; the caller compiles and writes it again), or -errno. */
int unwind_cache__read(struct unwind_cache *cache, const struct unwind_cache_key *key,
		       struct unwind_table *out);
/* Stores table under key, replacing what is there, then removes the
 * least recently used entries past the bound.  0 or -errno. */
int unwind_cache__write(struct unwind_cache *cache, const struct unwind_cache_key *key,
			const struct unwind_table *table);
/* The entry's file name under the directory:
 * BUILDID-SIZE-vFORMATrROWSIZE-COMPILER.unwind. */
int unwind_cache__entry_name(const struct unwind_cache_key *key, char *buf, size_t size);

/* Entries of another kind share the directory and its bound: their
 * names end so (the symbols' cache, symbol_cache.h). */
#define UNWIND_CACHE_OTHER_SUFFIX ".symbols"
struct iovec;
/* Writes the parts as the entry name (atomically: a temporary file
 * renamed), then keeps the bound.  0 or -errno. */
int unwind_cache__write_entry(struct unwind_cache *cache, const char *name,
			      const struct iovec *parts, int nr_parts);
/* The entry name mapped read-only (munmap() *data, *size when done), its
 * time of use now: 0, -ENOENT, -EBADMSG where it is not a regular file
 * of the effective user's alone (one debug line), or -errno.  The caller
 * checks what is in it. */
int unwind_cache__map_entry(struct unwind_cache *cache, const char *name, void **data,
			    size_t *size);

/* A 64-bit hash of rows (FNV-1a by 8-byte row; any one changed row
 * changes it): the entries' checksum, and -v's digest of the rows a
 * session loaded. */
uint64_t unwind_rows__hash(uint64_t seed, const struct unwind_row *rows, size_t nr);

#endif /* LLMPROF_UNWIND_CACHE_H */
