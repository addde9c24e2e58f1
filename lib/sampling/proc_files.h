/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Where to read a process's /proc files from: a process whose main thread
 * has called pthread_exit() keeps running, but /proc/PID/maps, root, exe and
 * map_files then read as empty or missing; a live thread's
 * /proc/PID/task/TID has the same address space.
 */
#ifndef LLMPROF_PROC_FILES_H
#define LLMPROF_PROC_FILES_H

#include <stddef.h>
#include <sys/types.h>

/* "/proc/PID", or "/proc/PID/task/TID" of a live thread when the main
 * thread is gone.  0 or -errno (-ESRCH: no live thread). */
int proc_files__dir(pid_t pid, char *buf, size_t size);

#endif /* LLMPROF_PROC_FILES_H */
