// SPDX-License-Identifier: GPL-2.0
/*
 * The symbols' cache across runs: what one run adds a later run reads back
 * exactly (names, files, lines, kinds, leaf first), merged with what that
 * run adds; an entry of another file, a changed byte or a cut file is
 * never read; the directory's entries stay the effective user's alone.
 */
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "../lib/expect.h"
#include "sampling/symbol_cache.h"

static struct unwind_cache_key key_of(uint8_t first)
{
	struct unwind_cache_key key = {.build_id_size = 20, .file_size = 123456};

	for (int i = 0; i < 20; i++)
		key.build_id[i] = first + i;
	return key;
}

static void add(struct symbol_store *store, uint64_t offset, const char *leaf, const char *caller)
{
	struct symbol_cache_frame frames[2] = {
	    {leaf, "lib/inline.h", 42, 3},
	    {caller, NULL, 0, 1},
	};

	EXPECT(symbol_store__add(store, offset, frames, caller ? 2 : 1) == 0);
}

static int same(const struct symbol_cache_frame *f, const char *name, const char *file,
		uint32_t line, uint32_t kind)
{
	return !strcmp(f->name, name) && (file ? f->file && !strcmp(f->file, file) : !f->file) &&
	       f->line == line && f->kind == kind;
}

static struct symbol_store *reopen(struct unwind_cache *cache, const struct unwind_cache_key *key)
{
	struct symbol_store *store = NULL;

	EXPECT(symbol_store__open(cache, key, &store) == 0 && store);
	return store;
}

static char *entry_path(const char *dir, const struct unwind_cache_key *key)
{
	char name[256], *path;

	EXPECT(symbol_store__entry_name(key, name, sizeof(name)) == 0);
	path = malloc(strlen(dir) + strlen(name) + 2);
	sprintf(path, "%s/%s", dir, name);
	return path;
}

int main(void)
{
	char dir[] = "/tmp/llmprof-symcache-XXXXXX";
	struct unwind_cache_key key = key_of(1), other = key_of(2);
	struct symbol_cache_frame frames[8];
	struct unwind_cache *cache = NULL;
	struct symbol_store *store;
	size_t read, added;
	struct stat st;
	char *path;
	int fd;

	EXPECT(mkdtemp(dir) != NULL);
	EXPECT(unwind_cache__open(dir, UNWIND_CACHE_MAX_BYTES, &cache) == 0);

	/* A first run: nothing stored; three addresses added. */
	store = reopen(cache, &key);
	EXPECT(symbol_store__lookup(store, 0x1000, frames, 8) == 0);
	add(store, 0x2000, "inlined_helper", "caller");
	add(store, 0x1000, "leaf_function", NULL);
	add(store, 0x3000, "inlined_helper", "other_caller");
	add(store, 0x1000, "twice", NULL); /* the first kept */
	symbol_store__counts(store, &read, &added);
	EXPECT(read == 0 && added == 3);
	EXPECT(symbol_store__close(store) == 0);
	path = entry_path(dir, &key);
	EXPECT(stat(path, &st) == 0 && (st.st_mode & 0777) == 0600 && st.st_uid == geteuid());

	/* A second run reads them exactly, and adds one more. */
	store = reopen(cache, &key);
	symbol_store__counts(store, &read, &added);
	EXPECT(read == 3 && added == 0);
	EXPECT(symbol_store__lookup(store, 0x2000, frames, 8) == 2);
	EXPECT(same(&frames[0], "inlined_helper", "lib/inline.h", 42, 3));
	EXPECT(same(&frames[1], "caller", NULL, 0, 1));
	EXPECT(symbol_store__lookup(store, 0x1000, frames, 8) == 1);
	EXPECT(same(&frames[0], "leaf_function", "lib/inline.h", 42, 3));
	EXPECT(symbol_store__lookup(store, 0x2000, frames, 1) == 0); /* more than max */
	EXPECT(symbol_store__lookup(store, 0x2001, frames, 8) == 0);
	add(store, 0x1800, "added_later", "caller");
	add(store, 0x2000, "not_again", NULL); /* stored already */
	symbol_store__counts(store, &read, &added);
	EXPECT(added == 1);
	EXPECT(symbol_store__close(store) == 0);

	/* A third run sees both runs' addresses. */
	store = reopen(cache, &key);
	symbol_store__counts(store, &read, &added);
	EXPECT(read == 4);
	EXPECT(symbol_store__lookup(store, 0x1800, frames, 8) == 2);
	EXPECT(same(&frames[0], "added_later", "lib/inline.h", 42, 3));
	EXPECT(same(&frames[1], "caller", NULL, 0, 1));
	EXPECT(symbol_store__lookup(store, 0x3000, frames, 8) == 2);
	EXPECT(same(&frames[1], "other_caller", NULL, 0, 1));
	EXPECT(symbol_store__lookup(store, 0x2000, frames, 8) == 2);
	EXPECT(same(&frames[1], "caller", NULL, 0, 1));
	EXPECT(symbol_store__close(store) == 0);

	/* Another file's key reads nothing, even under this one's name. */
	store = reopen(cache, &other);
	symbol_store__counts(store, &read, &added);
	EXPECT(read == 0);
	EXPECT(symbol_store__close(store) == 0);
	{
		char *other_path = entry_path(dir, &other);

		EXPECT(link(path, other_path) == 0);
		store = reopen(cache, &other);
		symbol_store__counts(store, &read, &added);
		EXPECT(read == 0);
		EXPECT(symbol_store__close(store) == 0);
		unlink(other_path);
		free(other_path);
	}

	/* One byte changed in a string: not read. */
	fd = open(path, O_RDWR);
	EXPECT(fd >= 0 && fstat(fd, &st) == 0);
	EXPECT(pwrite(fd, "X", 1, st.st_size - 3) == 1);
	close(fd);
	store = reopen(cache, &key);
	symbol_store__counts(store, &read, &added);
	EXPECT(read == 0);
	EXPECT(symbol_store__lookup(store, 0x1000, frames, 8) == 0);
	/* Written anew from what this run adds. */
	add(store, 0x5000, "fresh", NULL);
	EXPECT(symbol_store__close(store) == 0);
	store = reopen(cache, &key);
	symbol_store__counts(store, &read, &added);
	EXPECT(read == 1 && symbol_store__lookup(store, 0x5000, frames, 8) == 1);
	EXPECT(symbol_store__close(store) == 0);

	/* Cut short: not read. */
	EXPECT(stat(path, &st) == 0 && truncate(path, st.st_size - 1) == 0);
	store = reopen(cache, &key);
	symbol_store__counts(store, &read, &added);
	EXPECT(read == 0);
	EXPECT(symbol_store__close(store) == 0);

	/* Writable by others: not read. */
	store = reopen(cache, &key);
	add(store, 0x6000, "mine", NULL);
	EXPECT(symbol_store__close(store) == 0);
	EXPECT(chmod(path, 0622) == 0);
	store = reopen(cache, &key);
	symbol_store__counts(store, &read, &added);
	EXPECT(read == 0);
	EXPECT(symbol_store__close(store) == 0);

	unlink(path);
	free(path);
	unwind_cache__close(cache);
	rmdir(dir);
	if (failures)
		fprintf(stderr, "%d expectation(s) failed\n", failures);
	else
		printf("PASS\n");
	return failures != 0;
}
