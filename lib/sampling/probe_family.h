/* SPDX-License-Identifier: GPL-2.0 */
/*
 * A probe family: one kind of event a recording collects beside the CPU
 * samples (off-CPU waits, GPU launches, GPU memory calls, NCCL calls), with
 * its BPF half in bpf/x.bpf.c sharing the session's maps (capture.bpf.h) and
 * its userspace half in x.c.  A family is one row of the recording's table
 * (lib/recording/recording.c): the recording calls its operations in fixed
 * phases, for every family the options want, in the table's order (detach
 * in the reverse order, as a stack unwinds):
 *
 *   prepare  before the target starts; no session yet
 *   open     the session is open: load the BPF half into its maps
 *   attach   the session has started: probes in
 *   detach   the run is over: no more records
 *   flush    the session has drained its ring buffer: records the family
 *            still holds in its maps go into the session
 *   finish   the session's profile is built: the family's stacks resolved
 *            into its frames, its events merged into it
 *   facts    every family has finished: what needs the whole profile
 *   view     the profile written in place of the CPU one, where asked for;
 *            with all_views, every one of the family's views besides
 *   summary  stderr lines once the profile is written
 *   close    everything freed; any phase, NULL-safe
 *
 * Only wanted is required.  An operation returns 0 or -errno, which ends the
 * recording, having said why through the status module; a family that can
 * do without its probes warns, closes itself and sets *state to NULL, and
 * the recording goes on without it.
 */
#ifndef LLMPROF_PROBE_FAMILY_H
#define LLMPROF_PROBE_FAMILY_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include "profile/profile.h"
#include "sampling/session.h"

struct gpu_join;

/* What the command line asks of the families (off-CPU follows the
 * session's mode). */
struct probe_family_options {
	bool gpu;	 /* GPU launches by the CUPTI agent (--no-gpu: false) */
	bool gpu_memory; /* CUDA memory calls (--gpu-memory, a memory view) */
	bool nccl;	 /* NCCL calls (--no-nccl: false) */
	/* A family's view written in place of the CPU profile ("memory-peak",
	 * "nccl"), or NULL. */
	const char *view;
	/* Every view the families collected kept as a value of one profile
	 * beside the written one (recording_result.all_values), for outputs
	 * that hold several values per stack (pprof, speedscope). */
	bool all_views;
};

/* What a family is given in every phase up to attach. */
struct probe_family_env {
	const struct session_options *sampling;
	const struct probe_family_options *options;
	struct session *session; /* NULL in prepare */
	pid_t pid;		 /* the target's first process; 0 in prepare for record */
	bool record;		 /* the target is our child, held until attach is done */
	uid_t target_uid;	 /* who runs it */
};

/* A kernel launched inside a family's call joined with that call (see
 * gpu_merge_options.join). */
typedef int64_t probe_family_join_fn(void *ctx, struct profile *profile, struct gpu_join *join);

/* What the finishing phases share. */
struct probe_family_result {
	struct session *session;
	struct profile *profile; /* the CPU profile, the families' merged in */
	/* Offered in finish by a family whose calls launch GPU work (NCCL),
	 * taken by the GPU launches' finish, which comes after it. */
	probe_family_join_fn *launch_join;
	void *launch_join_ctx;
};

struct probe_family {
	const char *name;
	bool (*wanted)(const struct probe_family_env *env);
	int (*prepare)(void **state, const struct probe_family_env *env);
	int (*open)(void **state, const struct probe_family_env *env);
	int (*attach)(void **state, const struct probe_family_env *env);
	void (*detach)(void *state);
	int (*flush)(void *state, struct session *session);
	int (*finish)(void *state, struct probe_family_result *result);
	int (*facts)(void *state, struct probe_family_result *result);
	/* *out: a new profile when view names one of the family's; left NULL
	 * otherwise.  Called with state NULL when the family could not open. */
	int (*view)(void *state, const char *view, const struct probe_family_result *result,
		    struct profile **out);
	/* The views view makes, NULL-terminated; each is a value named so
	 * in a recording that keeps them all. */
	const char *const *views;
	void (*summary)(const void *state, const struct profile *profile);
	void (*close)(void *state);
};

#endif /* LLMPROF_PROBE_FAMILY_H */
