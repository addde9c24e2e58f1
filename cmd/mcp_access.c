// SPDX-License-Identifier: GPL-2.0
/*
 * What an agent may reach through llmprof mcp: no more than the user the
 * server serves.  Files only under the allowed directories (--root), opened
 * with openat2(RESOLVE_BENEATH) from each directory's descriptor, so that
 * '..', symbolic links and renames racing with us cannot lead out, and with
 * the user's ids switched in, so that a server running as root opens only
 * what the user could; processes only the user's own.  Each refusal is one
 * line naming the rule.
 */
#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <linux/openat2.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "mcp_private.h"

static int openat2_beneath(int dirfd, const char *path, int flags, mode_t mode)
{
	struct open_how how = {
	    .flags = flags | O_CLOEXEC,
	    .mode = mode,
	    .resolve = RESOLVE_BENEATH | RESOLVE_NO_MAGICLINKS,
	};

	return syscall(SYS_openat2, dirfd, path, &how, sizeof(how));
}

int mcp_access__become_user(const struct mcp_server *s)
{
	int err;

	if (!s->switch_ids)
		return 0;
	if (setgroups(s->user.nr_groups, s->user.groups) || setegid(s->user.gid) ||
	    seteuid(s->user.uid)) {
		err = -errno;
		mcp_access__become_self(s);
		return err;
	}
	return 0;
}

void mcp_access__become_self(const struct mcp_server *s)
{
	if (!s->switch_ids)
		return;
	/* Root's supplementary groups were cleared at start. */
	if (seteuid(0) || setegid(0) || setgroups(0, NULL))
		abort();
}

/* The roots, as "A, B" for messages. */
static void list_roots(const struct mcp_server *s, char *buf, size_t size)
{
	size_t at = 0;

	buf[0] = '\0';
	for (int i = 0; i < s->nr_roots && at < size; i++)
		at += snprintf(buf + at, size - at, "%s%s", i ? ", " : "", s->roots[i].given);
}

/* rest: path below the root whose prefix it has, without leading '/'. */
static const char *below(const char *path, const char *prefix)
{
	size_t len = strlen(prefix);

	if (!strcmp(prefix, "/"))
		len = 0;
	else if (strncmp(path, prefix, len) || (path[len] && path[len] != '/'))
		return NULL;
	while (path[len] == '/')
		len++;
	return path[len] ? path + len : ".";
}

/* Which root path is under, and the rest of it.  0 or -1 with why. */
static int find_root(const struct mcp_server *s, const char *path, const struct mcp_root **root,
		     const char **rest, char *absolute, char *why)
{
	char roots[256];

	if ((path[0] == '/' ? snprintf(absolute, PATH_MAX, "%s", path)
			    : snprintf(absolute, PATH_MAX, "%s/%s", s->cwd, path)) >= PATH_MAX) {
		snprintf(why, MCP_WHY_SIZE, "'%.200s': %s", path, strerror(ENAMETOOLONG));
		return -1;
	}
	for (int i = 0; i < s->nr_roots; i++) {
		*rest = below(absolute, s->roots[i].given);
		if (!*rest)
			*rest = below(absolute, s->roots[i].path);
		if (*rest) {
			*root = &s->roots[i];
			return 0;
		}
	}
	list_roots(s, roots, sizeof(roots));
	snprintf(why, MCP_WHY_SIZE,
		 "refused by --root: '%.200s' is not under an allowed directory (%s)", path, roots);
	return -1;
}

/* Why an open as the user failed, naming the rule that refused it. */
static void open_failure(const struct mcp_server *s, const char *path, int err, const char *verb,
			 char *why)
{
	if (err == EXDEV)
		snprintf(why, MCP_WHY_SIZE,
			 "refused by --root: '%.200s' leads outside the allowed directories "
			 "(through '..' or a symbolic link)",
			 path);
	else if (err == ELOOP)
		snprintf(why, MCP_WHY_SIZE,
			 "refused by --root: '%.200s' goes through a /proc link or too many "
			 "symbolic links",
			 path);
	else if (err == EACCES || err == EPERM)
		snprintf(why, MCP_WHY_SIZE,
			 "refused by the user's rights: %s (uid %u) may not %s '%.200s'",
			 s->user.name, (unsigned)s->user.uid, verb, path);
	else
		snprintf(why, MCP_WHY_SIZE, "cannot %s '%.200s': %s", verb, path, strerror(err));
}

/* Takes the user's ids for an open; -1 with the reason in why. */
static int become_user(struct mcp_server *s, char *why)
{
	int err = mcp_access__become_user(s);

	if (err)
		snprintf(why, MCP_WHY_SIZE, "cannot take the ids of %s: %s", s->user.name,
			 strerror(-err));
	return err ? -1 : 0;
}

int mcp_access__open_input(struct mcp_server *s, const char *path, int *out, char *why)
{
	char absolute[PATH_MAX];
	const struct mcp_root *root;
	const char *rest;
	struct stat st;
	int fd, err;

	if (find_root(s, path, &root, &rest, absolute, why))
		return -1;
	if (become_user(s, why))
		return -1;
	/* Non-blocking: a FIFO must not hang the server. */
	fd = openat2_beneath(root->fd, rest, O_RDONLY | O_NOCTTY | O_NONBLOCK, 0);
	err = errno;
	mcp_access__become_self(s);
	if (fd < 0) {
		open_failure(s, path, err, "read", why);
		return -1;
	}
	if (fstat(fd, &st) || !S_ISREG(st.st_mode) ||
	    fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) & ~O_NONBLOCK)) {
		snprintf(why, MCP_WHY_SIZE, "'%.200s' is not a regular file", path);
		close(fd);
		return -1;
	}
	*out = fd;
	return 0;
}

int mcp_access__open_parent(struct mcp_server *s, const char *path, int *dirfd,
			    char name[NAME_MAX + 1], char *why)
{
	char absolute[PATH_MAX], dir[PATH_MAX];
	const struct mcp_root *root;
	const char *rest, *slash;
	int err;

	if (find_root(s, path, &root, &rest, absolute, why))
		return -1;
	slash = strrchr(rest, '/');
	snprintf(dir, sizeof(dir), "%.*s", slash ? (int)(slash - rest) : 1, slash ? rest : ".");
	if (snprintf(name, NAME_MAX + 1, "%s", slash ? slash + 1 : rest) > NAME_MAX) {
		snprintf(why, MCP_WHY_SIZE, "'%.200s': %s", path, strerror(ENAMETOOLONG));
		return -1;
	}
	if (!name[0] || !strcmp(name, ".") || !strcmp(name, "..")) {
		snprintf(why, MCP_WHY_SIZE, "'%.200s' does not end in a file name", path);
		return -1;
	}
	if (become_user(s, why))
		return -1;
	*dirfd = openat2_beneath(root->fd, dir, O_PATH | O_DIRECTORY, 0);
	err = errno;
	mcp_access__become_self(s);
	if (*dirfd < 0) {
		open_failure(s, path, err, "write", why);
		return -1;
	}
	return 0;
}

int mcp_access__add_root(struct mcp_server *s, const char *dir, char *why)
{
	struct mcp_root *root = &s->roots[s->nr_roots];
	char resolved[PATH_MAX];

	if (s->nr_roots == MCP_MAX_ROOTS) {
		snprintf(why, MCP_WHY_SIZE, "at most %d directories", MCP_MAX_ROOTS);
		return -1;
	}
	if (!realpath(dir, resolved)) {
		snprintf(why, MCP_WHY_SIZE, "'%.200s': %s", dir, strerror(errno));
		return -1;
	}
	root->fd = open(resolved, O_PATH | O_DIRECTORY | O_CLOEXEC);
	if (root->fd < 0) {
		snprintf(why, MCP_WHY_SIZE, "'%.200s': %s", dir, strerror(errno));
		return -1;
	}
	root->path = strdup(resolved);
	if (dir[0] == '/')
		root->given = strdup(dir);
	else if (asprintf(&root->given, "%s/%s", s->cwd, dir) < 0)
		root->given = NULL;
	if (!root->path || !root->given) {
		close(root->fd);
		free(root->path);
		free(root->given);
		snprintf(why, MCP_WHY_SIZE, "%s", strerror(ENOMEM));
		return -1;
	}
	/* "dir/", "dir/." and "dir" are the same prefix. */
	for (size_t n = strlen(root->given); n > 1;) {
		if (root->given[n - 1] == '/')
			root->given[--n] = '\0';
		else if (n > 2 && !strcmp(root->given + n - 2, "/."))
			root->given[n -= 2] = '\0';
		else
			break;
	}
	if (!root->given[0])
		strcpy(root->given, "/");
	s->nr_roots++;
	return 0;
}

int mcp_access__temp_dir(struct mcp_server *s, char *path, size_t size, char *why)
{
	const char *tmp = getenv("TMPDIR");
	int err;

	snprintf(path, size, "%s/llmprof-mcp.XXXXXX", tmp && tmp[0] == '/' ? tmp : "/tmp");
	err = mcp_access__become_user(s);
	if (!err && !mkdtemp(path))
		err = -errno;
	mcp_access__become_self(s);
	if (err) {
		snprintf(why, MCP_WHY_SIZE, "cannot create a directory for profiles: %s",
			 strerror(-err));
		return -1;
	}
	return mcp_access__add_root(s, path, why);
}

/* A line of /proc/PID/status with up to 4 numbers; the count read. */
static int status_ids(const char *status, const char *key, unsigned long ids[4])
{
	const char *line = strstr(status, key);

	if (!line)
		return 0;
	return sscanf(line + strlen(key), "%lu %lu %lu %lu", &ids[0], &ids[1], &ids[2], &ids[3]);
}

int mcp_access__check_pid(const struct mcp_server *s, long pid, char *why)
{
	char path[64], status[4096];
	unsigned long uids[4], gids[4];
	struct stat st;
	ssize_t n;
	bool own;
	int fd;

	snprintf(path, sizeof(path), "/proc/%ld/status", pid);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0) {
		snprintf(why, MCP_WHY_SIZE, "no process with PID %ld", pid);
		return -1;
	}
	n = read(fd, status, sizeof(status) - 1);
	close(fd);
	snprintf(path, sizeof(path), "/proc/%ld", pid);
	if (n <= 0 || stat(path, &st)) {
		snprintf(why, MCP_WHY_SIZE, "no process with PID %ld", pid);
		return -1;
	}
	status[n] = '\0';
	if (s->any_process)
		return 0;
	for (int i = 0; i < s->nr_allowed_pids; i++)
		if (s->allowed_pids[i] == pid)
			return 0;
	/*
	 * As the kernel's ptrace access check asks: every uid the user's, every
	 * gid one of the user's groups, and /proc/PID the user's (a process
	 * that is not dumpable, e.g. a set-user-ID program, has it root's).
	 */
	own = status_ids(status, "\nUid:", uids) == 4 && status_ids(status, "\nGid:", gids) == 4 &&
	      st.st_uid == s->user.uid;
	if (status_ids(status, "\nUid:", uids) < 1)
		uids[0] = st.st_uid;
	for (int i = 0; own && i < 4; i++)
		own = uids[i] == s->user.uid && run_as__in_group(&s->user, gids[i]);
	if (own)
		return 0;
	snprintf(why, MCP_WHY_SIZE,
		 "refused by --any-process: PID %ld is not a process of %s (uid %u) but of uid "
		 "%u; the server profiles only the user's own processes",
		 pid, s->user.name, (unsigned)s->user.uid, (unsigned)uids[0]);
	return -1;
}

void mcp_access__close(struct mcp_server *s)
{
	for (int i = 0; i < s->nr_roots; i++) {
		close(s->roots[i].fd);
		free(s->roots[i].path);
		free(s->roots[i].given);
	}
	s->nr_roots = 0;
}
