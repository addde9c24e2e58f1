// SPDX-License-Identifier: GPL-2.0
/*
 * Unit test of the unwind cache's entries, on real binaries: the key's
 * build-id is the one libdw's dwelf_elf_gnu_build_id() reads; a file's
 * compiled rows written and read back are the same rows, segments and FDE
 * count; an entry with any one byte flipped (magic, format, build-id, row
 * count, a row, the checksum), cut short, or writable by others is refused;
 * a file without a build-id has no key; a directory that others may write
 * (or, as root, that another user owns, or one to be made inside it) is
 * refused; the bound removes the
 * least recently used entry; and writers racing on one entry never let a
 * reader see half of one.
 *
 * Usage: test_unwind_cache NO_BUILD_ID_ELF ELF...
 *        test_unwind_cache --check DIR MAPS (see check_entries())
 */
#include <elfutils/libdwelf.h>
#include <errno.h>
#include <fcntl.h>
#include <libelf.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "sampling/unwind_cache.h"

static int failures;

#define EXPECT(cond, ...)                                                                          \
	do {                                                                                       \
		if (!(cond)) {                                                                     \
			fprintf(stderr, "%s:%d: expected %s: ", __FILE__, __LINE__, #cond);        \
			fprintf(stderr, __VA_ARGS__);                                              \
			fputc('\n', stderr);                                                       \
			failures++;                                                                \
		}                                                                                  \
	} while (0)

static char root[] = "/tmp/llmprof-cache-test-XXXXXX";

static bool same_table(const struct unwind_table *a, const struct unwind_table *b)
{
	return a->nr_rows == b->nr_rows && a->nr_fdes == b->nr_fdes &&
	       a->nr_segments == b->nr_segments &&
	       !memcmp(a->segments, b->segments, sizeof(a->segments)) &&
	       !memcmp(a->rows, b->rows, a->nr_rows * sizeof(*a->rows));
}

static void entry_path(const struct unwind_cache *cache, const struct unwind_cache_key *key,
		       char *buf, size_t size)
{
	char name[256];

	unwind_cache__entry_name(key, name, sizeof(name));
	snprintf(buf, size, "%s/%s", unwind_cache__dir(cache), name);
}

static void flip_byte(const char *path, off_t offset)
{
	int fd = open(path, O_RDWR);
	unsigned char c;

	if (fd < 0 || pread(fd, &c, 1, offset) != 1) {
		perror(path);
		exit(1);
	}
	c ^= 0x20;
	if (pwrite(fd, &c, 1, offset) != 1)
		exit(1);
	close(fd);
}

/* The key by libdw's reading of the build-id note. */
static void check_key(const char *path, const struct unwind_cache_key *key)
{
	int fd = open(path, O_RDONLY);
	Elf *elf = elf_begin(fd, ELF_C_READ_MMAP, NULL);
	const void *id = NULL;
	ssize_t n = elf ? dwelf_elf_gnu_build_id(elf, &id) : -1;

	EXPECT(n > 0 && (size_t)n == key->build_id_size && !memcmp(id, key->build_id, n),
	       "%s: the build-id libdw reads (%zd bytes)", path, n);
	elf_end(elf);
	close(fd);
}

static void check_file(struct unwind_cache *cache, const char *path)
{
	struct unwind_table compiled, read;
	struct unwind_cache_key key, other;
	/* Magic, format, build-id, row count, a row, the last row, the
	 * checksum. */
	off_t header = 312, offsets[] = {0, 8, 20, 96, header + 8 * 3 + 1, -1, header - 1};
	char entry[512];
	struct stat st;
	int fd = open(path, O_RDONLY);

	EXPECT(fd >= 0, "%s opens", path);
	if (fd < 0)
		return;
	EXPECT(!unwind_cache__key(fd, &key), "%s has a build-id", path);
	check_key(path, &key);
	EXPECT(!unwind_table__compile(fd, &compiled), "%s compiles", path);
	close(fd);
	EXPECT(unwind_cache__read(cache, &key, &read) == -ENOENT, "%s: no entry yet", path);
	EXPECT(!unwind_cache__write(cache, &key, &compiled), "%s: written", path);
	EXPECT(!unwind_cache__read(cache, &key, &read), "%s: read back", path);
	EXPECT(same_table(&compiled, &read), "%s: the rows read are those compiled (%zu, %zu)",
	       path, compiled.nr_rows, read.nr_rows);
	unwind_table__release(&read);
	other = key;
	other.file_size++;
	EXPECT(unwind_cache__read(cache, &other, &read) == -ENOENT,
	       "%s: another size is another key", path);

	entry_path(cache, &key, entry, sizeof(entry));
	EXPECT(!stat(entry, &st) && (st.st_mode & 0777) == 0600, "%s: entry mode %o", entry,
	       st.st_mode & 0777);
	EXPECT((uint64_t)st.st_size == header + compiled.nr_rows * 8, "%s: entry size", entry);
	for (size_t i = 0; i < sizeof(offsets) / sizeof(offsets[0]); i++) {
		off_t at = offsets[i] < 0 ? st.st_size + offsets[i] : offsets[i];

		flip_byte(entry, at);
		EXPECT(unwind_cache__read(cache, &key, &read) == -EBADMSG,
		       "%s: byte %lld flipped is refused", path, (long long)at);
		flip_byte(entry, at);
		EXPECT(!unwind_cache__read(cache, &key, &read) && same_table(&compiled, &read),
		       "%s: byte %lld restored reads again", path, (long long)at);
		unwind_table__release(&read);
	}
	EXPECT(!truncate(entry, st.st_size - 8), "truncate");
	EXPECT(unwind_cache__read(cache, &key, &read) == -EBADMSG, "%s: a short entry", path);
	EXPECT(!unwind_cache__write(cache, &key, &compiled), "%s: rewritten", path);
	chmod(entry, 0602);
	EXPECT(unwind_cache__read(cache, &key, &read) == -EBADMSG,
	       "%s: an entry others may write is refused", path);
	chmod(entry, 0600);
	EXPECT(!unwind_cache__read(cache, &key, &read) && same_table(&compiled, &read),
	       "%s: and read once it is not", path);
	unwind_table__release(&read);
	unwind_table__release(&compiled);
}

static void check_no_build_id(const char *path)
{
	struct unwind_cache_key key;
	int fd = open(path, O_RDONLY);

	EXPECT(fd >= 0 && unwind_cache__key(fd, &key) == -ENOENT, "%s: no build-id, no key", path);
	if (fd >= 0)
		close(fd);
}

static void check_directory_refused(void)
{
	char dir[256];
	struct unwind_cache *cache;

	snprintf(dir, sizeof(dir), "%s/shared", root);
	EXPECT(!mkdir(dir, 0700) && !chmod(dir, 0777), "mkdir %s", dir);
	EXPECT(unwind_cache__open(dir, UNWIND_CACHE_MAX_BYTES, &cache) == -EPERM,
	       "a world-writable directory is refused");
	chmod(dir, 0770);
	EXPECT(unwind_cache__open(dir, UNWIND_CACHE_MAX_BYTES, &cache) == -EPERM,
	       "a group-writable directory is refused");
	chmod(dir, 0700);
	if (geteuid() == 0) {
		EXPECT(!chown(dir, 65534, 65534), "chown %s", dir);
		EXPECT(unwind_cache__open(dir, UNWIND_CACHE_MAX_BYTES, &cache) == -EPERM,
		       "another user's directory is refused");
		/* Nothing of root's made inside another user's directory. */
		strcat(dir, "/cache");
		EXPECT(unwind_cache__open(dir, UNWIND_CACHE_MAX_BYTES, &cache) == -EACCES &&
			   access(dir, F_OK),
		       "no cache made in another user's directory");
	}
	EXPECT(!unwind_cache__open(root, UNWIND_CACHE_MAX_BYTES, &cache), "one's own is used");
	unwind_cache__close(cache);
	/* A relative LLMPROF_CACHE_DIR, made with its parent. */
	int cwd = open(".", O_RDONLY | O_DIRECTORY);
	EXPECT(!chdir(root) &&
		   !unwind_cache__open("relative/cache", UNWIND_CACHE_MAX_BYTES, &cache),
	       "a relative directory is made and used");
	unwind_cache__close(cache);
	EXPECT(cwd >= 0 && !fchdir(cwd), "back to the working directory");
	close(cwd);
}

/* Three entries of one size with room for two: the least recently used
 * (written second, the first read since) goes. */
static void check_bound(const char *path)
{
	struct unwind_table table, read;
	struct unwind_cache_key keys[3];
	struct unwind_cache *cache;
	char dir[256], entry[512];
	uint64_t size;
	int fd = open(path, O_RDONLY);

	if (fd < 0 || unwind_cache__key(fd, &keys[0]) || unwind_table__compile(fd, &table)) {
		EXPECT(false, "%s compiles", path);
		return;
	}
	close(fd);
	size = 312 + table.nr_rows * 8;
	snprintf(dir, sizeof(dir), "%s/bounded", root);
	EXPECT(!unwind_cache__open(dir, 2 * size + 100, &cache), "%s opens", dir);
	for (int i = 1; i < 3; i++) {
		keys[i] = keys[0];
		keys[i].file_size += i;
	}
	EXPECT(!unwind_cache__write(cache, &keys[0], &table), "first");
	usleep(20000);
	EXPECT(!unwind_cache__write(cache, &keys[1], &table), "second");
	usleep(20000);
	EXPECT(!unwind_cache__read(cache, &keys[0], &read), "first read");
	unwind_table__release(&read);
	usleep(20000);
	EXPECT(!unwind_cache__write(cache, &keys[2], &table), "third");
	for (int i = 0; i < 3; i++) {
		entry_path(cache, &keys[i], entry, sizeof(entry));
		EXPECT(!access(entry, F_OK) == (i != 1), "entry %d %s", i,
		       i == 1 ? "removed" : "kept");
	}
	unwind_cache__close(cache);
	unwind_table__release(&table);
}

/* Four writers rewrite one entry while this process reads it: every read
 * finds a whole entry. */
static void check_racing_writers(const char *path)
{
	struct unwind_table table, read;
	struct unwind_cache_key key;
	struct unwind_cache *cache;
	pid_t writers[4];
	char dir[256];
	int fd = open(path, O_RDONLY), bad = 0, whole = 0;

	if (fd < 0 || unwind_cache__key(fd, &key) || unwind_table__compile(fd, &table)) {
		EXPECT(false, "%s compiles", path);
		return;
	}
	close(fd);
	snprintf(dir, sizeof(dir), "%s/raced", root);
	EXPECT(!unwind_cache__open(dir, UNWIND_CACHE_MAX_BYTES, &cache), "%s opens", dir);
	for (int i = 0; i < 4; i++) {
		writers[i] = fork();
		if (!writers[i]) {
			for (int k = 0; k < 50; k++)
				if (unwind_cache__write(cache, &key, &table))
					_exit(1);
			_exit(0);
		}
	}
	for (int k = 0; k < 400; k++) {
		int err = unwind_cache__read(cache, &key, &read);

		if (!err)
			whole += same_table(&table, &read);
		bad += err && err != -ENOENT;
		bad += !err && !same_table(&table, &read);
		unwind_table__release(&read);
	}
	for (int i = 0; i < 4; i++) {
		int status;

		waitpid(writers[i], &status, 0);
		EXPECT(WIFEXITED(status) && !WEXITSTATUS(status), "writer %d", i);
	}
	EXPECT(!bad && whole > 0, "%d reads saw half an entry, %d a whole one", bad, whole);
	unwind_cache__close(cache);
	unwind_table__release(&table);
}

/*
 * --check DIR MAPS: every file with execute mappings in MAPS (a copy of
 * /proc/PID/maps) that has an entry in DIR: the entry's rows are those the
 * compiler gives the file now.  Says how many were checked.
 */
static int check_entries(const char *dir, const char *maps)
{
	char line[4096], path[256], seen[512][256];
	struct unwind_cache *cache;
	size_t nr_seen = 0, checked = 0, missing = 0, no_key = 0;
	FILE *f = fopen(maps, "r");

	if (!f || unwind_cache__open(dir, UNWIND_CACHE_MAX_BYTES, &cache)) {
		fprintf(stderr, "cannot read %s or %s\n", maps, dir);
		return 1;
	}
	while (fgets(line, sizeof(line), f)) {
		struct unwind_table compiled, read;
		struct unwind_cache_key key;
		char perms[8];
		bool dup = false;
		int fd;

		if (sscanf(line, "%*s %7s %*s %*s %*s %255s", perms, path) != 2 ||
		    perms[2] != 'x' || path[0] != '/')
			continue;
		for (size_t i = 0; i < nr_seen && !dup; i++)
			dup = !strcmp(seen[i], path);
		if (dup || nr_seen == 512)
			continue;
		memcpy(seen[nr_seen++], path, sizeof(path));
		fd = open(path, O_RDONLY);
		if (fd < 0 || unwind_cache__key(fd, &key)) {
			no_key++;
			if (fd >= 0)
				close(fd);
			continue;
		}
		if (unwind_cache__read(cache, &key, &read)) {
			missing++;
			close(fd);
			continue;
		}
		EXPECT(!unwind_table__compile(fd, &compiled) && same_table(&compiled, &read),
		       "%s: the entry's rows are the compiler's (%zu, %zu rows)", path,
		       compiled.nr_rows, read.nr_rows);
		checked++;
		close(fd);
		unwind_table__release(&compiled);
		unwind_table__release(&read);
	}
	fclose(f);
	unwind_cache__close(cache);
	printf("%zu files' entries checked against the compiler (%zu files without one, %zu "
	       "without a build-id)\n",
	       checked, missing, no_key);
	return failures || !checked ? 1 : 0;
}

int main(int argc, char **argv)
{
	struct unwind_cache *cache;
	char dir[256], cmd[300];
	struct stat st;

	if (argc == 4 && !strcmp(argv[1], "--check"))
		return check_entries(argv[2], argv[3]);
	if (argc < 3) {
		fprintf(stderr, "usage: %s NO_BUILD_ID_ELF ELF... | --check DIR MAPS\n", argv[0]);
		return 2;
	}
	if (!mkdtemp(root)) {
		perror("mkdtemp");
		return 1;
	}
	/* Created with its missing parents, 0700. */
	snprintf(dir, sizeof(dir), "%s/a/b", root);
	setenv("LLMPROF_CACHE_DIR", dir, 1);
	char resolved[256];
	EXPECT(!unwind_cache__default_dir(resolved, sizeof(resolved)) && !strcmp(resolved, dir),
	       "LLMPROF_CACHE_DIR names the directory");
	EXPECT(!unwind_cache__open(dir, UNWIND_CACHE_MAX_BYTES, &cache), "%s opens", dir);
	EXPECT(!stat(dir, &st) && (st.st_mode & 0777) == 0700, "%s mode %o", dir,
	       st.st_mode & 0777);
	check_no_build_id(argv[1]);
	for (int i = 2; i < argc; i++)
		check_file(cache, argv[i]);
	unwind_cache__close(cache);
	check_directory_refused();
	check_bound(argv[2]);
	check_racing_writers(argv[argc - 1]);

	snprintf(cmd, sizeof(cmd), "rm -rf %s", root);
	if (system(cmd))
		fprintf(stderr, "could not remove %s\n", root);
	if (failures)
		fprintf(stderr, "%d failures\n", failures);
	return failures ? 1 : 0;
}
