// SPDX-License-Identifier: GPL-2.0
/*
 * The children that do llmprof mcp's work: this same binary run with
 * attach, record, report or diff, its standard input and output away from
 * the protocol's, so a failing or crashing profile never takes the server
 * down.  Files cross as descriptors the server opened with the user's
 * rights (/dev/fd/3...); report and diff run with the user's ids; a
 * recorded command runs with them through record --run-as.  A client that
 * hangs up stops the profile it asked for.
 */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include "mcp_private.h"
#include "profile/profile.h"
#include "profile/profile_reader.h"

#define MAX_REPLY_LINES 60
/* The most bytes of status lines a profile reply keeps before its brief. */
#define MAX_STATUS_BYTES 1536
#define MAX_FDS 2

struct child_result {
	int status; /* exit status, or 128 + signal */
	char *out;  /* what it wrote to stdout */
	char *err;  /* and to stderr */
};

struct child_spec {
	char **argv;	/* argv[0] unused */
	const int *fds; /* become 3, 4, ... in the child */
	int nr_fds;
	int stdout_fd;	   /* -1: captured */
	bool as_user;	   /* with the user's ids */
	bool watch_client; /* SIGINT to it when the client hangs up */
};

static void child_result__free(struct child_result *r)
{
	free(r->out);
	free(r->err);
	memset(r, 0, sizeof(*r));
}

static char *read_all(int fd)
{
	size_t size = 0, cap = 4096;
	char *buf = malloc(cap);
	ssize_t n;

	if (!buf)
		return NULL;
	while ((n = read(fd, buf + size, cap - size - 1)) != 0) {
		if (n < 0) {
			if (errno == EINTR)
				continue;
			break;
		}
		size += n;
		if (cap - size < 2) {
			char *bigger = realloc(buf, cap * 2);

			if (!bigger)
				break;
			buf = bigger;
			cap *= 2;
		}
	}
	buf[size] = '\0';
	return buf;
}

static void child_main(struct mcp_server *s, const struct child_spec *spec, int out_fd, int err_fd)
{
	int null = open("/dev/null", O_RDONLY | O_CLOEXEC), high[MAX_FDS], err;

	if (null < 0 || dup2(null, 0) < 0 ||
	    dup2(spec->stdout_fd >= 0 ? spec->stdout_fd : out_fd, 1) < 0 || dup2(err_fd, 2) < 0)
		_exit(127);
	/* Out of the way first, so that dup2 onto 3, 4 never meets itself
	 * (which would leave close-on-exec set). */
	for (int i = 0; i < spec->nr_fds; i++)
		if ((high[i] = fcntl(spec->fds[i], F_DUPFD_CLOEXEC, 64)) < 0)
			_exit(127);
	for (int i = 0; i < spec->nr_fds; i++)
		if (dup2(high[i], 3 + i) < 0)
			_exit(127);
	signal(SIGPIPE, SIG_DFL);
	/* A server that dies stops its profile, which then detaches. */
	prctl(PR_SET_PDEATHSIG, SIGTERM);
	if (spec->as_user) {
		err = run_as__enter(&s->user);
		if (err) {
			dprintf(2, "llmprof: error: cannot take the ids of %s: %s\n", s->user.name,
				strerror(-err));
			_exit(126);
		}
	}
	execv("/proc/self/exe", spec->argv);
	_exit(127);
}

/* Waits for pid; a client that hangs up meanwhile interrupts it. */
static int wait_child(struct mcp_server *s, pid_t pid, bool watch_client, int *wstatus)
{
	int pidfd = watch_client ? syscall(SYS_pidfd_open, pid, 0) : -1;

	while (pidfd >= 0) {
		struct pollfd fds[2] = {{.fd = pidfd, .events = POLLIN}, {.fd = s->in_fd}};
		int nfds = s->client_gone || s->in_fd < 0 ? 1 : 2;

		if (poll(fds, nfds, -1) < 0 && errno != EINTR)
			break;
		if (fds[0].revents)
			break;
		if (nfds == 2 && (fds[1].revents & (POLLHUP | POLLERR | POLLNVAL))) {
			s->client_gone = true;
			kill(pid, SIGINT);
		}
	}
	if (pidfd >= 0)
		close(pidfd);
	while (waitpid(pid, wstatus, 0) < 0)
		if (errno != EINTR)
			return -errno;
	return 0;
}

static int run_self(struct mcp_server *s, const struct child_spec *spec, struct child_result *r)
{
	char out_path[] = "/tmp/llmprof-mcp-out.XXXXXX";
	char err_path[] = "/tmp/llmprof-mcp-err.XXXXXX";
	int out_fd = mkostemp(out_path, O_CLOEXEC), err_fd = mkostemp(err_path, O_CLOEXEC);
	int err = 0, wstatus;
	pid_t pid;

	memset(r, 0, sizeof(*r));
	if (out_fd < 0 || err_fd < 0) {
		err = -errno;
		goto cleanup;
	}
	unlink(out_path);
	unlink(err_path);
	fflush(s->out);
	pid = fork();
	if (pid < 0) {
		err = -errno;
		goto cleanup;
	}
	if (pid == 0)
		child_main(s, spec, out_fd, err_fd);
	err = wait_child(s, pid, spec->watch_client, &wstatus);
	if (err)
		goto cleanup;
	r->status = WIFEXITED(wstatus) ? WEXITSTATUS(wstatus) : 128 + WTERMSIG(wstatus);
	lseek(out_fd, 0, SEEK_SET);
	lseek(err_fd, 0, SEEK_SET);
	r->out = read_all(out_fd);
	r->err = read_all(err_fd);
	if (!r->out || !r->err)
		err = -ENOMEM;
cleanup:
	if (out_fd >= 0)
		close(out_fd);
	if (err_fd >= 0)
		close(err_fd);
	return err;
}

/* text with every "/dev/fd/3" (3 + i) replaced by paths[i]; NULL on ENOMEM. */
static char *name_inputs(const char *text, const char *const *paths, int n)
{
	char *result = strdup(text);

	for (int i = 0; result && i < n; i++) {
		char from[16], *at, *next;
		size_t from_len = snprintf(from, sizeof(from), "/dev/fd/%d", 3 + i);
		size_t done = 0;

		/* From where the last replacement ended: a path may itself
		 * hold "/dev/fd/3". */
		while (result && (at = strstr(result + done, from))) {
			if (asprintf(&next, "%.*s%s%s", (int)(at - result), result, paths[i],
				     at + from_len) < 0)
				next = NULL;
			done = at - result + strlen(paths[i]);
			free(result);
			result = next;
		}
	}
	return result;
}

/* The child's one-line error ("llmprof: error: ..."), without the prefix. */
static json_t *child_error(const struct child_result *r, const char *const *paths, int n)
{
	const char *line = r->err ? strstr(r->err, "error: ") : NULL;
	char message[512];
	char *named;
	json_t *result;

	if (!line)
		return mcp__tool_error("llmprof exited with status %d", r->status);
	line += strlen("error: ");
	snprintf(message, sizeof(message), "%.*s", (int)strcspn(line, "\n"), line);
	named = name_inputs(message, paths, n);
	result = named ? mcp__tool_error("%s", named) : NULL;
	free(named);
	return result;
}

/* Whether a status line starts a table the brief holds in full: the top
 * functions by self time, the top findings. */
static bool brief_holds(const char *line)
{
	return !strncmp(line, "top functions by self time", 26) || !strncmp(line, "findings (", 10);
}

/* stderr of a profile run, as a reply: status lines without their prefix,
 * warnings kept, at most MAX_REPLY_LINES lines; with a brief, the tables
 * it holds left out and at most MAX_STATUS_BYTES of them, then the brief. */
static char *summary_text(const char *err, const char *brief, const char *extra)
{
	size_t cap = strlen(err) + (brief ? strlen(brief) : 0) + (extra ? strlen(extra) : 0) + 64;
	char *text = malloc(cap), *at = text;
	bool in_table = false;
	int lines = 0, left_out = 0;

	if (!text)
		return NULL;
	for (const char *line = err; *line && lines < MAX_REPLY_LINES;) {
		size_t len = strcspn(line, "\n");
		const char *next = line[len] ? line + len + 1 : line + len;

		if (!strncmp(line, "llmprof: ", 9)) {
			line += 9;
			len -= 9;
			in_table = brief && brief_holds(line);
		}
		if (in_table) {
			line = next;
			continue;
		}
		if (brief && (size_t)(at - text) + len + 1 > MAX_STATUS_BYTES) {
			left_out++;
			line = next;
			continue;
		}
		memcpy(at, line, len);
		at += len;
		*at++ = '\n';
		lines++;
		line = next;
	}
	if (left_out)
		at += sprintf(at, "(%d status lines left out)\n", left_out);
	*at = '\0';
	if (brief)
		strcat(at, brief);
	if (extra)
		strcat(at, extra);
	return text;
}

/* The brief of a written profile: llmprof report --brief, run with the
 * user's ids on the file opened with the user's rights.  Malloc'd, or NULL
 * where there is none (the reply then keeps the run's own tables). */
static char *profile_brief(struct mcp_server *s, const char *output)
{
	char *argv[] = {"llmprof", "report", "--brief", "--", "/dev/fd/3", NULL};
	struct child_spec spec = {.argv = argv, .nr_fds = 1, .stdout_fd = -1, .as_user = true};
	const char *const paths[] = {output};
	char why[MCP_WHY_SIZE], *brief = NULL;
	struct child_result r;
	int fd;

	if (mcp_access__open_input(s, output, &fd, why))
		return NULL;
	spec.fds = &fd;
	if (!run_self(s, &spec, &r) && !r.status)
		brief = name_inputs(r.out, paths, 1);
	close(fd);
	child_result__free(&r);
	return brief;
}

json_t *mcp_run__report(struct mcp_server *s, enum mcp_report_kind kind, char **argv,
			const int *fds, const char *const *paths, int nr_fds)
{
	struct child_spec spec = {
	    .argv = argv, .fds = fds, .nr_fds = nr_fds, .stdout_fd = -1, .as_user = true};
	struct child_result r;
	json_t *result = NULL;
	char *text = NULL, *named;

	if (run_self(s, &spec, &r))
		return mcp__tool_error("cannot run llmprof: %s", strerror(errno));
	/* diff exits 1 when something regressed: an answer, not a failure. */
	if (r.status > (kind == MCP_DIFF ? 1 : 0)) {
		result = child_error(&r, paths, nr_fds);
		goto cleanup;
	}
	named = name_inputs(r.out, paths, nr_fds);
	if (!named)
		goto cleanup;
	if (kind == MCP_REPORT) {
		result = mcp__text_result(named);
		free(named);
		goto cleanup;
	}
	if (asprintf(&text, "%s\n%s",
		     r.status ? "REGRESSION: a share grew past the threshold and beyond sampling "
				"noise (listed with !)"
			      : "no regression: no share grew past the threshold",
		     named) < 0)
		text = NULL;
	free(named);
	if (!text)
		goto cleanup;
	result = mcp__text_result(text);
	if (result)
		json_object_set_new(result, "structuredContent",
				    json_pack("{s:b}", "regression", r.status == 1));
cleanup:
	free(text);
	child_result__free(&r);
	return result;
}

/* Whether fd holds a profile (or nothing), which may be replaced. */
static bool is_profile(int fd)
{
	struct profile_read_options options = {0};
	struct profile_read_result result;
	struct profile *profile = NULL;
	struct stat st;
	FILE *stream;
	int err;

	if (fstat(fd, &st) || !S_ISREG(st.st_mode))
		return false;
	if (!st.st_size)
		return true;
	stream = fdopen(fd, "r");
	if (!stream)
		return false;
	err = profile_reader__read_stream(stream, &options, &profile, &result);
	fclose(stream);
	profile__free(profile);
	return !err;
}

/* The profile's temporary file and the command's output in dirfd, made as
 * the user; where name exists it must be a profile.  0 or -1 with why. */
static int create_outputs(struct mcp_server *s, const char *output, int dirfd, const char *name,
			  bool command, char *temp, int *temp_fd, int *command_fd, char *why)
{
	char command_name[NAME_MAX + 16];
	unsigned char random[6];
	struct stat st;
	int fd, err;

	*temp_fd = *command_fd = -1;
	err = mcp_access__become_user(s);
	if (err) {
		snprintf(why, MCP_WHY_SIZE, "cannot take the ids of %s: %s", s->user.name,
			 strerror(-err));
		return -1;
	}
	if (!fstatat(dirfd, name, &st, AT_SYMLINK_NOFOLLOW)) {
		if (S_ISLNK(st.st_mode)) {
			snprintf(why, MCP_WHY_SIZE,
				 "refused: '%.200s' is a symbolic link; a profile is not written "
				 "through one",
				 output);
			goto fail;
		}
		fd = openat(dirfd, name, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
		if (fd < 0 && (errno == EACCES || errno == EPERM)) {
			snprintf(why, MCP_WHY_SIZE,
				 "refused by the user's rights: %s (uid %u) may not read '%.200s'",
				 s->user.name, (unsigned)s->user.uid, output);
			goto fail;
		}
		if (fd < 0 || !is_profile(fd)) {
			snprintf(why, MCP_WHY_SIZE,
				 "refused: '%.200s' exists and is not a profile; it is not "
				 "overwritten",
				 output);
			goto fail;
		}
	}
	if (getrandom(random, sizeof(random), 0) != sizeof(random))
		memset(random, 0, sizeof(random));
	if (snprintf(temp, NAME_MAX + 1, ".%s.llmprof-tmp-%02x%02x%02x%02x%02x%02x", name,
		     random[0], random[1], random[2], random[3], random[4], random[5]) > NAME_MAX)
		snprintf(temp, NAME_MAX + 1, ".llmprof-tmp-%02x%02x%02x%02x%02x%02x", random[0],
			 random[1], random[2], random[3], random[4], random[5]);
	*temp_fd = openat(dirfd, temp, O_RDWR | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0644);
	if (*temp_fd < 0) {
		snprintf(why, MCP_WHY_SIZE, "%s '%.200s': %s",
			 errno == EACCES ? "refused by the user's rights: cannot write"
					 : "cannot write",
			 output, strerror(errno));
		goto fail;
	}
	if (command) {
		if (snprintf(command_name, sizeof(command_name), "%s.command.out", name) >
		    NAME_MAX) {
			snprintf(why, MCP_WHY_SIZE, "'%.200s.command.out': %s", output,
				 strerror(ENAMETOOLONG));
			goto fail;
		}
		*command_fd = openat(
		    dirfd, command_name,
		    O_WRONLY | O_CREAT | O_TRUNC | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC, 0644);
		if (*command_fd < 0 || fstat(*command_fd, &st) || !S_ISREG(st.st_mode)) {
			snprintf(
			    why, MCP_WHY_SIZE,
			    "refused: '%.200s.command.out' is not a regular file the command's "
			    "output may go to",
			    output);
			goto fail;
		}
	}
	mcp_access__become_self(s);
	return 0;
fail:
	if (*temp_fd >= 0) {
		close(*temp_fd);
		unlinkat(dirfd, temp, 0);
	}
	if (*command_fd >= 0)
		close(*command_fd);
	*temp_fd = *command_fd = -1;
	mcp_access__become_self(s);
	return -1;
}

static json_t *profile_result(struct mcp_server *s, const struct child_result *r,
			      const char *output, bool command)
{
	const char *const paths[] = {output};
	char extra[2 * PATH_MAX + 128];
	char *text, *named, *brief = profile_brief(s, output);
	json_t *result;

	snprintf(extra, sizeof(extra), "profile: %s\n%s%s%s", output,
		 command ? "command output: " : "", command ? output : "",
		 command ? ".command.out\n" : "");
	text = summary_text(r->err, brief, extra);
	free(brief);
	named = text ? name_inputs(text, paths, 1) : NULL;
	result = named ? mcp__text_result(named) : NULL;
	free(text);
	free(named);
	return result;
}

json_t *mcp_run__profile(struct mcp_server *s, const struct mcp_profile_request *request)
{
	char output[PATH_MAX], name[NAME_MAX + 1], temp[NAME_MAX + 1], why[MCP_WHY_SIZE];
	char *argv[300], pid_text[32];
	struct child_spec spec = {.argv = argv, .nr_fds = 1, .watch_client = true};
	struct child_result r = {0};
	int dirfd = -1, temp_fd = -1, command_fd = -1, n = 0, err;
	json_t *result = NULL;

	temp[0] = '\0';
	if (request->output) {
		snprintf(output, sizeof(output), "%s", request->output);
	} else {
		if (!s->session_dir[0] &&
		    mcp_access__temp_dir(s, s->session_dir, sizeof(s->session_dir), why)) {
			s->session_dir[0] = '\0';
			return mcp__tool_error("%s", why);
		}
		if (snprintf(output, sizeof(output), "%s/profile-%u.%s", s->session_dir,
			     ++s->nr_profiles, request->extension) >= (int)sizeof(output))
			return mcp__tool_error("%s", strerror(ENAMETOOLONG));
	}
	if (mcp_access__open_parent(s, output, &dirfd, name, why) ||
	    create_outputs(s, output, dirfd, name, request->command, temp, &temp_fd, &command_fd,
			   why)) {
		result = mcp__tool_error("%s", why);
		goto cleanup;
	}
	argv[n++] = "llmprof";
	argv[n++] = request->pid ? "attach" : "record";
	if (request->pid) {
		snprintf(pid_text, sizeof(pid_text), "%ld", request->pid);
		argv[n++] = "-p";
		argv[n++] = pid_text;
	}
	for (int i = 0; request->options[i] && n < 40; i++)
		argv[n++] = request->options[i];
	argv[n++] = "-o";
	argv[n++] = "/dev/fd/3";
	if (request->command) {
		if (s->switch_ids) {
			argv[n++] = "--run-as";
			argv[n++] = s->user.name;
		}
		argv[n++] = "--";
		for (int i = 0; request->command[i] && n < 298; i++)
			argv[n++] = request->command[i];
	}
	argv[n] = NULL;
	spec.fds = &temp_fd;
	spec.stdout_fd = command_fd;
	if (run_self(s, &spec, &r)) {
		result = mcp__tool_error("cannot run llmprof: %s", strerror(errno));
		goto cleanup;
	}
	if (r.status) {
		result = child_error(&r, (const char *const[]){output}, 1);
		goto cleanup;
	}
	err = mcp_access__become_user(s);
	if (!err && renameat(dirfd, temp, dirfd, name))
		err = -errno;
	mcp_access__become_self(s);
	if (err) {
		result = mcp__tool_error("cannot write '%s': %s", output, strerror(-err));
		goto cleanup;
	}
	temp[0] = '\0';
	result = profile_result(s, &r, output, request->command);
cleanup:
	if (temp_fd >= 0) {
		close(temp_fd);
		if (temp[0] && !mcp_access__become_user(s))
			unlinkat(dirfd, temp, 0);
		mcp_access__become_self(s);
	}
	if (command_fd >= 0)
		close(command_fd);
	if (dirfd >= 0)
		close(dirfd);
	child_result__free(&r);
	return result;
}
