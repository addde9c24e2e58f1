// SPDX-License-Identifier: GPL-2.0
/* The on-disk cache of compiled unwind rows, keyed by build-id; see
 * unwind_cache.h. */
#include <dirent.h>
#include <elfutils/libdwfl.h>
#include <errno.h>
#include <fcntl.h>
#include <gelf.h>
#include <inttypes.h>
#include <libelf.h>
#include <pwd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/uio.h>
#include <time.h>
#include <unistd.h>

#include "array.h"
#include "status.h"
#include "sampling/unwind_cache.h"

#ifndef UNWIND_COMPILER_ID
#define UNWIND_COMPILER_ID "unknown"
#endif

#define ENTRY_SUFFIX ".unwind"
#define TEMP_PREFIX ".tmp-"
/* A temporary file this old was left by a run that died mid-write. */
#define STALE_TEMP_SECONDS 3600

/* An entry: this header, then nr_rows rows.  No padding: the layout is
 * the file's. */
struct entry_header {
	char magic[8];
	uint32_t format;   /* UNWIND_CACHE_FORMAT */
	uint32_t row_size; /* sizeof(struct unwind_row) */
	uint32_t build_id_size;
	uint8_t build_id[UNWIND_CACHE_MAX_BUILD_ID];
	uint32_t nr_segments;
	uint64_t file_size;
	uint64_t nr_rows;
	uint64_t nr_fdes;
	struct unwind_segment segments[UNWIND_TABLE_MAX_SEGMENTS];
	/* Of the header (this field 0) and then the rows. */
	uint64_t checksum;
};

_Static_assert(sizeof(struct entry_header) ==
		   8 + 3 * 4 + UNWIND_CACHE_MAX_BUILD_ID + 4 + 3 * 8 +
		       UNWIND_TABLE_MAX_SEGMENTS * sizeof(struct unwind_segment) + 8,
	       "the entry header has no padding");
_Static_assert(sizeof(struct entry_header) % 8 == 0, "the header hashes by 8-byte words");

static const char entry_magic[8] = "LLMPUNWR";

struct unwind_cache {
	int dir_fd;
	char *dir;
	uint64_t max_bytes;
	uint64_t total_bytes; /* the entries' size, once scanned */
	bool scanned;
};

#define FNV_OFFSET 0xcbf29ce484222325ULL
#define FNV_PRIME 0x100000001b3ULL

static uint64_t hash_words(uint64_t h, const void *data, size_t nr_words)
{
	const uint8_t *p = data;

	for (size_t i = 0; i < nr_words; i++) {
		uint64_t word;

		memcpy(&word, p + i * 8, 8);
		h ^= word;
		h *= FNV_PRIME;
	}
	return h;
}

uint64_t unwind_rows__hash(uint64_t seed, const struct unwind_row *rows, size_t nr)
{
	_Static_assert(sizeof(*rows) == 8, "rows hash as 8-byte words");
	return hash_words(seed ? seed : FNV_OFFSET, rows, nr);
}

int unwind_cache__default_dir(char *buf, size_t size)
{
	const char *dir = getenv("LLMPROF_CACHE_DIR"), *base;
	int n;

	if (dir && dir[0]) {
		n = snprintf(buf, size, "%s", dir);
	} else if ((base = getenv("XDG_CACHE_HOME")) && base[0] == '/') {
		n = snprintf(buf, size, "%s/llmprof", base);
	} else {
		struct passwd *pw;

		base = getenv("HOME");
		if (!base || base[0] != '/') {
			pw = getpwuid(geteuid());
			base = pw ? pw->pw_dir : NULL;
		}
		if (!base)
			return -ENOENT;
		n = snprintf(buf, size, "%s/.cache/llmprof", base);
	}
	return n < 0 || (size_t)n >= size ? -ENAMETOOLONG : 0;
}

/* The directory and its missing parents, 0700 (what the XDG base
 * directory specification asks of a cache), each only inside one that is
 * the effective user's or root's: root with another user's HOME leaves
 * nothing of its own in that user's home.  0, -errno, or -EACCES with *why. */
static int make_dirs(const char *dir, const char **why)
{
	char *path = strdup(dir), *slash;
	struct stat st;
	int err = 0;

	if (!path)
		return -ENOMEM;
	for (char *p = path + 1; !err; p++) {
		bool last = !*p;

		if (*p != '/' && !last)
			continue;
		*p = 0;
		if (stat(path, &st) && errno == ENOENT) {
			slash = strrchr(path, '/');
			if (slash)
				*slash = 0;
			if (stat(!slash ? "." : slash == path ? "/" : path, &st)) {
				err = -errno;
			} else if (st.st_uid != geteuid() && st.st_uid != 0) {
				*why = "would be made in another user's directory";
				err = -EACCES;
			}
			if (slash)
				*slash = '/';
			if (!err && mkdir(path, 0700) && errno != EEXIST)
				err = -errno;
		}
		if (last)
			break;
		*p = '/';
	}
	free(path);
	return err;
}

/* Whether what st describes is the effective user's and only theirs to
 * write; why not in *why. */
static bool owned_alone(const struct stat *st, const char **why)
{
	if (st->st_uid != geteuid()) {
		*why = "owned by another user";
		return false;
	}
	if (st->st_mode & (S_IWGRP | S_IWOTH)) {
		*why = "writable by group or others";
		return false;
	}
	return true;
}

int unwind_cache__open(const char *dir, uint64_t max_bytes, struct unwind_cache **out)
{
	struct unwind_cache *cache;
	const char *why = NULL;
	struct stat st;
	int fd, err;

	err = make_dirs(dir, &why);
	if (err) {
		status__debug("unwind cache %s not used: %s", dir, why ? why : strerror(-err));
		return err;
	}
	/* The checks hold for the directory opened, not for a path that
	 * may be replaced after them. */
	fd = open(dir, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (fd < 0 || fstat(fd, &st)) {
		err = -errno;
		status__debug("unwind cache %s not used: %s", dir, strerror(-err));
		if (fd >= 0)
			close(fd);
		return err;
	}
	if (!owned_alone(&st, &why)) {
		status__debug("unwind cache %s not used: %s", dir, why);
		close(fd);
		return -EPERM;
	}
	cache = calloc(1, sizeof(*cache));
	if (!cache || !(cache->dir = strdup(dir))) {
		free(cache);
		close(fd);
		return -ENOMEM;
	}
	cache->dir_fd = fd;
	cache->max_bytes = max_bytes;
	*out = cache;
	return 0;
}

void unwind_cache__close(struct unwind_cache *cache)
{
	if (!cache)
		return;
	close(cache->dir_fd);
	free(cache->dir);
	free(cache);
}

const char *unwind_cache__dir(const struct unwind_cache *cache)
{
	return cache->dir;
}

/* The GNU build-id among the notes of data; true when found. */
static bool build_id_in_notes(Elf_Data *data, struct unwind_cache_key *key)
{
	size_t offset = 0, name_offset, desc_offset;
	GElf_Nhdr note;

	while (data && (offset = gelf_getnote(data, offset, &note, &name_offset, &desc_offset))) {
		if (note.n_type != NT_GNU_BUILD_ID || note.n_namesz != 4 ||
		    memcmp((const char *)data->d_buf + name_offset, "GNU", 4) || !note.n_descsz ||
		    note.n_descsz > UNWIND_CACHE_MAX_BUILD_ID)
			continue;
		memcpy(key->build_id, (const char *)data->d_buf + desc_offset, note.n_descsz);
		key->build_id_size = note.n_descsz;
		return true;
	}
	return false;
}

int unwind_cache__key(int fd, struct unwind_cache_key *key)
{
	size_t nr_phdrs;
	struct stat st;
	bool found = false;
	Elf_Scn *scn = NULL;
	Elf *elf;

	memset(key, 0, sizeof(*key));
	if (fstat(fd, &st))
		return -errno;
	key->file_size = st.st_size;
	elf_version(EV_CURRENT);
	elf = elf_begin(fd, ELF_C_READ, NULL);
	if (!elf)
		return -ENOEXEC;
	if (elf_kind(elf) != ELF_K_ELF) {
		elf_end(elf);
		return -ENOEXEC;
	}
	/* The loaded notes first, then the sections (an object that has
	 * no program headers). */
	if (!elf_getphdrnum(elf, &nr_phdrs)) {
		for (size_t i = 0; i < nr_phdrs && !found; i++) {
			GElf_Phdr phdr;

			if (!gelf_getphdr(elf, i, &phdr) || phdr.p_type != PT_NOTE)
				continue;
			found = build_id_in_notes(
			    elf_getdata_rawchunk(elf, phdr.p_offset, phdr.p_filesz, ELF_T_NHDR),
			    key);
		}
	}
	while (!found && (scn = elf_nextscn(elf, scn))) {
		GElf_Shdr shdr;

		if (gelf_getshdr(scn, &shdr) && shdr.sh_type == SHT_NOTE)
			found = build_id_in_notes(elf_getdata(scn, NULL), key);
	}
	elf_end(elf);
	return found ? 0 : -ENOENT;
}

/* What else makes the rows: this build's compiler (UNWIND_COMPILER_ID, a
 * hash of its source and the rows' layout) and libdw, which evaluates the
 * FDEs the compiler leaves to it. */
static void compiler_of_rows(char *buf, size_t size)
{
	const char *libdw = dwfl_version(NULL);

	snprintf(buf, size, "%s-dw%s", UNWIND_COMPILER_ID, libdw ? libdw : "");
}

int unwind_cache__entry_name(const struct unwind_cache_key *key, char *buf, size_t size)
{
	char compiler[48];
	size_t n = 0;
	int len;

	if (!key->build_id_size || size < 2 * key->build_id_size + 1)
		return -ENAMETOOLONG;
	for (uint32_t i = 0; i < key->build_id_size; i++)
		n += snprintf(buf + n, size - n, "%02x", key->build_id[i]);
	/* The format, the row size and the compiler in the name too: another
	 * llmprof's entries are never opened, and age out. */
	compiler_of_rows(compiler, sizeof(compiler));
	len = snprintf(buf + n, size - n, "-%" PRIx64 "-v%dr%zu-%s" ENTRY_SUFFIX, key->file_size,
		       UNWIND_CACHE_FORMAT, sizeof(struct unwind_row), compiler);
	return len < 0 || (size_t)len >= size - n ? -ENAMETOOLONG : 0;
}

static int write_all(int fd, const void *buf, size_t size)
{
	while (size) {
		ssize_t n = write(fd, buf, size);

		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return -errno;
		buf = (const char *)buf + n;
		size -= n;
	}
	return 0;
}

static uint64_t entry_checksum(const struct entry_header *h, const struct unwind_row *rows)
{
	struct entry_header copy = *h;
	uint64_t seed = FNV_OFFSET;
	char compiler[48];

	/* An entry renamed to another compiler's name does not check out. */
	compiler_of_rows(compiler, sizeof(compiler));
	for (const char *c = compiler; *c; c++)
		seed = (seed ^ (uint8_t)*c) * FNV_PRIME;
	copy.checksum = 0;
	return unwind_rows__hash(hash_words(seed, &copy, sizeof(copy) / 8), rows, h->nr_rows);
}

/* What is wrong with the entry's header, or NULL. */
static const char *header_problem(const struct entry_header *h, const struct unwind_cache_key *key,
				  uint64_t entry_size)
{
	if (memcmp(h->magic, entry_magic, sizeof(h->magic)))
		return "not an unwind cache entry";
	if (h->format != UNWIND_CACHE_FORMAT || h->row_size != sizeof(struct unwind_row))
		return "another format";
	if (h->build_id_size != key->build_id_size ||
	    memcmp(h->build_id, key->build_id, key->build_id_size) ||
	    h->file_size != key->file_size)
		return "another file's";
	if (h->nr_segments > UNWIND_TABLE_MAX_SEGMENTS)
		return "bad segment count";
	if (h->nr_rows > (entry_size - sizeof(*h)) / sizeof(struct unwind_row) ||
	    sizeof(*h) + h->nr_rows * sizeof(struct unwind_row) != entry_size)
		return "row count and size disagree";
	return NULL;
}

int unwind_cache__read(struct unwind_cache *cache, const struct unwind_cache_key *key,
		       struct unwind_table *out)
{
	char name[256];
	const char *why = NULL;
	const struct entry_header *h = NULL;
	void *mapping = MAP_FAILED;
	struct stat st;
	int fd, err = 0;

	memset(out, 0, sizeof(*out));
	err = unwind_cache__entry_name(key, name, sizeof(name));
	if (err)
		return err;
	fd = openat(cache->dir_fd, name, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
	if (fd < 0)
		return errno == ELOOP ? -EBADMSG : -errno;
	if (fstat(fd, &st)) {
		err = -errno;
		goto cleanup;
	}
	if (!S_ISREG(st.st_mode)) {
		why = "not a regular file";
	} else if (owned_alone(&st, &why)) {
		if ((uint64_t)st.st_size < sizeof(*h))
			why = "shorter than its header";
		/* Mapped, not read: the rows are the page cache's pages, where
		 * reading them into fresh memory faults in every page. */
		else if ((mapping = mmap(NULL, st.st_size, PROT_READ, MAP_PRIVATE, fd, 0)) ==
			 MAP_FAILED)
			why = "unreadable";
		else
			why = header_problem(h = mapping, key, st.st_size);
	}
	if (!why && entry_checksum(h, (const struct unwind_row *)(h + 1)) != h->checksum)
		why = "checksum mismatch";
	if (why) {
		status__debug("unwind cache: %s/%s ignored: %s", cache->dir, name, why);
		err = -EBADMSG;
		goto cleanup;
	}
	/* Its time is when it was last used: the bound removes the least
	 * recently used. */
	futimens(fd, NULL);
	out->mapping = mapping;
	out->mapping_size = st.st_size;
	out->rows = (struct unwind_row *)(h + 1);
	out->nr_rows = h->nr_rows;
	out->nr_fdes = h->nr_fdes;
	out->nr_segments = h->nr_segments;
	memcpy(out->segments, h->segments, sizeof(out->segments));
	mapping = MAP_FAILED;
cleanup:
	if (mapping != MAP_FAILED)
		munmap(mapping, st.st_size);
	close(fd);
	return err;
}

struct entry_age {
	char *name;
	struct timespec used;
	uint64_t size;
};

static int by_age(const void *a, const void *b)
{
	const struct entry_age *x = a, *y = b;

	if (x->used.tv_sec != y->used.tv_sec)
		return x->used.tv_sec < y->used.tv_sec ? -1 : 1;
	if (x->used.tv_nsec != y->used.tv_nsec)
		return x->used.tv_nsec < y->used.tv_nsec ? -1 : 1;
	return strcmp(x->name, y->name);
}

static bool ends_with(const char *s, const char *suffix)
{
	size_t n = strlen(s), m = strlen(suffix);

	return n >= m && !strcmp(s + n - m, suffix);
}

/* Adds up the entries and, where they pass the bound, removes the least
 * recently used; removes temporary files that a run left when it died.
 * 0 or -errno. */
static int trim(struct unwind_cache *cache)
{
	struct entry_age *entries = NULL;
	size_t nr = 0, cap = 0;
	time_t now = time(NULL);
	struct dirent *d;
	uint64_t total = 0;
	int fd, err = 0;
	DIR *dir;

	fd = openat(cache->dir_fd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	dir = fd >= 0 ? fdopendir(fd) : NULL;
	if (!dir) {
		err = -errno;
		if (fd >= 0)
			close(fd);
		return err;
	}
	while ((d = readdir(dir))) {
		struct stat st;

		if (fstatat(cache->dir_fd, d->d_name, &st, AT_SYMLINK_NOFOLLOW) ||
		    !S_ISREG(st.st_mode))
			continue;
		if (!strncmp(d->d_name, TEMP_PREFIX, strlen(TEMP_PREFIX))) {
			if (now - st.st_mtime > STALE_TEMP_SECONDS)
				unlinkat(cache->dir_fd, d->d_name, 0);
			continue;
		}
		if (!ends_with(d->d_name, ENTRY_SUFFIX) &&
		    !ends_with(d->d_name, UNWIND_CACHE_OTHER_SUFFIX))
			continue;
		if (array__grow((void **)&entries, &cap, nr + 1, sizeof(*entries)) ||
		    !(entries[nr].name = strdup(d->d_name))) {
			err = -ENOMEM;
			break;
		}
		entries[nr].used = st.st_mtim;
		entries[nr++].size = st.st_size;
		total += st.st_size;
	}
	closedir(dir);
	if (!err && total > cache->max_bytes) {
		qsort(entries, nr, sizeof(*entries), by_age);
		for (size_t i = 0; i < nr && total > cache->max_bytes; i++) {
			if (unlinkat(cache->dir_fd, entries[i].name, 0))
				continue;
			total -= entries[i].size;
		}
	}
	for (size_t i = 0; i < nr; i++)
		free(entries[i].name);
	free(entries);
	if (!err) {
		cache->total_bytes = total;
		cache->scanned = true;
	}
	return err;
}

int unwind_cache__write_entry(struct unwind_cache *cache, const char *name,
			      const struct iovec *parts, int nr_parts)
{
	static unsigned int counter;
	char temp[320];
	uint64_t size = 0;
	int fd, err = 0;

	/* Written whole under a name of its own, then renamed into place:
	 * a reader sees the old entry or the new one, never half of one,
	 * and runs at the same time each write their own. */
	snprintf(temp, sizeof(temp), TEMP_PREFIX "%d-%u-%s", getpid(),
		 __atomic_fetch_add(&counter, 1, __ATOMIC_RELAXED), name);
	fd =
	    openat(cache->dir_fd, temp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
	if (fd < 0)
		return -errno;
	for (int i = 0; i < nr_parts && !err; i++) {
		err = write_all(fd, parts[i].iov_base, parts[i].iov_len);
		size += parts[i].iov_len;
	}
	if (close(fd) && !err)
		err = -errno;
	if (!err && renameat(cache->dir_fd, temp, cache->dir_fd, name))
		err = -errno;
	if (err) {
		unlinkat(cache->dir_fd, temp, 0);
		return err;
	}
	/* The directory is read once a session, at its first write, and
	 * again only when the entries pass the bound. */
	cache->total_bytes += size;
	if (!cache->scanned || cache->total_bytes > cache->max_bytes)
		err = trim(cache);
	return err;
}

int unwind_cache__map_entry(struct unwind_cache *cache, const char *name, void **data, size_t *size)
{
	const char *why = NULL;
	struct stat st;
	int fd, err = 0;

	*data = NULL;
	*size = 0;
	fd = openat(cache->dir_fd, name, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
	if (fd < 0)
		return errno == ELOOP ? -EBADMSG : -errno;
	if (fstat(fd, &st))
		err = -errno;
	else if (!S_ISREG(st.st_mode))
		why = "not a regular file";
	else if (owned_alone(&st, &why) && !st.st_size)
		why = "empty";
	else if (!why &&
		 (*data = mmap(NULL, st.st_size, PROT_READ, MAP_PRIVATE, fd, 0)) == MAP_FAILED)
		why = "unreadable";
	if (why) {
		status__debug("cache: %s/%s ignored: %s", cache->dir, name, why);
		*data = NULL;
		err = -EBADMSG;
	} else if (!err) {
		/* Its time is when it was last used. */
		futimens(fd, NULL);
		*size = st.st_size;
	}
	close(fd);
	return err;
}

int unwind_cache__write(struct unwind_cache *cache, const struct unwind_cache_key *key,
			const struct unwind_table *table)
{
	struct entry_header h = {0};
	char name[256];
	int err;

	err = unwind_cache__entry_name(key, name, sizeof(name));
	if (err)
		return err;
	if (table->nr_segments > UNWIND_TABLE_MAX_SEGMENTS)
		return -EINVAL;
	memcpy(h.magic, entry_magic, sizeof(h.magic));
	h.format = UNWIND_CACHE_FORMAT;
	h.row_size = sizeof(struct unwind_row);
	h.build_id_size = key->build_id_size;
	memcpy(h.build_id, key->build_id, key->build_id_size);
	h.file_size = key->file_size;
	h.nr_segments = table->nr_segments;
	h.nr_rows = table->nr_rows;
	h.nr_fdes = table->nr_fdes;
	memcpy(h.segments, table->segments, sizeof(h.segments));
	h.checksum = entry_checksum(&h, table->rows);
	return unwind_cache__write_entry(
	    cache, name,
	    (struct iovec[]){{&h, sizeof(h)}, {table->rows, table->nr_rows * sizeof(*table->rows)}},
	    2);
}
