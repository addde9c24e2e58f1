/* SPDX-License-Identifier: GPL-2.0 */
/*
 * A profiling session: the perf_event BPF program on every CPU, filtered to
 * the target set (processes named, and with children their descendants),
 * its ring buffer drained into raw samples, and at the end the samples
 * symbolized into a struct profile.
 */
#ifndef LLMPROF_SESSION_H
#define LLMPROF_SESSION_H

#include <signal.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include <linux/types.h>

#include "profile/profile.h"
#include "sampler.h"

struct bpf_object;

enum unwind_mode {
	/* the default (auto): in BPF, by rows compiled from .eh_frame,
	 * frame pointers where a file has no rows (yet) */
	UNWIND_EHFRAME = 0,
	UNWIND_FP,
	/* a copy of the stack unwound with libdw, completed from the
	 * frame-pointer chain where the copy runs out */
	UNWIND_DWARF,
	/* ehframe, each sample checked against libdw's unwind of a stack
	 * copy taken with it (not completed); the profile has the BPF stacks */
	UNWIND_COMPARE,
};

/* What a session records: CPU samples, off-CPU intervals, or both on one
 * scale of microseconds (every thread then sums to its wall-clock time). */
enum session_mode {
	SESSION_MODE_CPU = 0,
	SESSION_MODE_OFF_CPU,
	SESSION_MODE_WALL,
};

struct session;

struct session_options {
	pid_t pid;		/* target process (thread group id) */
	const pid_t *more_pids; /* attach -p A,B,...: the others */
	size_t nr_more_pids;
	bool children;		/* descendants too, those alive and those forked later */
	bool per_process;	/* a root frame per process even where names repeat */
	unsigned int frequency; /* samples per second per CPU */
	bool fixed_intervals;	/* --sampling fixed: a sample every 1/frequency, as perf */
	double duration;	/* seconds; 0 runs until stopped or the target exits */
	bool kernel_stacks;	/* false with --no-kernel */
	bool per_thread;	/* thread frames under the process frame */
	bool python;		/* Python frames (off with --no-python) */
	enum unwind_mode unwind;
	/* --no-unwind-cache: compile every file's unwind rows, read and keep
	 * none in the unwind cache (unwind_cache.h). */
	bool no_unwind_cache;
	/* No GPU launch will come (no launches' family, or an attach to
	 * processes without CUDA): the launch program is not loaded, some
	 * 60,000 instructions less to verify. */
	bool no_launch_program;
	unsigned int
	    stack_copy_bytes; /* user stack copied per sample (dwarf, compare); 0: 16 KiB */
	enum session_mode mode;
	uint64_t off_cpu_min_ns; /* shorter blocks are counted, not recorded */
	bool bursts;		 /* a probe family records in bursts (GPU memory) */
	/* GPU launch stacks per second and thread (graph launches a fifth
	 * of it, at least 1); 0: every launch's (bpf/sampler.bpf.c). */
	unsigned int launch_stack_rate;
	/* The overhead governor's budget, a share of the target's CPU time
	 * (governor.h); 0: off. */
	double max_overhead;
	/* attach: the first CPU samples (a second at most) only say which
	 * files' unwind rules to build first, and the profile starts once
	 * those are ready, so that its stacks are whole from the start. */
	bool warm_up;
	/* Called by session__run() after each drain (about every 100 ms),
	 * e.g. to show progress with session__progress(); may be NULL. */
	void (*tick)(void *ctx, const struct session *session);
	void *tick_ctx;
};

/* Why session__run() returned. */
enum session_end {
	SESSION_END_DURATION = 0,
	SESSION_END_STOPPED, /* *stop was set (SIGINT, SIGTERM) */
	SESSION_END_TARGET_EXITED,
};

/* Loads and verifies the BPF program; attaches nothing yet.  0 or -errno. */
int session__open(struct session **out, const struct session_options *options);
/* Opens the perf events on every CPU and attaches the program. */
int session__start(struct session *session);
/* Extra descriptors polled with the ring buffer (the GPU agent's socket);
 * handler returns 0, or -errno to end the session with that error. */
int session__add_poll_fd(struct session *session, int fd, int (*handler)(void *ctx), void *ctx);
/* Drains samples until the duration passes, *stop is set or the target
 * exits.  0 or -errno; *end says which. */
int session__run(struct session *session, volatile sig_atomic_t *stop, enum session_end *end);
/* Detaches and drains what is left; once.  0 or -errno. */
int session__stop(struct session *session);
/* After session__stop(): a record a probe family kept in its maps, as if
 * the ring buffer had carried it (a ring_buffer_sample_fn).  0 or -errno. */
int session__add_record(void *session, void *data, size_t size);
/* Monotonic time at which the session stopped, in ns. */
unsigned long long session__end_time(const struct session *session);
/* Stops if session__stop() was not called, and symbolizes into a new
 * profile. */
int session__finish(struct session *session, struct profile **out);
void session__close(struct session *session);

/* Where a running session stands, from the BPF counters. */
struct session_progress {
	uint64_t elapsed_ns;
	uint64_t samples; /* samples of the target taken */
	uint64_t lost;	  /* records lost: the ring buffer was full */
	uint64_t off_cpu; /* off-CPU intervals recorded */
};
void session__progress(const struct session *session, struct session_progress *out);
/* One of the BPF counters (enum counter in sampler.h), summed over the
 * CPUs: what a probe family sharing the session's maps counted. */
uint64_t session__counter(const struct session *session, uint32_t counter);

/* Attaches the GPU launch probe (USDT llmprof:launch) in the agent library
 * at binary_path; launches then carry the CPU stack that made them. */
int session__attach_launch_probe(struct session *session, const char *binary_path);
/* After session__finish(): the launch stack of a CUPTI correlation id in the
 * finished profile, root first, CUDA-internal frames cut; a
 * gpu_launch_stack_fn for agent_server__merge().  0 or -ENOENT. */
int session__launch_stack(void *session, uint32_t correlation, uint32_t tid, uint64_t time_ns,
			  uint32_t *frames, size_t max, size_t *depth);

/*
 * Probe families beside the sampler (off-CPU, GPU memory, NCCL, ...) load
 * their own BPF objects that include bpf/capture.bpf.h.  Before loading,
 * session__share_maps() points the object's shared maps (the ring buffer,
 * counters, the target set, the Python and unwinder state) at the
 * session's, and session__capture_settings() gives the values its .rodata
 * must carry, so its records unwind as CPU samples do.
 */
struct capture_settings {
	bool collect_kernel;
	uint64_t wakeup_bytes;
	uint32_t stack_copy_bytes;
	bool unwind_in_bpf;
};
int session__share_maps(const struct session *session, struct bpf_object *object);
void session__capture_settings(const struct session *session, struct capture_settings *out);
/* Sets those values in a family's skeleton .rodata, its stack copy cut to
 * max_copy bytes (a family's calls need the frames near them; frame
 * pointers complete the rest, and each record costs less). */
#define SESSION_SET_CAPTURE_RODATA(rodata, settings, max_copy)                                     \
	do {                                                                                       \
		(rodata)->collect_kernel = (settings)->collect_kernel;                             \
		(rodata)->wakeup_bytes = (settings)->wakeup_bytes;                                 \
		(rodata)->unwind_in_bpf = (settings)->unwind_in_bpf;                               \
		(rodata)->stack_copy_bytes = (settings)->stack_copy_bytes < (max_copy)             \
						 ? (settings)->stack_copy_bytes                    \
						 : (max_copy);                                     \
	} while (0)

/* Called while draining, for each record of a family's kind, after its
 * stack was unwound and interned: thread and stack are the session's raw
 * indexes, for session__stack_frames() once the session has finished.
 * Returns 0 or -errno (which ends the session). */
typedef int session_record_fn(void *ctx, const struct sample_event *event, uint32_t thread,
			      uint32_t stack);
int session__set_record_handler(struct session *session, enum sample_kind kind,
				session_record_fn *fn, void *ctx);
/* After session__finish(): the frames of a raw stack in the finished
 * profile, root first, with the process (and --per-thread thread) prefix.
 * 0, -ENOENT or -ENOSPC. */
int session__stack_frames(const struct session *session, uint32_t thread, uint32_t stack,
			  uint32_t *frames, size_t max, size_t *depth);

/* Re-reads process pid's mappings now (a probe family saw it map a
 * library), so stacks through it symbolize while it is there; a process
 * the session does not know is left alone. */
void session__refresh_modules(struct session *session, pid_t pid);

/* The processes known now (named, and with children their descendants
 * found at open): up to max PIDs into pids; returns how many. */
size_t session__processes(const struct session *session, pid_t *pids, size_t max);

/*
 * Families that stop the target at each library load, to probe the new
 * library before it runs on (GPU memory, NCCL), share one gate: each calls
 * session__add_load_stopper() once, and session__load_handled() when it has
 * dealt with a load; the process continues when all of them have, or after
 * LOAD_GATE_TIMEOUT_MS whatever happens, so it is never left stopped.
 */
#define LOAD_GATE_TIMEOUT_MS 500
/* Once the families have answered, the process waits for the new libraries'
 * unwind rules too, but no more than this in all its life: a Python process
 * importing torch loads a hundred extension modules, and with several such
 * processes queueing rules, waits of 500 ms each made a DataLoader worker's
 * start 50 s slower. */
#define LOAD_GATE_UNWIND_BUDGET_MS 200
void session__add_load_stopper(struct session *session);
void session__load_handled(struct session *session, pid_t pid);

/* true when the target set is the one process named and stays so (no
 * children followed, no other PID): probes may then be filtered to it in the
 * kernel, where no other process pays for them. */
bool session__single_process(const struct session *session);

/* Adds a process to the target set every probe family filters on. */
int session__add_target(struct session *session, pid_t pid, uint32_t flags, pid_t parent);

/* Monotonic time at which session__start() attached, in ns. */
unsigned long long session__start_time(const struct session *session);

#endif /* LLMPROF_SESSION_H */
