/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The session's own state, shared by session.c (BPF, draining) and
 * session_profile.c (symbolization into the profile); private to
 * lib/sampling.
 */
#ifndef LLMPROF_SESSION_PRIVATE_H
#define LLMPROF_SESSION_PRIVATE_H

#include <stdbool.h>
#include <stdint.h>
#include <time.h>

#include "base/clock.h"
#include "base/hash_index.h"
#include "sampler.h"
#include "sampling/process_table.h"
#include "sampling/governor.h"
#include "sampling/sampling_clock.h"
#include "sampling/session.h"
#include "sampling/unwind_compare.h"

#define MAX_POLL_FDS 8
#define MAX_LAUNCH_LINKS 64
#define MAX_FRAMES 1024
#define MAX_LOAD_WAITS 64

/* A distinct pair of raw stacks; samples refer to it by index. */
struct raw_stack {
	uint64_t *addrs; /* user root..leaf order as captured: leaf first */
	uint16_t nr_user, nr_kernel;
	uint16_t nr_python; /* Python frame keys after the kernel addresses */
	uint32_t process;   /* index into the process table: addresses are its */
	uint64_t hash;
	int64_t symbolized; /* first index into the frame pool, or -1 */
	uint32_t nr_frames;
};

struct raw_sample {
	uint64_t time_ns;
	uint32_t thread; /* index into session->threads */
	uint32_t stack;	 /* index into session->raw_stacks */
	/* Off-CPU intervals: how long, and what the leaf will say. */
	uint64_t off_cpu_ns; /* 0 for a CPU sample */
	int16_t syscall;
	bool runnable;
	/* Kept while the governor thinned the waits: its time is scaled
	 * to stand for those not kept (session__scale_thinned_waits()). */
	bool thinned;
};

/* A GPU launch seen by the USDT probe: its CPU stack, by correlation id. */
struct raw_launch {
	uint32_t correlation;
	uint32_t thread;
	uint32_t stack;
	uint64_t time_ns;
};

struct raw_thread {
	uint32_t tid;
	uint32_t process; /* index into the process table */
	char comm[TASK_COMM_LEN];
	/* Its waits while the governor thinned them: the time of all, as
	 * of its last kept one, and of those kept. */
	uint64_t thinned_ns, kept_ns;
};

struct poll_source {
	int fd;
	int (*handler)(void *ctx);
	void *ctx;
};

struct record_handler {
	session_record_fn *fn;
	void *ctx;
};

struct session {
	struct session_options options;
	struct sampler_bpf *skel;
	struct ring_buffer *ring;
	int *perf_fds;
	struct sampling_clock clock; /* the events' periods */
	struct governor governor;    /* --max-overhead */
	struct bpf_link **links;
	int nr_cpus;
	int epoll_fd;
	int pidfd;
	struct poll_source sources[MAX_POLL_FDS];
	int nr_sources;
	struct record_handler handlers[SAMPLE_KIND_MAX];

	struct process_table processes;
	struct bpf_link *process_links[3];   /* fork, exec and exit tracking */
	struct unwind_tables *unwind_tables; /* --unwind ehframe */
	struct {
		uint64_t samples, whole, cut, frames, by_rules, disturbed;
	} bpf_unwind;
	struct unwind_compare unwind_compare; /* --unwind compare */

	unsigned long long start_ns, end_ns;
	bool attached;
	bool stopped; /* session__stop() detached and drained */
	/* options.warm_up: the CPU samples before start_ns are dropped */
	bool warming_up;
	unsigned long long warm_up_began_ns, warm_up_dropped;

	struct raw_stack *raw_stacks;
	size_t nr_raw_stacks, cap_raw_stacks;
	struct hash_index raw_index; /* raw stacks by hash, process and addresses */
	struct raw_sample *samples;
	size_t nr_samples, cap_samples;
	struct raw_thread *threads;
	size_t nr_threads, cap_threads;
	struct raw_launch *launches;
	size_t nr_launches, cap_launches;
	bool launches_sorted;
	/* The launch probe, once per agent file: one for record (every
	 * process maps the same one), one per injected process for attach. */
	struct bpf_link *launch_links[MAX_LAUNCH_LINKS];
	int nr_launch_links;
	struct profile *profile;  /* the one session__finish() built */
	uint32_t *process_frames; /* by process index, in that profile */
	int drain_error;
	bool main_exited; /* -p's first process is gone, others still run */
	int load_stoppers;
	struct load_wait {
		pid_t pid;
		int handled;
		uint64_t since_ns;
		bool answered; /* by every family; waits for unwind rules */
		uint64_t answered_ns;
		uint64_t unwind_deadline_ns; /* when its budget for them runs out */
	} load_waits[MAX_LOAD_WAITS];
	int nr_load_waits;
};

/* Builds the finished session's profile from its raw samples and the
 * counters BPF kept.  0 or -errno. */
int session_profile__build(struct session *s, const uint64_t *counters, struct profile **out);

/* Lets go on the processes stopped at a library load whose families have
 * all answered and whose new libraries have unwind rules, those stopped
 * past LOAD_GATE_TIMEOUT_MS (a family never answered: its record lost), or
 * all of them. */
void session__load_gate_expire(struct session *session, bool all);

/* Reads again what proc maps (symbols, Python, unwind tables), at now. */
void session__refresh_process(struct session *s, struct tracked_process *proc, uint64_t now);

/* --max-overhead, at now: once a window has passed, measures llmprof's cost
 * against the targets' CPU and applies the governor's new rate, if any, said
 * on stderr.  0 or -errno. */
int session__govern(struct session *s, uint64_t now);
/* Under -v, what the governor measured over the session. */
void session__report_governor(const struct session *s);
/* Scales the times of the off-CPU waits kept while the governor thinned
 * them so that they add up to the time of every wait of those spells, as
 * BPF counted it (counters[COUNTER_THINNED_WAIT_NS]). */
void session__scale_thinned_waits(struct session *s, const uint64_t *counters);

#endif /* LLMPROF_SESSION_PRIVATE_H */
