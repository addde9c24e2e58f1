/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Python's names of a target's threads, read from its memory: the
 * interpreter's threading._active (ident -> Thread), each Thread's _name
 * and _native_id (the kernel's thread id).  Private to the Python reader.
 */
#ifndef LLMPROF_PYTHON_THREADS_H
#define LLMPROF_PYTHON_THREADS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "sampling/python_reader.h"

struct python_thread_name {
	uint32_t tid;
	char *name;
};

/* Reads len bytes at addr in the target: 0, or -errno (-EFAULT short). */
int python_memory__read(pid_t pid, uint64_t addr, void *buf, size_t len);
/* A str object's text as UTF-8 (malloc'd), or NULL. */
char *python_memory__unicode(pid_t pid, const struct python_layout *layout, uint64_t addr);

/*
 * The threads threading._active holds in the first interpreter of the
 * runtime at runtime, appended to *names (*nr of them, room for *cap;
 * names malloc'd).  0, -ENOENT where threading is not imported, -ENOTSUP
 * for a version without the offsets, -ENOMEM, or a read error.
 */
int python_threads__read(pid_t pid, const struct python_layout *layout, uint64_t runtime,
			 struct python_thread_name **names, size_t *nr, size_t *cap);

/* The names read so far, by thread id (threads that ended keep theirs),
 * and the threads seen running Python.  A thread runs Python (its
 * bootstrap) before threading lists it, so the names are read again while
 * one that ran Python has none, less and less often. */
struct python_thread_table {
	struct python_thread_name *names;
	size_t nr, cap;
	uint32_t *seen;
	size_t nr_seen, cap_seen;
	bool stale;
	uint64_t read_ns, interval_ns; /* the last read, and the wait for the next */
};

void python_thread_table__free(struct python_thread_table *table);
/* Reads the names again (python_threads__read()); a failure keeps them. */
void python_thread_table__read(struct python_thread_table *table, pid_t pid,
			       const struct python_layout *layout, uint64_t runtime);
/* Notes a thread running Python; true when the names are to be read now. */
bool python_thread_table__saw(struct python_thread_table *table, uint32_t tid, uint64_t time_ns);
/* See python_reader__thread_name(). */
const char *python_thread_table__name(const struct python_thread_table *table, uint32_t tid,
				      const char *comm, const char *process_comm);

#endif /* LLMPROF_PYTHON_THREADS_H */
