// SPDX-License-Identifier: GPL-2.0
/* Running a command as another user: credentials looked up once, dropped in
 * the child in the order that cannot be undone (groups, gid, uid). */
#include <errno.h>
#include <grp.h>
#include <pwd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "recording/run_as.h"

extern char **environ;

static int fill(struct run_as *out, const struct passwd *pw, uid_t uid, gid_t gid)
{
	char number[32];
	int n = RUN_AS_MAX_GROUPS;

	memset(out, 0, sizeof(*out));
	out->uid = uid;
	out->gid = gid;
	snprintf(number, sizeof(number), "%u", (unsigned)uid);
	out->name = strdup(pw ? pw->pw_name : number);
	out->home = strdup(pw && pw->pw_dir[0] ? pw->pw_dir : "/");
	out->shell = strdup(pw && pw->pw_shell[0] ? pw->pw_shell : "/bin/sh");
	if (!out->name || !out->home || !out->shell) {
		run_as__free(out);
		return -ENOMEM;
	}
	/* getgrouplist() puts gid among the groups; a uid without an entry
	 * has its gid alone. */
	if (!pw || getgrouplist(pw->pw_name, gid, out->groups, &n) < 0) {
		out->groups[0] = gid;
		n = 1;
	}
	out->nr_groups = n;
	return 0;
}

int run_as__resolve(const char *user, struct run_as *out)
{
	struct passwd *pw;
	unsigned long number;
	char *end;

	if (!user || !user[0])
		return -EINVAL;
	pw = getpwnam(user);
	if (pw)
		return fill(out, pw, pw->pw_uid, pw->pw_gid);
	errno = 0;
	number = strtoul(user, &end, 10);
	if (errno || *end || user[0] < '0' || user[0] > '9' || number >= (uid_t)-1)
		return -ENOENT;
	pw = getpwuid(number);
	return fill(out, pw, number, pw ? pw->pw_gid : (gid_t)number);
}

int run_as__resolve_ids(uid_t uid, gid_t gid, struct run_as *out)
{
	return fill(out, getpwuid(uid), uid, gid);
}

void run_as__free(struct run_as *r)
{
	free(r->name);
	free(r->home);
	free(r->shell);
	memset(r, 0, sizeof(*r));
}

bool run_as__in_group(const struct run_as *r, gid_t gid)
{
	for (int i = 0; i < r->nr_groups; i++)
		if (r->groups[i] == gid)
			return true;
	return r->gid == gid;
}

static bool replaced(const char *entry)
{
	static const char *const names[] = {"HOME=", "USER=", "LOGNAME=", "SHELL=", "SUDO_", NULL};

	for (int i = 0; names[i]; i++)
		if (!strncmp(entry, names[i], strlen(names[i])))
			return true;
	return false;
}

char **run_as__environment(const struct run_as *r)
{
	size_t n = 0, at = 0;
	char **envp;

	while (environ && environ[n])
		n++;
	envp = calloc(n + 5, sizeof(*envp));
	if (!envp)
		return NULL;
	for (size_t i = 0; i < n; i++) {
		if (replaced(environ[i]))
			continue;
		if (!(envp[at++] = strdup(environ[i])))
			goto fail;
	}
	if (asprintf(&envp[at++], "HOME=%s", r->home) < 0 ||
	    asprintf(&envp[at++], "USER=%s", r->name) < 0 ||
	    asprintf(&envp[at++], "LOGNAME=%s", r->name) < 0 ||
	    asprintf(&envp[at++], "SHELL=%s", r->shell) < 0) {
		envp[at - 1] = NULL;
		goto fail;
	}
	return envp;
fail:
	run_as__free_environment(envp);
	return NULL;
}

void run_as__free_environment(char **envp)
{
	for (size_t i = 0; envp && envp[i]; i++)
		free(envp[i]);
	free(envp);
}

int run_as__enter(const struct run_as *r)
{
	uid_t ruid, euid, suid;
	gid_t rgid, egid, sgid;

	if (getresuid(&ruid, &euid, &suid) || getresgid(&rgid, &egid, &sgid))
		return -errno;
	if (ruid == r->uid && euid == r->uid && suid == r->uid && rgid == r->gid &&
	    egid == r->gid && sgid == r->gid)
		return 0;
	if (setgroups(r->nr_groups, r->groups) || setresgid(r->gid, r->gid, r->gid) ||
	    setresuid(r->uid, r->uid, r->uid))
		return -errno;
	if (getresuid(&ruid, &euid, &suid) || ruid != r->uid || euid != r->uid || suid != r->uid)
		return -EPERM;
	if (r->uid != 0 && (setuid(0) == 0 || seteuid(0) == 0))
		return -EPERM;
	return 0;
}
