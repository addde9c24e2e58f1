/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Reading a process's /proc files: the maps line by line, the fields of
 * stat, comm and the NUL-separated files (cmdline, environ).  The one
 * parser of each, so that every wing reads them the same way: paths with
 * spaces, " (deleted)" and lines of any length.
 */
#ifndef LLMPROF_BASE_PROCFS_H
#define LLMPROF_BASE_PROCFS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <sys/types.h>

/* One line of /proc/PID/maps. */
struct procfs_mapping {
	uint64_t start, end, offset, inode;
	unsigned int major, minor; /* the file's device */
	char perms[5];		   /* "r-xp" */
	char *path;		   /* the rest of the line as the kernel wrote it ("" when
				    * anonymous; " (deleted)" kept); until the next line */
	bool deleted;		   /* path ends in " (deleted)": the file was removed */
};

/* An iterator over a maps file: procfs_maps__open(), then
 * procfs_maps__next() until it returns 0, then procfs_maps__close(). */
struct procfs_maps {
	FILE *file;
	char *line;
	size_t line_cap;
};

/* Opens a maps file by path ("/proc/PID/maps", or a task's); -errno. */
int procfs_maps__open(struct procfs_maps *maps, const char *path);
/* 1 with *m filled, 0 at the end, -errno on a read error.  Lines that are
 * not maps lines are skipped. */
int procfs_maps__next(struct procfs_maps *maps, struct procfs_mapping *m);
void procfs_maps__close(struct procfs_maps *maps);

/* Holds process pid's maps as they are now: until the matching release,
 * procfs_maps__open() of /proc/PID/maps in this thread reads that text,
 * so that the several readers of one event (a library mapped: its probes,
 * the unwind tables, the symbolizer) have the kernel write the list once.
 * Holds of the same process nest; -EBUSY while another's is held. */
int procfs__hold_maps(pid_t pid);
void procfs__release_maps(void);
/* Parses one maps line (its newline, if any, is cut off in place): 0 or
 * -EINVAL. */
int procfs__parse_mapping(char *line, struct procfs_mapping *m);

/* Calls fn for each mapping of the maps file at path until fn returns
 * nonzero, which is returned; 0 at the end, -errno. */
int procfs__for_each_mapping(const char *path, int (*fn)(const struct procfs_mapping *m, void *ctx),
			     void *ctx);

/* The fields of /proc/PID/stat that llmprof reads (proc(5) numbers them). */
struct procfs_stat {
	char state;		      /* 3: R, S, D, T, t, Z, X, ... */
	pid_t ppid;		      /* 4 */
	unsigned long flags;	      /* 9: PF_* */
	unsigned long long utime;     /* 14, clock ticks */
	unsigned long long stime;     /* 15 */
	unsigned long long starttime; /* 22, clock ticks after boot */
};

/* Parses the text of a stat file; the name in parentheses may hold
 * spaces and parentheses.  0 or -EINVAL. */
int procfs__parse_stat(const char *text, struct procfs_stat *st);
/* Reads and parses the stat file at path: 0, -errno, -EINVAL. */
int procfs__read_stat(const char *path, struct procfs_stat *st);
/* /proc/PID/stat, or with tid > 0 /proc/PID/task/TID/stat. */
int procfs__stat(pid_t pid, pid_t tid, struct procfs_stat *st);

/* Up to size - 1 bytes of the file at path, NUL-terminated: the length or
 * -errno. */
ssize_t procfs__read_text(const char *path, char *buf, size_t size);
/* The whole of /proc/PID/name up to max bytes into a new buffer (one byte
 * more, NUL-terminated; cmdline and environ are NUL-separated): the length
 * or -errno. */
ssize_t procfs__read_file(pid_t pid, const char *name, size_t max, char **text);
/* /proc/PID/comm without its newline; "" and -errno when unreadable. */
int procfs__read_comm(pid_t pid, char *comm, size_t size);
/* /proc/PID/cmdline with its arguments joined by spaces, up to size - 1
 * bytes: the length or -errno. */
ssize_t procfs__read_cmdline(pid_t pid, char *buf, size_t size);

#endif
