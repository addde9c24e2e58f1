// SPDX-License-Identifier: GPL-2.0
/*
 * The /proc directory to read a process's maps and files from (see
 * proc_files.h).
 */
#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>

#include "base/procfs.h"
#include "sampling/proc_files.h"

/* The state letter of /proc/PID[/task/TID]/stat, or 0. */
static char thread__state(pid_t pid, pid_t tid)
{
	struct procfs_stat st;

	return procfs__stat(pid, tid, &st) ? 0 : st.state;
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
