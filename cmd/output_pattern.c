// SPDX-License-Identifier: GPL-2.0
/*
 * -o names with %p (PID), %r (rank), %h (host name) and %%: one profile per
 * process or rank, each written atomically, for attach and record.
 */
#include <errno.h>
#include <limits.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "output_pattern.h"
#include "status.h"

/* Whether -o is a pattern: %p (PID), %r (rank), %h (host name), %%. */
bool output_pattern__is_pattern(const char *path)
{
	return path && (strstr(path, "%p") || strstr(path, "%r") || strstr(path, "%h"));
}

bool output_pattern__valid(const char *path)
{
	for (const char *c = strchr(path, '%'); c; c = strchr(c + 2, '%'))
		if (!c[1] || !strchr("prh%", c[1]))
			return false;
	return true;
}

int output_pattern__expand(const char *pattern, pid_t pid, int rank, char *out, size_t size)
{
	char host[256] = "localhost";
	size_t n = 0;

	gethostname(host, sizeof(host) - 1);
	host[sizeof(host) - 1] = '\0';
	for (const char *c = pattern; *c; c++) {
		char piece[300];

		if (*c != '%' || !c[1]) {
			piece[0] = *c;
			piece[1] = '\0';
		} else {
			switch (*++c) {
			case 'p':
				snprintf(piece, sizeof(piece), "%d", pid);
				break;
			case 'r':
				/* A process without a rank goes by its PID. */
				if (rank >= 0)
					snprintf(piece, sizeof(piece), "%d", rank);
				else
					snprintf(piece, sizeof(piece), "pid%d", pid);
				break;
			case 'h':
				snprintf(piece, sizeof(piece), "%s", host);
				break;
			default:
				snprintf(piece, sizeof(piece), "%%");
				break;
			}
		}
		if (n + strlen(piece) >= size)
			return -ENAMETOOLONG;
		memcpy(out + n, piece, strlen(piece));
		n += strlen(piece);
	}
	out[n] = '\0';
	return 0;
}

/* The rank in the root frame of pid's stacks ("COMM [rank R]"), or -1. */
static int rank_of_pid(const struct profile *p, uint32_t pid)
{
	for (size_t i = 0; i < p->nr_samples; i++) {
		const struct sample *s = &p->samples[i];
		const char *at;

		if (p->threads[s->thread].pid != pid || !p->stacks[s->stack].depth)
			continue;
		at = strstr(p->frames[p->stacks[s->stack].frames[0]].name, " [rank ");
		return at ? atoi(at + 7) : -1;
	}
	return -1;
}

/* -o with a pattern: one file per name it gives, each written atomically,
 * with every process whose name it is (all the processes of a rank, for
 * %r).  Returns 0 or -errno; the files written so far stay. */
int output_pattern__write(const char *pattern, const struct profile *profile,
			  enum profile_format format, const struct writer_options *options)
{
	size_t nr = 0, cap = profile->nr_threads ? profile->nr_threads : 1;
	uint32_t *pids = calloc(cap, sizeof(*pids)), *group = calloc(cap, sizeof(*group));
	char(*paths)[PATH_MAX] = calloc(cap, sizeof(*paths));
	bool *done = calloc(cap, sizeof(*done));
	int err = 0;

	if (!pids || !group || !paths || !done) {
		err = -ENOMEM;
		goto out;
	}
	for (size_t i = 0; i < profile->nr_threads && !err; i++) {
		size_t k = 0;

		while (k < nr && pids[k] != profile->threads[i].pid)
			k++;
		if (k < nr)
			continue;
		pids[nr] = profile->threads[i].pid;
		err = output_pattern__expand(pattern, pids[nr], rank_of_pid(profile, pids[nr]),
					     paths[nr], sizeof(paths[nr]));
		nr++;
	}
	for (size_t i = 0; i < nr && !err; i++) {
		struct output_file file = {0};
		struct profile *one = NULL;
		size_t nr_group = 0;

		if (done[i])
			continue;
		for (size_t k = i; k < nr; k++) {
			if (!done[k] && !strcmp(paths[k], paths[i])) {
				group[nr_group++] = pids[k];
				done[k] = true;
			}
		}
		err = profile__select_processes(profile, group, nr_group, &one);
		if (!err)
			err = output_file__open(&file, paths[i]);
		if (!err)
			err = output_file__commit(
			    &file, output__write_with(one, format, options, file.stream));
		if (err)
			status__error("cannot write '%s': %s", paths[i], strerror(-err));
		else
			status__debug("wrote %zu process%s to %s", nr_group,
				      nr_group > 1 ? "es" : "", paths[i]);
		profile__free(one);
	}
out:
	free(pids);
	free(group);
	free(paths);
	free(done);
	return err;
}
