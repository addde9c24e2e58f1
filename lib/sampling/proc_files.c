// SPDX-License-Identifier: GPL-2.0
/*
 * The /proc directory to read a process's maps and files from (see
 * proc_files.h).
 */
#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>

#include "sampling/proc_files.h"

/* The state letter of /proc/PID[/task/TID]/stat, or 0. */
static char thread__state(pid_t pid, pid_t tid)
{
	char path[64], text[512], *paren;
	size_t n;
	FILE *f;

	snprintf(path, sizeof(path), "/proc/%d/task/%d/stat", pid, tid);
	f = fopen(path, "re");
	if (!f)
		return 0;
	n = fread(text, 1, sizeof(text) - 1, f);
	fclose(f);
	text[n] = '\0';
	/* The name in parentheses may hold spaces and parentheses. */
	for (paren = text + n; paren > text && paren[-1] != ')'; paren--)
		;
	return paren > text && paren[0] == ' ' ? paren[1] : 0;
}

int proc_files__dir(pid_t pid, char *buf, size_t size)
{
	char path[64];
	struct dirent *dent;
	char state = thread__state(pid, pid);
	DIR *dir;
	int err = -ESRCH;

	if (state != 'Z' && state != 'X') {
		snprintf(buf, size, "/proc/%d", pid);
		return 0;
	}
	snprintf(path, sizeof(path), "/proc/%d/task", pid);
	dir = opendir(path);
	if (!dir)
		return errno == ENOENT ? -ESRCH : -errno;
	while ((dent = readdir(dir))) {
		pid_t tid = atoi(dent->d_name);

		if (tid <= 0 || tid == pid)
			continue;
		state = thread__state(pid, tid);
		if (state && state != 'Z' && state != 'X') {
			snprintf(buf, size, "/proc/%d/task/%d", pid, tid);
			err = 0;
			break;
		}
	}
	closedir(dir);
	return err;
}
