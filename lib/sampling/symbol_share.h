/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The frames of addresses in files, by file and offset, shared by the
 * symbolizers of one profile's processes: a rank's DataLoader workers (new
 * ones every epoch) and the other ranks map the same libraries, and an
 * address one of them resolved is not resolved again (the module's symbol
 * table sorted, its debug information inflated) by the next.  The frame
 * ids are those of the first profile it is given; any other is refused.
 */
#ifndef LLMPROF_SYMBOL_SHARE_H
#define LLMPROF_SYMBOL_SHARE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "profile/profile.h"

struct symbol_share;

/* An address in a file: its device, inode and offset in it. */
struct file_address {
	uint64_t dev, inode, offset;
};

int symbol_share__new(struct symbol_share **out);
void symbol_share__free(struct symbol_share *share);
/* Whether share holds (or may hold) frame ids of profile. */
bool symbol_share__serves(const struct symbol_share *share, const struct profile *profile);
/* The frames (root first) another symbolizer resolved for a, or, with the
 * cache used, an earlier run (then interned into profile, and kept in
 * the share; fd: a's file, open, for its build-id); NULL where none. */
const uint32_t *symbol_share__find(struct symbol_share *share, struct profile *profile,
				   const struct file_address *a, int fd, size_t *n);
/* Keeps a's n frames (root first) of profile, and in its file's store
 * when the cache is used (opened by symbol_share__find()).  0 or
 * -ENOMEM. */
int symbol_share__add(struct symbol_share *share, const struct profile *profile,
		      const struct file_address *a, const uint32_t *frames, size_t n);
/* Addresses resolved into the share (of them, from_cache named from the
 * cache; NULL: not wanted), and those a symbolizer found there. */
void symbol_share__counts(const struct symbol_share *share, size_t *resolved, size_t *reused,
			  size_t *from_cache);

/* The frames of an address at most this deep kept across runs. */
#define SYMBOL_SHARE_MAX_FRAMES 64
/* Keep what is resolved across runs, under each file's build-id, in the
 * cache directory of the unwind rows (symbol_cache.h); written when the
 * share is freed. */
void symbol_share__use_cache(struct symbol_share *share);

#endif /* LLMPROF_SYMBOL_SHARE_H */
