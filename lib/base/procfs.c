// SPDX-License-Identifier: GPL-2.0
/* Reading /proc files: maps, stat, comm, cmdline (see procfs.h). */
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "base/procfs.h"

#define DELETED_SUFFIX " (deleted)"
/* Read size for maps files: a torch process's are 100-200 KiB. */
#define MAPS_READ_BYTES (64 * 1024)

/* A hexadecimal or decimal field ending in one of the given characters. */
static bool parse_number(char **at, int base, const char *ends, bool allow_end, uint64_t *value)
{
	char *end;

	if (!((**at >= '0' && **at <= '9') ||
	      (base == 16 && ((**at | 0x20) >= 'a' && (**at | 0x20) <= 'f'))))
		return false;
	errno = 0;
	*value = strtoull(*at, &end, base);
	if (errno || (!*end ? !allow_end : !strchr(ends, *end)))
		return false;
	*at = end;
	return true;
}

int procfs__parse_mapping(char *line, struct procfs_mapping *m)
{
	uint64_t major, minor;
	char *at = line;
	size_t len;

	line[strcspn(line, "\n")] = '\0';
	if (!parse_number(&at, 16, "-", false, &m->start) ||
	    (at++, !parse_number(&at, 16, " ", false, &m->end)))
		return -EINVAL;
	at++;
	if (strlen(at) < 5 || at[4] != ' ')
		return -EINVAL;
	memcpy(m->perms, at, 4);
	m->perms[4] = '\0';
	at += 5;
	if (!parse_number(&at, 16, " ", false, &m->offset) ||
	    (at++, !parse_number(&at, 16, ":", false, &major)) ||
	    (at++, !parse_number(&at, 16, " ", false, &minor)) ||
	    (at++, !parse_number(&at, 10, " ", true, &m->inode)))
		return -EINVAL;
	/* A line without a path may end right after the inode. */
	while (*at == ' ')
		at++;
	m->major = major;
	m->minor = minor;
	m->path = at;
	len = strlen(at);
	m->deleted = len > strlen(DELETED_SUFFIX) &&
		     !strcmp(at + len - strlen(DELETED_SUFFIX), DELETED_SUFFIX);
	return 0;
}

/* The maps text this thread holds (procfs__hold_maps()). */
static __thread struct {
	char path[64];
	char *text;
	size_t len;
	unsigned int depth;
} held;

/* A whole /proc file into a buffer of its own: the kernel writes a maps
 * file a page or so per read, holding the process's memory map's lock
 * meanwhile, so the fewer reads the better. */
static int read_whole(const char *path, char **text, size_t *len)
{
	size_t cap = MAPS_READ_BYTES, n = 0;
	char *buf = malloc(cap);
	int fd, err = 0;

	if (!buf)
		return -ENOMEM;
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0) {
		free(buf);
		return -errno;
	}
	for (;;) {
		ssize_t got;

		if (n == cap) {
			char *p = realloc(buf, cap * 2);

			if (!p) {
				err = -ENOMEM;
				break;
			}
			buf = p;
			cap *= 2;
		}
		got = read(fd, buf + n, cap - n);
		if (got < 0 && errno == EINTR)
			continue;
		if (got < 0) {
			err = -errno;
			break;
		}
		if (!got)
			break;
		n += got;
	}
	close(fd);
	if (err) {
		free(buf);
		return err;
	}
	*text = buf;
	*len = n;
	return 0;
}

int procfs__hold_maps(pid_t pid)
{
	char path[sizeof(held.path)];
	int err;

	snprintf(path, sizeof(path), "/proc/%d/maps", (int)pid);
	if (held.depth) {
		if (strcmp(held.path, path))
			return -EBUSY;
		held.depth++;
		return 0;
	}
	err = read_whole(path, &held.text, &held.len);
	if (err)
		return err;
	memcpy(held.path, path, sizeof(path));
	held.depth = 1;
	return 0;
}

void procfs__release_maps(void)
{
	if (!held.depth || --held.depth)
		return;
	free(held.text);
	held.text = NULL;
	held.len = 0;
	held.path[0] = '\0';
}

int procfs_maps__open(struct procfs_maps *maps, const char *path)
{
	maps->line = NULL;
	maps->line_cap = 0;
	/* An empty text (a process gone) is read from the file as usual. */
	if (held.depth && held.len && !strcmp(path, held.path)) {
		maps->file = fmemopen(held.text, held.len, "r");
		return maps->file ? 0 : -errno;
	}
	maps->file = fopen(path, "re");
	if (!maps->file)
		return -errno;
	setvbuf(maps->file, NULL, _IOFBF, MAPS_READ_BYTES);
	return 0;
}

int procfs_maps__next(struct procfs_maps *maps, struct procfs_mapping *m)
{
	for (;;) {
		errno = 0;
		if (getline(&maps->line, &maps->line_cap, maps->file) < 0)
			return errno && errno != EOF ? -errno : 0;
		/* The last line may end without its newline. */
		if (!procfs__parse_mapping(maps->line, m))
			return 1;
	}
}

void procfs_maps__close(struct procfs_maps *maps)
{
	if (maps->file)
		fclose(maps->file);
	free(maps->line);
	maps->file = NULL;
	maps->line = NULL;
}

int procfs__for_each_mapping(const char *path, int (*fn)(const struct procfs_mapping *m, void *ctx),
			     void *ctx)
{
	struct procfs_maps maps;
	struct procfs_mapping m;
	int err = procfs_maps__open(&maps, path);

	while (!err && (err = procfs_maps__next(&maps, &m)) > 0)
		err = fn(&m, ctx);
	procfs_maps__close(&maps);
	return err;
}

ssize_t procfs__read_text(const char *path, char *buf, size_t size)
{
	size_t len = 0;
	ssize_t n = 0;
	int fd;

	if (!size)
		return -EINVAL;
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	while (len < size - 1 && (n = read(fd, buf + len, size - 1 - len)) > 0)
		len += n;
	n = n < 0 && !len ? -errno : 0;
	close(fd);
	buf[len] = '\0';
	return n < 0 ? n : (ssize_t)len;
}

int procfs__parse_stat(const char *text, struct procfs_stat *st)
{
	const char *at = strrchr(text, ')');
	unsigned long long field[20];
	char *end;

	/* After the name: " S ppid ..." with the state as field 3. */
	if (!at || at[1] != ' ' || !at[2] || at[3] != ' ')
		return -EINVAL;
	st->state = at[2];
	at += 3;
	/* Fields 4 to 22; the signed ones (tty_nr, tpgid) wrap, unread. */
	for (int i = 4; i <= 22; i++) {
		errno = 0;
		field[i - 4] = strtoull(at, &end, 10);
		if (end == at || errno || (*end != ' ' && *end != '\n' && *end))
			return -EINVAL;
		at = end;
	}
	st->ppid = field[4 - 4];
	st->flags = field[9 - 4];
	st->utime = field[14 - 4];
	st->stime = field[15 - 4];
	st->starttime = field[22 - 4];
	return 0;
}

int procfs__read_stat(const char *path, struct procfs_stat *st)
{
	char text[1024];
	ssize_t n = procfs__read_text(path, text, sizeof(text));

	if (n < 0)
		return n;
	return procfs__parse_stat(text, st);
}

int procfs__stat(pid_t pid, pid_t tid, struct procfs_stat *st)
{
	char path[64];

	if (tid > 0)
		snprintf(path, sizeof(path), "/proc/%d/task/%d/stat", pid, tid);
	else
		snprintf(path, sizeof(path), "/proc/%d/stat", pid);
	return procfs__read_stat(path, st);
}

ssize_t procfs__read_file(pid_t pid, const char *name, size_t max, char **text)
{
	char path[64];
	ssize_t n;

	*text = malloc(max + 1);
	if (!*text)
		return -ENOMEM;
	snprintf(path, sizeof(path), "/proc/%d/%s", pid, name);
	n = procfs__read_text(path, *text, max + 1);
	if (n < 0) {
		free(*text);
		*text = NULL;
	}
	return n;
}

int procfs__read_comm(pid_t pid, char *comm, size_t size)
{
	char path[64];
	ssize_t n;

	snprintf(path, sizeof(path), "/proc/%d/comm", pid);
	n = procfs__read_text(path, comm, size);
	if (n < 0) {
		if (size)
			comm[0] = '\0';
		return n;
	}
	comm[strcspn(comm, "\n")] = '\0';
	return 0;
}

ssize_t procfs__read_cmdline(pid_t pid, char *buf, size_t size)
{
	char path[64];
	ssize_t n;

	snprintf(path, sizeof(path), "/proc/%d/cmdline", pid);
	n = procfs__read_text(path, buf, size);
	if (n <= 0)
		return n;
	/* The arguments end in NULs, the last one too. */
	if (!buf[n - 1])
		n--;
	for (ssize_t i = 0; i < n; i++)
		if (!buf[i])
			buf[i] = ' ';
	buf[n] = '\0';
	return n;
}
