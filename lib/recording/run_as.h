/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Running a command as another user: record --run-as, and llmprof mcp for
 * the user it serves.  Resolved once (user name or number, its groups, the
 * environment its commands see), entered in a child between fork and exec.
 */
#ifndef LLMPROF_RUN_AS_H
#define LLMPROF_RUN_AS_H

#include <stdbool.h>
#include <sys/types.h>

#define RUN_AS_MAX_GROUPS 256

struct run_as {
	char *name; /* the passwd name, or the number where there is none */
	char *home;
	char *shell;
	uid_t uid;
	gid_t gid;
	gid_t groups[RUN_AS_MAX_GROUPS]; /* supplementary, gid among them */
	int nr_groups;
};

/* Looks up user, a name or a number (a number with no passwd entry runs
 * with its own uid as gid and no other group).  Returns 0, -ENOENT for an
 * unknown name, -EINVAL for an empty one, -ENOMEM. */
int run_as__resolve(const char *user, struct run_as *out);
/* The same for a uid and gid given as numbers (SUDO_UID, SUDO_GID). */
int run_as__resolve_ids(uid_t uid, gid_t gid, struct run_as *out);
void run_as__free(struct run_as *r);
/* Whether gid is one of r's groups. */
bool run_as__in_group(const struct run_as *r, gid_t gid);
/*
 * The environment of a command run as r: this process's, with HOME, USER,
 * LOGNAME and SHELL those of r and sudo's SUDO_* variables left out.  A new
 * NULL-terminated array of strings owned by this process (freed with
 * run_as__free_environment), or NULL on ENOMEM.
 */
char **run_as__environment(const struct run_as *r);
void run_as__free_environment(char **envp);
/*
 * Becomes r for good: supplementary groups, gid, then uid, each checked,
 * and a check that root cannot be regained.  Nothing changes where this
 * process already is r (an unprivileged llmprof running its own commands).
 * For a child between fork and exec: async-signal-safe.  Returns 0 or
 * -errno.
 */
int run_as__enter(const struct run_as *r);

#endif /* LLMPROF_RUN_AS_H */
