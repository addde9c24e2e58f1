// SPDX-License-Identifier: GPL-2.0
/*
 * Output files that appear whole or not at all: a temporary file beside the
 * destination (through its symbolic links), renamed over it on commit; or,
 * for standard output, open descriptors, devices and FIFOs, the destination
 * itself.  Writes go through a stdio cookie so that the errno of the write
 * that failed survives to the message.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <time.h>
#include <unistd.h>

#include "profile/output.h"
#include "status.h"

#define MAX_LINK_HOPS 40
#define TEMP_MARK ".llmprof-tmp-"
#define TEMP_RANDOM "XXXXXX"
/* A temporary file this old that no one holds locked was left by a killed
 * run; a running one locks its own within microseconds of creating it. */
#define STALE_TEMP_AGE_S 60
#define OUTPUT_BUFFER_SIZE (64 * 1024)

static ssize_t cookie_write(void *cookie, const char *buf, size_t size)
{
	struct output_file *file = cookie;
	size_t done = 0;

	/* After a failure nothing more is written: not a hole in a file, not
	 * half a profile into a pipe on abort. */
	if (file->write_error)
		return -1;
	while (done < size) {
		ssize_t n = write(file->fd, buf + done, size - done);

		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0) {
			file->write_error = n < 0 ? -errno : -EIO;
			return -1;
		}
		done += n;
	}
	return size;
}

static int open_stream(struct output_file *file, int fd, bool own_fd)
{
	static const cookie_io_functions_t functions = {.write = cookie_write};

	file->fd = fd;
	file->own_fd = own_fd;
	file->stream = fopencookie(file, "w", functions);
	if (!file->stream)
		return errno ? -errno : -ENOMEM;
	setvbuf(file->stream, NULL, _IOFBF, OUTPUT_BUFFER_SIZE);
	return 0;
}

/* The directory part of path, "." when it has none. */
static char *directory_of(const char *path)
{
	const char *slash = strrchr(path, '/');

	if (!slash)
		return strdup(".");
	if (slash == path)
		return strdup("/");
	return strndup(path, slash - path);
}

/*
 * The descriptor path names when its directory is a process's fd directory
 * in /proc (/dev/stdout, /dev/fd/N and /proc/self/fd/N all end there):
 * returns 1 and *fd for one of ours, 1 and -1 for another process's, 0 when
 * path is no such name.  These are magic links: what readlink() says is no
 * path to rename over.
 */
static int names_descriptor(const char *path, int *fd)
{
	char *dir = directory_of(path), *real = dir ? realpath(dir, NULL) : NULL;
	const char *base = strrchr(path, '/');
	char own[64];
	long number;
	char *end;
	int found = 0;

	*fd = -1;
	if (real && !strncmp(real, "/proc/", 6)) {
		size_t len = strlen(real);

		found = len >= 3 && !strcmp(real + len - 3, "/fd");
		snprintf(own, sizeof(own), "/proc/%d/fd", (int)getpid());
		base = base ? base + 1 : path;
		errno = 0;
		number = strtol(base, &end, 10);
		if (found && !strcmp(real, own) && !errno && end != base && !*end && number >= 0 &&
		    number <= INT_MAX)
			*fd = number;
	}
	free(real);
	free(dir);
	return found;
}

/* Where a link points, relative text taken from the link's directory. */
static char *follow_link(const char *link)
{
	char text[PATH_MAX], *dir, *out = NULL;
	ssize_t n = readlink(link, text, sizeof(text) - 1);

	if (n < 0)
		return NULL;
	text[n] = '\0';
	if (text[0] == '/' || !strchr(link, '/'))
		return strdup(text);
	dir = directory_of(link);
	if (dir && asprintf(&out, "%s/%s", strcmp(dir, "/") ? dir : "", text) < 0)
		out = NULL;
	free(dir);
	return out;
}

enum destination {
	DESTINATION_FILE,	/* replace *target (which may not exist yet) */
	DESTINATION_IN_PLACE,	/* open path itself and write into it */
	DESTINATION_DESCRIPTOR, /* write into our own descriptor *fd */
};

/*
 * Follows the final component of path through symbolic links, as open()
 * would, to what is to be written.  Returns a destination or -errno; *st is
 * the existing target's, st->st_nlink 0 when it does not exist yet.
 */
static int resolve_destination(const char *path, char **target, struct stat *st, int *fd)
{
	char *current = strdup(path), *next;
	int err;

	*target = NULL;
	for (int hops = 0;; hops++) {
		if (!current)
			return -ENOMEM;
		if (names_descriptor(current, fd)) {
			free(current);
			return *fd >= 0 ? DESTINATION_DESCRIPTOR : DESTINATION_IN_PLACE;
		}
		if (lstat(current, st)) {
			err = -errno;
			if (err != -ENOENT) {
				free(current);
				return err;
			}
			/* A new file, or a dangling link's target: '>' creates it. */
			memset(st, 0, sizeof(*st));
			*target = current;
			return DESTINATION_FILE;
		}
		if (!S_ISLNK(st->st_mode))
			break;
		if (hops == MAX_LINK_HOPS) {
			free(current);
			return -ELOOP;
		}
		next = follow_link(current);
		err = errno;
		free(current);
		if (!next)
			return err == ENOMEM || !err ? -ENOMEM : -err;
		current = next;
	}
	if (S_ISDIR(st->st_mode)) {
		free(current);
		return -EISDIR;
	}
	if (!S_ISREG(st->st_mode)) {
		free(current);
		return DESTINATION_IN_PLACE;
	}
	*target = current;
	return DESTINATION_FILE;
}

/* Whether name is one of our temporary names for base (or the short one). */
static bool is_temp_name(const char *name, const char *base)
{
	size_t len = strlen(name), base_len = strlen(base);
	size_t tail = strlen(TEMP_MARK) + strlen(TEMP_RANDOM);

	if (len == tail)
		return !strncmp(name, TEMP_MARK, strlen(TEMP_MARK));
	return len == 1 + base_len + tail && name[0] == '.' && !strncmp(name + 1, base, base_len) &&
	       !strncmp(name + 1 + base_len, TEMP_MARK, strlen(TEMP_MARK));
}

/* Removes the temporary files of base in dir that a killed llmprof left:
 * old, and locked by no one (a running llmprof locks its own). */
static void remove_stale_temps(const char *dir, const char *base)
{
	DIR *d = opendir(dir);
	struct dirent *entry;
	time_t now = time(NULL);

	if (!d)
		return;
	while ((entry = readdir(d))) {
		struct stat st;
		int fd;

		if (!is_temp_name(entry->d_name, base))
			continue;
		fd =
		    openat(dirfd(d), entry->d_name, O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK);
		if (fd < 0)
			continue;
		if (!fstat(fd, &st) && S_ISREG(st.st_mode) &&
		    st.st_mtime < now - STALE_TEMP_AGE_S && !flock(fd, LOCK_EX | LOCK_NB) &&
		    !unlinkat(dirfd(d), entry->d_name, 0))
			status__debug("removed %s/%s, left by a killed llmprof", dir,
				      entry->d_name);
		close(fd);
	}
	closedir(d);
}

/* Checks the directory the temporary file goes into: a read-only file
 * system fails now, little free space is a warning. */
static int check_directory(const char *dir, const char *path)
{
	struct statvfs vfs;
	unsigned long long free_bytes;

	if (statvfs(dir, &vfs))
		return -errno;
	if (vfs.f_flag & ST_RDONLY)
		return -EROFS;
	free_bytes = (unsigned long long)vfs.f_bavail * vfs.f_frsize;
	if (free_bytes < OUTPUT_LOW_SPACE)
		status__warn("only %llu KiB free on the file system of '%s'; the profile may not "
			     "fit",
			     free_bytes / 1024, path);
	return 0;
}

/* Creates the temporary file for target, mode and owner those of the file
 * it replaces (st, when st->st_nlink). */
static int create_temp(struct output_file *file, const char *target, const struct stat *st)
{
	const char *slash = strrchr(target, '/');
	const char *base = slash ? slash + 1 : target;
	int dir_len = slash ? (int)(slash - target + 1) : 0;
	size_t long_len = 1 + strlen(base) + strlen(TEMP_MARK TEMP_RANDOM);
	char *dir = directory_of(target);
	long name_max;
	int fd, err;

	if (!dir)
		return -ENOMEM;
	err = check_directory(dir, file->path);
	/* Like '>': an existing file we may not write is refused (root may). */
	if (!err && st->st_nlink && faccessat(AT_FDCWD, target, W_OK, AT_EACCESS))
		err = -errno;
	if (err)
		goto out;
	remove_stale_temps(dir, base);
	name_max = pathconf(dir, _PC_NAME_MAX);
	if (name_max <= 0)
		name_max = NAME_MAX;
	if ((long)long_len <= name_max)
		err = asprintf(&file->temp_path, "%.*s.%s" TEMP_MARK TEMP_RANDOM, dir_len, target,
			       base);
	else
		err = asprintf(&file->temp_path, "%.*s" TEMP_MARK TEMP_RANDOM, dir_len, target);
	if (err < 0) {
		file->temp_path = NULL;
		err = -ENOMEM;
		goto out;
	}
	fd = mkostemp(file->temp_path, O_CLOEXEC);
	if (fd < 0) {
		err = -errno;
		free(file->temp_path);
		file->temp_path = NULL;
		goto out;
	}
	/* Held until the process ends: tells a later run it is not stale. */
	flock(fd, LOCK_EX | LOCK_NB);
	if (st->st_nlink) {
		if (geteuid() == 0 && fchown(fd, st->st_uid, st->st_gid))
			status__debug("cannot give %s its owner back: %s", file->path,
				      strerror(errno));
		fchmod(fd, st->st_mode & 07777);
	} else {
		/* mkostemp makes 0600; a new file should look like one made by
		 * '>'. */
		mode_t mask = umask(0);

		umask(mask);
		fchmod(fd, 0666 & ~mask);
	}
	err = open_stream(file, fd, true);
	if (err)
		close(fd);
out:
	free(dir);
	return err;
}

int output_file__open(struct output_file *file, const char *path)
{
	struct stat st;
	char *target;
	int fd, err;

	memset(file, 0, sizeof(*file));
	file->fd = -1;
	if (!path || !strcmp(path, "-")) {
		fflush(stdout);
		return open_stream(file, STDOUT_FILENO, false);
	}
	if (!path[0])
		return -ENOENT;
	if (path[strlen(path) - 1] == '/')
		return -EISDIR;
	err = resolve_destination(path, &target, &st, &fd);
	switch (err) {
	case DESTINATION_DESCRIPTOR:
		/* Written at the descriptor's offset, as '>>' or '>&N' would
		 * leave it; reopening would truncate or fail on a socket. */
		fd = fcntl(fd, F_DUPFD_CLOEXEC, 3);
		break;
	case DESTINATION_IN_PLACE:
		fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0666);
		break;
	case DESTINATION_FILE:
		file->path = target;
		err = create_temp(file, target, &st);
		if (err)
			output_file__abort(file);
		return err;
	default:
		return err;
	}
	if (fd < 0)
		return -errno;
	err = open_stream(file, fd, true);
	if (err)
		close(fd);
	return err;
}

int output_file__commit(struct output_file *file, int write_err)
{
	int err = write_err;

	if (!file->stream) {
		output_file__abort(file);
		return err ? err : -EINVAL;
	}
	if (fflush(file->stream) && !err)
		err = -EIO;
	if (fclose(file->stream) && !err)
		err = -EIO;
	file->stream = NULL;
	/* The writers see only the stream's error flag; the cause is here. */
	if (file->write_error && (!err || err == -EIO))
		err = file->write_error;
	if (!err && file->temp_path && fsync(file->fd) && errno != EINVAL)
		err = -errno;
	if (file->own_fd && close(file->fd) && !err)
		err = -errno;
	file->fd = -1;
	file->own_fd = false;
	if (!err && file->temp_path && rename(file->temp_path, file->path))
		err = -errno;
	if (err) {
		output_file__abort(file);
		return err;
	}
	free(file->temp_path);
	free(file->path);
	file->temp_path = NULL;
	file->path = NULL;
	return 0;
}

void output_file__abort(struct output_file *file)
{
	if (file->stream) {
		/* Buffered data is dropped, not written. */
		if (!file->write_error)
			file->write_error = -ECANCELED;
		fclose(file->stream);
	}
	file->stream = NULL;
	if (file->own_fd && file->fd >= 0)
		close(file->fd);
	file->fd = -1;
	file->own_fd = false;
	if (file->temp_path)
		unlink(file->temp_path);
	free(file->temp_path);
	free(file->path);
	file->temp_path = NULL;
	file->path = NULL;
}
