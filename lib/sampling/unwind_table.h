/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Unwind tables for the BPF unwinder (--unwind ehframe): each mapped
 * file's .eh_frame compiled into sorted rows (bpf/unwind.h), once per file
 * (by device and inode, so processes that map one file share its rows;
 * across runs by build-id, in the unwind cache of unwind_cache.h), on
 * a background thread, every file a process maps queued as soon as its
 * maps are read, those that samples run through first; and each target
 * process's executable mappings,
 * loaded into the BPF maps as their files' rows become ready.  Until then
 * the BPF program steps through that code by frame pointer.
 */
#ifndef LLMPROF_UNWIND_TABLE_H
#define LLMPROF_UNWIND_TABLE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include <linux/types.h>

#include "unwind.h"

#define UNWIND_TABLE_MAX_SEGMENTS 8

/* The executable PT_LOAD segments, to turn a mapping into a load bias. */
struct unwind_segment {
	uint64_t offset, vaddr, filesz;
};

struct unwind_table {
	struct unwind_row *rows;
	size_t nr_rows;
	/* Where the rows lie in a mapping of an unwind cache entry (rows
	 * read from there fault in no fresh memory), its start and size;
	 * NULL where they were allocated. */
	void *mapping;
	size_t mapping_size;
	struct unwind_segment segments[UNWIND_TABLE_MAX_SEGMENTS];
	int nr_segments;
	size_t nr_fdes;
};

/* Compiles the .eh_frame of the ELF file open at fd (and .debug_frame where
 * it has no .eh_frame).  0 or -errno; a file without CFI gets no rows. */
int unwind_table__compile(int fd, struct unwind_table *out);
/* The same rows, every one evaluated by libdw (unwind_table__compile runs
 * the common FDEs itself): the reference it is tested against. */
int unwind_table__compile_by_libdw(int fd, struct unwind_table *out);
/* Frees or unmaps the rows. */
void unwind_table__release(struct unwind_table *table);
/* The row that covers ELF address vaddr, or NULL (before the first row). */
const struct unwind_row *unwind_table__find(const struct unwind_row *rows, size_t nr,
					    uint64_t vaddr);
/* The load bias of the mapping at start of file offset offset, or -ENOENT
 * when no executable segment holds that offset. */
int unwind_table__bias(const struct unwind_table *table, uint64_t start, uint64_t offset,
		       uint64_t *bias);

struct unwind_tables;

/* rows_fd: the BPF array of maps that holds the chunks of rows, created
 * here as files need room, max_rows in all; processes_fd: the BPF hash
 * from PID to struct unwind_process; use_cache: files' rows are read from
 * and kept in the unwind cache (unwind_cache.h). */
int unwind_tables__new(int rows_fd, uint32_t max_rows, int processes_fd, bool use_cache,
		       struct unwind_tables **out);
void unwind_tables__free(struct unwind_tables *tables);
/* Readable when tables became ready: call unwind_tables__poll() then. */
int unwind_tables__event_fd(const struct unwind_tables *tables);
/* Reads the process's maps, queues the files new to the session and loads
 * its mappings whose rows are ready.  0 or -errno. */
int unwind_tables__update_process(struct unwind_tables *tables, pid_t pid);
/* Moves the files that a sample's user stack runs through, not built yet,
 * to the head of the queue (a process with torch maps dozens of
 * libraries). */
void unwind_tables__note_stack(struct unwind_tables *tables, pid_t pid, const uint64_t *addrs,
			       size_t nr);
/* Loads the mappings whose rows became ready since; says on -v when the
 * queue is done.  0 or -errno. */
int unwind_tables__poll(struct unwind_tables *tables);
/* Waits at most timeout_ms for the tables at the head of the queue (a
 * program's own and libc's, and those samples ran through), then loads
 * them.  0 or -errno. */
int unwind_tables__wait(struct unwind_tables *tables, unsigned int timeout_ms);
/* Files queued whose rows are not ready yet: those that samples ran
 * through (sampled), or all. */
size_t unwind_tables__pending(struct unwind_tables *tables, bool sampled);
/* One debug line: files, rows, time to build. */
void unwind_tables__report(struct unwind_tables *tables);

#endif /* LLMPROF_UNWIND_TABLE_H */
