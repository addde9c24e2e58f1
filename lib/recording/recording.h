/* SPDX-License-Identifier: GPL-2.0 */
/*
 * A recording: the target (a running process tree for attach, a command
 * started for record), the sampling session on it and the probe families
 * the options want, driven through fixed phases, to the profile the
 * command writes.
 *
 *   recording__open    the target checked or the command started (held
 *                      before its exec); families prepared
 *   recording__start   the session and the families loaded and attached;
 *                      the command let go
 *   recording__run     records drained until the duration, a stop or the
 *                      target's exit
 *   recording__finish  the families detached, the session stopped and its
 *                      profile built, each family's part merged in; the
 *                      command waited for
 *   recording__close   everything freed; the command stopped if it runs
 *
 * Every function reports its failures through the status module and
 * returns 0 or -errno; the command only maps them to its exit status.
 */
#ifndef LLMPROF_RECORDING_H
#define LLMPROF_RECORDING_H

#include <signal.h>
#include <stdbool.h>
#include <sys/types.h>

#include "profile/profile.h"
#include "sampling/probe_family.h"
#include "sampling/session.h"

/* What is recorded, from the command line down. */
struct recording_options {
	/* the target: a command to start (record) or the processes named
	 * in sampling.pid and sampling.more_pids (attach) */
	char **command;
	const struct run_as *run_as; /* the command's user (record --run-as), or NULL */
	struct session_options sampling;
	struct probe_family_options families;
};

struct gpu_capture;
struct recording;
struct run_as;

/* What recording__finish() gives; owned by the recording. */
struct recording_result {
	struct profile *profile; /* the CPU profile, the families' merged in */
	struct profile *view;	 /* families.view's profile, or NULL */
	/* With families.all_views: the written profile (view, else profile)
	 * as value 0 and every other view collected, and the CPU profile
	 * where a view is written, as further values; else NULL. */
	struct profile *all_values;
	enum session_end end;
};

int recording__open(struct recording **out, const struct recording_options *options);
/* The target's first process: the command's once started. */
pid_t recording__pid(const struct recording *recording);
int recording__start(struct recording *recording);
int recording__run(struct recording *recording, volatile sig_atomic_t *stop);
int recording__finish(struct recording *recording, struct recording_result *result);
/* The families' stderr summaries, once the profile is written. */
void recording__print_summary(const struct recording *recording);
void recording__close(struct recording *recording);

/* For the progress line: the GPU launches' capture, or NULL. */
const struct gpu_capture *recording__gpu_capture(const struct recording *recording);

/* The command of a record, held before its exec until the session is
 * attached, so that its first instruction is profiled (target.c). */
struct recording_command {
	pid_t pid;
	int go_fd;     /* write a byte to let it exec */
	int status_fd; /* carries errno if exec fails; EOF on success */
};
/* run_as: the user it runs as (run_as.h), or NULL for llmprof's own. */
int recording_command__start(char **argv, const struct run_as *run_as,
			     struct recording_command *command);
/* Lets it exec; 0 or the exec errno as -errno. */
int recording_command__release(struct recording_command *command);
/* Waits for it (SIGTERM first with stop_it, unless it has exited) and says
 * how it ended when it failed. */
void recording_command__reap(struct recording_command *command, bool stop_it);

/* What attach can tell before it starts (target.c): a process that
 * does not exist, a zombie or a kernel thread gives nothing to profile
 * (-ESRCH, -EINVAL, with the reason said); a stopped one is profiled, with
 * a warning. */
int recording__check_attach_target(pid_t pid);

#endif /* LLMPROF_RECORDING_H */
