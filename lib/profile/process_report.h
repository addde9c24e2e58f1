/* SPDX-License-Identifier: GPL-2.0 */
/*
 * report --by-process: one row per process (each root frame of each input
 * profile: a rank, a DataLoader worker, a file written with -o '%r'), with
 * its weight, its top function and its GPU time, and the straggler named:
 * the rank whose busy time (on the CPU, or runnable) stands out from the
 * median of the other ranks'.  Ranks are compared with ranks only, never
 * with their DataLoader workers or the launcher; without two ranks, the
 * processes that are not workers are.  The straggler rule of the findings
 * reads the same figures (rank_loads__read()).
 */
#ifndef LLMPROF_PROCESS_REPORT_H
#define LLMPROF_PROCESS_REPORT_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include "profile/profile.h"
#include "profile/text_output.h"

/* Flagged when the busiest is this much above the median of the others. */
#define STRAGGLER_EXCESS 0.25

/* A twentieth of the span each: with a fifth trimmed at either end,
 * twelve slices (eleven degrees of freedom) to tell a steady lead from
 * the noise of a loaded machine. */
#define RANK_LOAD_SLICES 20

/* One process of a profile, as the straggler test sees it. */
struct rank_load {
	const struct profile *profile;
	uint32_t root;	   /* its root frame */
	const char *label; /* the root frame's name */
	bool rank;	   /* "[rank R]" and not a DataLoader worker */
	bool worker;	   /* "[worker N]" */
	uint64_t busy;	   /* on the CPU or runnable (preempted): what it had to do */
	uint64_t waits;	   /* off the CPU waiting for a collective (c10d, NCCL) */
	/* On a timeline, waits in each slice of the span: a rank that makes
	 * the others wait does so in most of them, a one-off wait (for a
	 * rank's workers to start) in one. */
	uint64_t slice_waits[RANK_LOAD_SLICES];
	bool sliced;   /* slice_waits were filled */
	uint64_t wall; /* every CPU-side weight */
	/* On a timeline, the weights are those of the span in which every
	 * rank runs collectives, this long (in the profile's unit), else the
	 * profile's duration; 0 where weights are not times. */
	uint64_t span;
};

/* Appends a row per root frame of profile to *rows.  0 or -ENOMEM. */
int rank_loads__read(const struct profile *profile, struct rank_load **rows, size_t *nr,
		     size_t *cap);
/* Flagged, where ranks wait in collectives, when the others wait this
 * share of their wall time more than the rank that waits least. */
#define STRAGGLER_WAIT_SHARE 0.15
/* And, on a timeline, when the others' lead over it in the slices of the
 * span is steady: Yuen's t of the lead's 20 %-trimmed mean over the 20
 * slices at least the one-sided 99 % point of Student's t with 11 degrees
 * of freedom.  Symmetric ranks on a loaded machine lead each other by
 * turns, in a few slices by as much as a straggler does. */
#define STRAGGLER_STEADY_T 2.718

/* What the straggler test measured. */
struct straggler {
	int64_t index;	   /* the straggler's row, or -1 */
	int64_t busiest;   /* the candidate's row (the one that waits least, or
			    * the busiest), or -1 when there is none */
	bool by_waits;	   /* judged by the others' waits in collectives (in the
			    * median tenth of the span, on a timeline) */
	double share;	   /* by waits: the others' extra wait, of their wall time;
			    * by busy time: the candidate's excess over the median */
	uint64_t extra;	   /* its extra work: what the others wait for it (by
			    * waits), or its busy time over the others' median */
	uint64_t median;   /* the others' median busy time, or wait */
	double steadiness; /* by waits on a timeline: the lead's Yuen t over
			    * the slices (INFINITY without a timeline) */
};

/*
 * The straggler of rows: ranks if two or more are, else the processes that
 * are not workers.  Where the ranks wait in collectives, the rank the
 * others wait for: the one that waits least, when the others' median wait
 * exceeds its own by STRAGGLER_WAIT_SHARE of their wall time (what it does
 * more, they wait for, whatever the load on the machine) steadily over the
 * span (STRAGGLER_STEADY_T); else the busiest,
 * STRAGGLER_EXCESS above the others' median busy time.  0 or -ENOMEM.
 */
int rank_loads__straggler(const struct rank_load *rows, size_t nr, struct straggler *out);
/* True when the stack (not a GPU one) waits off the CPU for a collective. */
bool profile__stack_waits_for_collective(const struct profile *profile, uint32_t stack);

/* names[i] labels profiles[i] (its file).  Returns 0 or -errno. */
int process_report__write(struct profile *const *profiles, const char *const *names, size_t n,
			  enum text_format format, FILE *out);

#endif /* LLMPROF_PROCESS_REPORT_H */
