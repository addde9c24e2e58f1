/* SPDX-License-Identifier: GPL-2.0 */
/*
 * What the files of llmprof mcp share: the server's state (whom it serves,
 * the directories and processes open to it), the protocol layer
 * (mcp_protocol.c), the tools (mcp_tools.c), the access rules
 * (mcp_access.c) and the children that do the work (mcp_run.c).
 */
#ifndef LLMPROF_MCP_PRIVATE_H
#define LLMPROF_MCP_PRIVATE_H

#include <jansson.h>
#include <limits.h>
#include <stdbool.h>
#include <stdio.h>
#include <sys/types.h>

#include "recording/run_as.h"

#define MCP_MAX_ROOTS 64
#define MCP_MAX_PIDS 64
/* A line longer than this is refused unread. */
#define MCP_MAX_LINE (16 << 20)

/* A directory the agent may read and write under. */
struct mcp_root {
	char *path;  /* as resolved at start (realpath) */
	char *given; /* as given, made absolute */
	int fd;	     /* O_PATH of the directory, the anchor of every open */
};

struct mcp_server {
	struct run_as user; /* whom the server acts for */
	/* Our effective ids are not the user's (root serving a user): files
	 * are opened with the user's ids switched in, children drop to them. */
	bool switch_ids;
	bool any_process;		  /* --any-process */
	pid_t allowed_pids[MCP_MAX_PIDS]; /* --allow-pid */
	int nr_allowed_pids;
	struct mcp_root roots[MCP_MAX_ROOTS];
	int nr_roots;
	char cwd[PATH_MAX];	    /* where relative paths start */
	FILE *out;		    /* replies */
	int in_fd;		    /* requests; watched for a hang-up while a tool runs */
	bool client_gone;	    /* it hung up while a tool ran */
	char session_dir[PATH_MAX]; /* profiles with no output named */
	unsigned nr_profiles;
};

/* mcp_protocol.c: one message in, at most one reply out; 0 to go on,
 * -EIO when replies cannot be written. */
int mcp__handle(struct mcp_server *s, const char *line, size_t len);
int mcp__send_error(struct mcp_server *s, json_t *id, int code, const char *message);

/* Tool results: text, or a tool error (isError) the model reads. */
json_t *mcp__text_result(const char *text);
json_t *mcp__tool_error(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/* mcp_tools.c: the tools/list reply, and a tool by name (NULL: unknown). */
json_t *mcp_tools__list(void);
typedef json_t *(*mcp_tool_fn)(struct mcp_server *s, json_t *args);
mcp_tool_fn mcp_tools__find(const char *name);

/* mcp_access.c: the rules.  Each returns 0, or -1 with why (one line naming
 * the rule) filled in. */
#define MCP_WHY_SIZE 512
int mcp_access__check_pid(const struct mcp_server *s, long pid, char *why);
/* An input file under a root, opened read-only with the user's rights. */
int mcp_access__open_input(struct mcp_server *s, const char *path, int *fd, char *why);
/* A directory under a root (created for the user where it is missing
 * and create is set), as an O_PATH descriptor, and a last name in it. */
int mcp_access__open_parent(struct mcp_server *s, const char *path, int *dirfd,
			    char name[NAME_MAX + 1], char *why);
/* Switch the effective ids, groups included, to the user's and back; a
 * no-op unless switch_ids.  A failure to switch back aborts: the server
 * must not go on with the wrong ids. */
int mcp_access__become_user(const struct mcp_server *s);
void mcp_access__become_self(const struct mcp_server *s);
/* A new directory under $TMPDIR (else /tmp), the user's, added to the
 * roots: where profiles go when the request names no output. */
int mcp_access__temp_dir(struct mcp_server *s, char *path, size_t size, char *why);
int mcp_access__add_root(struct mcp_server *s, const char *dir, char *why);
void mcp_access__close(struct mcp_server *s);

/* What the profile tool asks of mcp_run.c, arguments checked. */
struct mcp_profile_request {
	long pid;	       /* or */
	char **command;	       /* NULL-terminated */
	const char *output;    /* NULL: a new directory */
	const char *extension; /* of the default output name */
	char **options;	       /* record/attach options, NULL-terminated */
};

/* mcp_run.c: each returns a tool result (errors included), NULL for
 * ENOMEM. */
json_t *mcp_run__profile(struct mcp_server *s, const struct mcp_profile_request *request);
/* report/diff with the inputs open as fds[i] (named /dev/fd/3...), run
 * with the user's ids; paths[i] replace those names in the reply. */
enum mcp_report_kind { MCP_REPORT, MCP_DIFF };
json_t *mcp_run__report(struct mcp_server *s, enum mcp_report_kind kind, char **argv,
			const int *fds, const char *const *paths, int nr_fds);

#endif /* LLMPROF_MCP_PRIVATE_H */
