/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The processes of a session: one entry per process of the target set that
 * sent a record, with what reads its stacks (symbolizer, unwinder, Python
 * reader) and what it is called in the profile (its command name, and the
 * rank or DataLoader worker number an ML job gives it).
 */
#ifndef LLMPROF_PROCESS_TABLE_H
#define LLMPROF_PROCESS_TABLE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include <linux/types.h>

#include "profile/profile.h"
#include "sampler.h"

struct symbolizer;
struct unwinder;
struct python_reader;

struct tracked_process {
	pid_t pid;
	pid_t parent;	   /* 0 for a process named on the command line */
	bool selected;	   /* named on the command line (or record's command) */
	bool readable;	   /* /proc/PID could be read when it was first seen */
	int rank;	   /* its rank in the job (process_table__assign_roles()); -1 */
	int worker;	   /* DataLoader worker number under its parent; -1 */
	int env_rank;	   /* RANK, SLURM_PROCID or LOCAL_RANK from its environment; -1 */
	bool python_child; /* a copy of its Python parent (fork) or a multiprocessing
			    * spawn or forkserver child: a worker, unless it runs
			    * collectives */
	/* What its stacks ran (session_profile.c marks them): code of a
	 * process group (torch.distributed, DDP, c10d), and a DataLoader
	 * worker's loop. */
	bool ran_collectives;
	bool ran_loader_worker;
	char comm[TASK_COMM_LEN + 1];
	char exe[256]; /* /proc/PID/exe when first seen, "" if unknown */
	struct symbolizer *symbolizer;
	struct unwinder *unwinder;    /* NULL with --unwind fp */
	struct python_reader *python; /* NULL with --no-python */
	uint64_t last_refresh_ns;
	bool unknown_since_refresh;
	bool refreshed_for_unknown; /* an unknown address was looked up once */
	uint64_t records;	    /* records of this process received */
	uint64_t unwind_wait_ns;    /* stopped at library loads for unwind rules */
	uint64_t cpu_ticks;	    /* utime + stime when the governor last looked */
};

/* How the table creates each process's readers. */
struct process_table_options {
	bool unwind;	       /* an unwinder per process */
	bool complete_with_fp; /* --unwind auto */
	bool python;	       /* a Python reader per process */
	int python_config_fd;  /* the BPF python_config map */
	bool symbol_cache;     /* what the symbolizers resolve kept across runs */
};

struct symbol_share;

struct process_table {
	struct process_table_options options;
	struct tracked_process *processes;
	size_t nr, cap;
	size_t last; /* the last lookup, tried first */
	/* What one process's symbolizer resolved, for the others (NULL:
	 * none could be made). */
	struct symbol_share *share;
};

void process_table__init(struct process_table *table, const struct process_table_options *options);
void process_table__free(struct process_table *table);
/* The entry of pid, created (readers, names) the first time; a process
 * already gone gets an entry whose frames stay unresolved.  Returns its
 * index or -errno. */
int64_t process_table__get(struct process_table *table, pid_t pid, pid_t parent, bool selected);
/* Marks what a stack of the process ran (frames of profile, any order). */
void process_table__mark_stack(struct tracked_process *process, const struct profile *profile,
			       const uint32_t *frames, size_t n);
/*
 * Names the roles from what each process is and ran: a DataLoader worker is
 * a process that ran a worker's loop (or, with no such stack, a Python
 * child that ran no collectives), numbered under its parent in PID order,
 * and carries its parent's rank; a rank is a process with a rank in its
 * environment or one that ran collectives, however it was started
 * (torchrun, torch.multiprocessing.spawn, a multiprocessing child that
 * calls init_process_group).  Ranks without one in their environment are
 * numbered in PID order after those with one: the order in which spawn
 * starts them, which is the rank it passes them.  A rank is never a worker.
 */
void process_table__assign_roles(struct process_table *table);
/* Reads again what an exec may have changed (the rank). */
void process_table__refresh(struct tracked_process *process);
/* The index of pid's entry, or -1. */
int64_t process_table__find(const struct process_table *table, pid_t pid);

/* The descendants of pid alive now, by walking /proc: each one's PID and
 * parent, parents before children.  Returns how many, or -errno; *out is
 * freed by the caller. */
int64_t process_table__descendants(pid_t pid, pid_t **pids, pid_t **parents);

/*
 * The root frame name of a process in a profile of several: "COMM [rank R]",
 * "COMM [rank R] [worker N]", "COMM [worker N]", or "COMM"; with per_process, every process its
 * own: "COMM [rank R] [PID]" or "COMM [PID]".  A lone process is "COMM".
 */
void process_table__label(const struct process_table *table, size_t index, bool several,
			  bool per_process, char *buf, size_t size);

#endif /* LLMPROF_PROCESS_TABLE_H */
