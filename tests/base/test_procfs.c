// SPDX-License-Identifier: GPL-2.0
/*
 * lib/base/procfs.c against the kernel's own files: this process's maps
 * with a mapped file whose name holds spaces and that is then deleted,
 * its stat beside getppid() and times(), comm and cmdline as set; maps
 * held for several readers; and hostile maps text: long lines, lines without a path, garbage.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include "base/procfs.h"
#include "check.h"

struct find_ctx {
	const char *path;
	uint64_t start;
	struct stat st;
	int found, found_deleted;
};

static int find_file(const struct procfs_mapping *m, void *arg)
{
	struct find_ctx *ctx = arg;
	char want[4200];

	if (m->start != ctx->start)
		return 0;
	snprintf(want, sizeof(want), "%s (deleted)", ctx->path);
	if (!strcmp(m->path, ctx->path) && !m->deleted)
		ctx->found++;
	else if (!strcmp(m->path, want) && m->deleted)
		ctx->found_deleted++;
	CHECK(m->inode == ctx->st.st_ino, "inode %llu, stat says %llu",
	      (unsigned long long)m->inode, (unsigned long long)ctx->st.st_ino);
	CHECK(makedev(m->major, m->minor) == ctx->st.st_dev, "device %u:%u", m->major, m->minor);
	CHECK(!strcmp(m->perms, "r--s"), "perms %s", m->perms);
	CHECK(m->offset == 4096, "offset %llu", (unsigned long long)m->offset);
	return 0;
}

/* A file named with spaces, mapped at offset 4096, read back from the
 * kernel's maps before and after it is deleted. */
static void test_own_maps(void)
{
	char dir[] = "/tmp/procfs-test.XXXXXX", path[4200];
	struct find_ctx ctx = {.path = path};
	struct procfs_maps maps;
	struct procfs_mapping m;
	int fd, n = 0, err;
	void *addr;

	if (!mkdtemp(dir)) {
		CHECK(0, "mkdtemp: %s", strerror(errno));
		return;
	}
	snprintf(path, sizeof(path), "%s/a file with  spaces (1).so", dir);
	fd = open(path, O_RDWR | O_CREAT | O_TRUNC, 0600);
	CHECK(fd >= 0 && !ftruncate(fd, 8192), "cannot create %s", path);
	addr = mmap(NULL, 4096, PROT_READ, MAP_SHARED, fd, 4096);
	CHECK(addr != MAP_FAILED, "mmap: %s", strerror(errno));
	fstat(fd, &ctx.st);
	ctx.start = (uintptr_t)addr;
	err = procfs__for_each_mapping("/proc/self/maps", find_file, &ctx);
	CHECK(!err && ctx.found == 1 && !ctx.found_deleted, "mapped file found %d times (err %d)",
	      ctx.found, err);
	unlink(path);
	ctx.found = 0;
	err = procfs__for_each_mapping("/proc/self/maps", find_file, &ctx);
	CHECK(!err && !ctx.found && ctx.found_deleted == 1, "deleted file found %d times",
	      ctx.found_deleted);

	/* The iterator sees the same lines as the file has. */
	CHECK(!procfs_maps__open(&maps, "/proc/self/maps"), "open maps");
	while ((err = procfs_maps__next(&maps, &m)) > 0)
		n++;
	procfs_maps__close(&maps);
	CHECK(!err && n > 5, "%d mappings, err %d", n, err);
	CHECK(procfs_maps__open(&maps, "/proc/999999999/maps") == -ENOENT, "absent process");
	munmap(addr, 4096);
	close(fd);
	rmdir(dir);
}

/* Mappings in /proc/PID/maps of this process at addr. */
static int count_at(uintptr_t addr)
{
	char path[64];
	struct procfs_maps maps;
	struct procfs_mapping m;
	int n = 0, err;

	snprintf(path, sizeof(path), "/proc/%d/maps", getpid());
	if (procfs_maps__open(&maps, path))
		return -1;
	while ((err = procfs_maps__next(&maps, &m)) > 0)
		n += m.start == addr;
	procfs_maps__close(&maps);
	return err ? -1 : n;
}

/* While held, a process's maps read as they were when held (nested holds
 * included); after the last release, as they are. */
static void test_hold_maps(void)
{
	size_t page = sysconf(_SC_PAGESIZE);
	void *addr = mmap(NULL, page, PROT_READ, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	uintptr_t at = (uintptr_t)addr;

	CHECK(addr != MAP_FAILED, "mmap: %s", strerror(errno));
	CHECK(!procfs__hold_maps(getpid()), "hold");
	CHECK(count_at(at) == 1, "the mapping is in the held text");
	munmap(addr, page);
	CHECK(count_at(at) == 1, "the held text changed with the process");
	CHECK(!procfs__hold_maps(getpid()), "nested hold");
	CHECK(procfs__hold_maps(getppid()) == -EBUSY, "another process's hold while one is held");
	procfs__release_maps();
	CHECK(count_at(at) == 1, "released by the inner release");
	procfs__release_maps();
	CHECK(count_at(at) == 0, "still held after the last release");
	procfs__release_maps(); /* one too many: nothing happens */
	CHECK(count_at(at) == 0, "an extra release");
	CHECK(procfs__hold_maps(999999999) == -ENOENT, "hold of an absent process");
	CHECK(count_at(at) == 0, "a failed hold holds nothing");
}

static void test_hostile_lines(void)
{
	char path[] = "/tmp/procfs-maps.XXXXXX", *long_path = malloc(20001);
	static const char *const bad[] = {
	    "",
	    "\n",
	    "garbage",
	    "7f00-7f10",
	    "7f00-7f10 r-xp",
	    "7f00-7f10 r-x 0 00:00 0",
	    "7f00-7f10 r-xp zz 08:01 5 /x",
	    "7f00-7f10 r-xp 0 08:01 five /x",
	    "-7f10 r-xp 0 0:0 0",
	};
	struct procfs_mapping m;
	struct procfs_maps maps;
	char line[256];
	int fd = mkstemp(path), n = 0, err;
	FILE *f = fdopen(fd, "w");

	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		snprintf(line, sizeof(line), "%s", bad[i]);
		CHECK(procfs__parse_mapping(line, &m) == -EINVAL, "accepted '%s'", bad[i]);
	}
	snprintf(line, sizeof(line), "7ffd1000-7ffd3000 rw-p 00000000 00:00 0");
	CHECK(!procfs__parse_mapping(line, &m) && !m.path[0] && !m.inode && m.start == 0x7ffd1000 &&
		  m.end == 0x7ffd3000,
	      "anonymous line without trailing spaces");
	snprintf(line, sizeof(line),
		 "ffffffffff600000-ffffffffff601000 --xp 00000000 00:00 0"
		 "                  [vsyscall]\n");
	CHECK(!procfs__parse_mapping(line, &m) && !strcmp(m.path, "[vsyscall]") &&
		  m.start == 0xffffffffff600000ULL && !strcmp(m.perms, "--xp"),
	      "vsyscall line: '%s'", m.path);
	snprintf(line, sizeof(line),
		 "55d0c000-55d0d000 r-xp 0001a000 fd:01 123456789 /opt/my lib/libx.so (deleted)");
	CHECK(!procfs__parse_mapping(line, &m) && m.deleted && m.major == 0xfd && m.minor == 1 &&
		  m.inode == 123456789 && m.offset == 0x1a000 &&
		  !strcmp(m.path, "/opt/my lib/libx.so (deleted)"),
	      "deleted path with a space: '%s'", m.path);

	/* A 20000-byte path between two ordinary lines, and a last line
	 * without its newline. */
	memset(long_path, 'a', 20000);
	long_path[0] = '/';
	long_path[20000] = '\0';
	fprintf(f, "1000-2000 r-xp 00000000 08:01 7 /usr/lib/libc.so.6\n");
	fprintf(f, "2000-3000 r-xp 00000000 08:01 8 %s\n", long_path);
	fprintf(f, "not a maps line\n");
	fprintf(f, "3000-4000 r-xp 00000000 08:01 9 /last");
	fclose(f);
	CHECK(!procfs_maps__open(&maps, path), "open");
	while ((err = procfs_maps__next(&maps, &m)) > 0) {
		n++;
		if (m.inode == 8)
			CHECK(!strcmp(m.path, long_path), "long path cut to %zu", strlen(m.path));
		if (m.inode == 9)
			CHECK(!strcmp(m.path, "/last"), "last line '%s'", m.path);
	}
	procfs_maps__close(&maps);
	CHECK(!err && n == 3, "%d lines", n);
	unlink(path);
	free(long_path);
}

static void test_stat_comm_cmdline(const char *argv0)
{
	struct procfs_stat st;
	char comm[64], cmdline[4096], text[512];
	ssize_t n;

	CHECK(!procfs__stat(getpid(), 0, &st), "own stat");
	CHECK(st.state == 'R', "state %c", st.state);
	CHECK(st.ppid == getppid(), "ppid %d, getppid() %d", st.ppid, getppid());
	CHECK(!procfs__stat(getpid(), getpid(), &st) && st.ppid == getppid(), "task stat");
	CHECK(procfs__stat(999999999, 0, &st) == -ENOENT, "absent process");

	/* A name with spaces and parentheses, as prctl sets it. */
	prctl(PR_SET_NAME, "a) (b c) 1 2");
	CHECK(!procfs__read_comm(getpid(), comm, sizeof(comm)) && !strcmp(comm, "a) (b c) 1 2"),
	      "comm '%s'", comm);
	CHECK(!procfs__stat(getpid(), 0, &st) && st.ppid == getppid() && st.state == 'R',
	      "stat after the name changed: ppid %d", st.ppid);
	CHECK(procfs__read_comm(999999999, comm, sizeof(comm)) == -ENOENT && !comm[0], "no comm");

	/* Fields past the name, as proc(5) numbers them. */
	snprintf(text, sizeof(text),
		 "42 (x) y) Z 7 8 9 10 -1 4194560 11 12 13 14 150 160 17 18 20 0 1 0 2200 5 6\n");
	CHECK(!procfs__parse_stat(text, &st) && st.state == 'Z' && st.ppid == 7 &&
		  st.flags == 4194560 && st.utime == 150 && st.stime == 160 && st.starttime == 2200,
	      "parsed stat");
	CHECK(procfs__parse_stat("42 (x", &st) == -EINVAL, "no closing parenthesis");
	CHECK(procfs__parse_stat("42 (x) R 1 2", &st) == -EINVAL, "cut short");

	n = procfs__read_cmdline(getpid(), cmdline, sizeof(cmdline));
	CHECK(n > 0 && !strncmp(cmdline, argv0, strlen(argv0)) &&
		  !strcmp(cmdline + strlen(argv0), " first arg"),
	      "cmdline '%s'", cmdline);
	n = procfs__read_cmdline(getpid(), cmdline, 5);
	CHECK(n == 4 && strlen(cmdline) == 4, "cmdline cut to %zd", n);
}

int main(int argc, char **argv)
{
	/* main() runs again with arguments, for cmdline. */
	if (argc < 2) {
		execl("/proc/self/exe", argv[0], "first arg", NULL);
		perror("exec");
		return 1;
	}
	test_own_maps();
	test_hold_maps();
	test_hostile_lines();
	test_stat_comm_cmdline(argv[0]);
	if (failures)
		return 1;
	printf("procfs: all checks passed\n");
	return 0;
}
