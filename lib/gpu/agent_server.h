/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The llmprof side of the GPU agent: a listening socket the CUPTI agent in
 * the target connects to (see gpu_protocol.h), the records it sends kept in
 * memory, and the merge of those records into a profile, on the launching
 * CPU stacks the core captured.
 *
 * Use: agent_server__open(); pass agent_server__socket_name() to the agent
 * (LLMPROF_AGENT_SOCKET or llmprof_agent_start()); register
 * agent_server__fd() with agent_server__on_readable() through
 * session__add_poll_fd(); at the end agent_server__stop(), then
 * agent_server__merge() and agent_server__print_summary().
 */
#ifndef LLMPROF_AGENT_SERVER_H
#define LLMPROF_AGENT_SERVER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "profile/profile.h"

struct agent_server;

struct agent_server_options {
	/* Besides root and llmprof's own user, the user allowed to connect
	 * (the target's); (uid_t)-1 for none. */
	uid_t target_uid;
	/* Socket name: "@name" for the abstract namespace, else a path.
	 * NULL picks a fresh abstract name. */
	const char *socket_name;
	/* GPU records kept for the timeline; later ones are folded into
	 * totals per launch stack, so their GPU time stays in the stacks.  0
	 * picks LLMPROF_GPU_TIMELINE_RECORDS, else the default (8 Mi). */
	size_t timeline_records;
};

/* One GPU record as received, on CLOCK_MONOTONIC. */
struct gpu_record {
	uint64_t start_ns;
	uint64_t end_ns;
	uint64_t bytes; /* memcpy and memset */
	enum gpu_activity_kind kind;
	uint32_t device;
	uint32_t context;
	uint32_t stream;
	uint32_t correlation;
	uint32_t runtime_correlation; /* memcpy only, else 0 */
	uint32_t graph_id;
	uint32_t name;	/* kernel: index for agent_server__name(); memcpy: copy kind */
	uint32_t agent; /* index of the connection it came on */
	uint8_t src_memory, dst_memory; /* memcpy: CUpti_ActivityMemoryKind */
};

/* One launching API call. */
struct gpu_launch_record {
	uint64_t time_ns;
	uint32_t correlation;
	uint32_t parent_correlation;
	uint32_t tid;
	uint32_t callback_id;
	uint32_t domain;
	uint32_t flags; /* GPU_LAUNCH_* of gpu_protocol.h */
	uint32_t graph_exec_id;
	uint32_t agent;
};

/* What is known about one agent connection. */
struct gpu_agent_info {
	uint32_t pid;
	char comm[16]; /* /proc/PID/comm at hello, may be empty */
	char version[16];
	char *cupti_path; /* may be NULL */
	uint32_t cupti_version;
	uint32_t clock_mode; /* enum gpu_clock_mode */
	int64_t clock_offset_ns;
	uint64_t clock_error_ns;
	uint32_t mode;		  /* enum gpu_agent_mode */
	bool other_pid_namespace; /* its pids and tids are not ours */
	bool hello;		  /* a valid hello arrived */
	bool goodbye;		  /* the agent said goodbye */
	bool closed;		  /* the connection is gone */
	bool malformed;		  /* closed because of a bad message */
	bool other_subscriber;	  /* CUPTI is in use by another tool */
	char *other_tool;	  /* its name when CUPTI said, or NULL */
	char *error;		  /* the agent's last error text, or NULL */
	char *notice;		  /* what its data lacks, or NULL */
	uint64_t dropped_activity, dropped_launches, dropped_messages, incomplete;
	uint64_t unnamed_kernels; /* sent without a name: its name table was full */
	uint64_t sent_kernels, sent_memcpys, sent_memsets, sent_launches; /* from goodbye */
};

struct agent_server_stats {
	size_t agents;
	size_t records; /* kernels + memcpys + memsets kept */
	size_t kernels, memcpys, memsets, launches;
	size_t outer_launches;	   /* launches not made inside another one */
	size_t probed;		   /* those that fired the launch probe */
	uint64_t folded;	   /* records past the timeline, in totals */
	uint64_t dropped_by_agent; /* sum of the agents' dropped counts */
	uint64_t unnamed_kernels;  /* sum of the agents' kernels without a name */
	size_t other_subscriber;   /* agents that found CUPTI taken */
	size_t malformed;	   /* connections ended for bad data */
	size_t rejected;	   /* connections refused (wrong user) */
	/* Filled by agent_server__merge(): activities added, those with no
	 * launch stack, those whose launch fired no probe and that took the
	 * stack of a probed launch of the same kernel, and records that ended
	 * before the profile began. */
	size_t merged, unattributed, inferred, outside_window;
};

int agent_server__open(struct agent_server **out, const struct agent_server_options *options);
void agent_server__close(struct agent_server *gs);

/* The name to hand the agent, "@..." for an abstract socket. */
const char *agent_server__socket_name(const struct agent_server *gs);
/* A descriptor that turns readable when a connection or data arrives. */
int agent_server__fd(const struct agent_server *gs);
/* Accepts and reads whatever is ready without blocking; for
 * session__add_poll_fd().  A bad connection is closed with a warning and
 * does not fail; returns 0, or -errno when the session itself broke. */
int agent_server__on_readable(void *ctx);
/* Asks every connected agent to flush and say goodbye, and reads until all
 * have (or closed), or timeout_ms passes.  Returns 0, or -ETIMEDOUT with
 * what arrived kept. */
int agent_server__stop(struct agent_server *gs, unsigned int timeout_ms);
/* Parses bytes as if they came from a new agent connection, which is then
 * closed; for tests and replays.  Returns 0 or -EBADMSG (with what parsed
 * before the bad message kept). */
int agent_server__ingest(struct agent_server *gs, const void *data, size_t len);

/* Returns the CPU launch stack of a correlation id: frame ids of
 * profile, root first, at most max; 0 with *depth set, or -errno (-ENOENT
 * when unknown).  Every process counts correlation ids from 1, so the
 * launch must have been made on thread tid; tid is 0 when that is not known
 * (no launch record, or an agent in another pid namespace).  time_ns comes
 * from the agent's launch record, 0 when it had none. */
typedef int (*gpu_launch_stack_fn)(void *ctx, uint32_t correlation_id, uint32_t tid,
				   uint64_t time_ns, uint32_t *frames, size_t max, size_t *depth);

/* GPU work (a kernel, copy or set) and the launch that made it, for a join
 * with the API call the launch was made inside (an NCCL collective). */
struct gpu_join {
	const struct gpu_record *record;
	const char *kernel; /* its leaf's name */
	uint32_t pid, tid;  /* of the launching thread */
	uint64_t launch_ns; /* when the launch was made */
	uint32_t *frames;   /* its launch stack, root first; may be repaired */
	size_t depth, max;
	/* Out: the frame the record's timeline shows, -1 for its leaf. */
	int64_t activity_frame;
};

/* A frame id to put between a kernel's launch stack and its leaf, -1 for
 * none, or -errno. */
typedef int64_t (*gpu_join_fn)(void *ctx, struct profile *profile, struct gpu_join *join);

struct gpu_merge_options {
	gpu_launch_stack_fn launch_stack; /* NULL: everything is unattributed */
	void *ctx;
	gpu_join_fn join; /* NULL: no joins */
	void *join_ctx;
	/* Root frame of unattributed GPU stacks; NULL: the profile's first
	 * process frame, else the agent's comm, else "[process]". */
	const char *process_name;
};

/*
 * Adds every record as a struct gpu_activity of profile (times relative to
 * profile->start_ns; records that ended before it are skipped, one that
 * started before it is cut there) with a "[gpu] NAME" leaf on its launch
 * stack, or on "process;[unattributed]" when the core has none.  A launch
 * that has no stack (its probe was rate-limited or its event lost) takes the
 * stack of a probed launch of the same kernel, from the same thread and
 * nearest in time if there is one, else from any thread.  When
 * profile->unit is UNIT_MICROSECONDS the durations are added to those
 * stacks' weights.  Deterministic: records are taken in (device, stream,
 * start, correlation) order.  Records folded past the timeline add no
 * activity, only their time, on the stack of the one that stands for them.
 * Returns 0 or -errno.
 */
int agent_server__merge(struct agent_server *gs, struct profile *profile,
			const struct gpu_merge_options *options);

/* GPU figures of a merged profile. */
struct gpu_kernel_share {
	uint32_t frame; /* the [gpu] frame */
	uint64_t total_ns;
	uint64_t count;
};

struct gpu_summary {
	uint64_t wall_ns; /* profile->duration_ns, or the GPU span when 0 */
	/* A device is a process's (gpu_activity.process): ranks that each see
	 * their GPU as device 0 use different GPUs. */
	uint32_t nr_devices;
	uint32_t devices[16];
	uint32_t processes[16];
	uint64_t busy_ns[16]; /* union of the device's spans within the wall time */
	uint64_t kernels, memcpys, memsets;
	uint64_t kernel_ns, memcpy_ns, memset_ns, memcpy_bytes;
	uint64_t unattributed;
	struct gpu_kernel_share *top; /* by total_ns, then name; malloc'd */
	size_t nr_top;
};

/* Fills *out from profile->gpu; keeps the top entries.  0 or -ENOMEM. */
int gpu_summary__compute(const struct profile *profile, size_t top, struct gpu_summary *out);
void gpu_summary__free(struct gpu_summary *summary);
/* The stderr block: busy share per device, counts, top kernels, what was not
 * attributed or was dropped, and agents that found CUPTI taken. */
int agent_server__print_summary(const struct agent_server *gs, const struct profile *profile,
				size_t top);

void agent_server__stats(const struct agent_server *gs, struct agent_server_stats *out);
size_t agent_server__nr_agents(const struct agent_server *gs);
const struct gpu_agent_info *agent_server__agent(const struct agent_server *gs, size_t index);
size_t agent_server__nr_records(const struct agent_server *gs);
const struct gpu_record *agent_server__record(const struct agent_server *gs, size_t index);
/* The mangled kernel name of a record, or NULL. */
const char *agent_server__kernel_name(const struct agent_server *gs, const struct gpu_record *r);
/* The launch with this correlation id on this agent, or NULL. */
const struct gpu_launch_record *agent_server__launch(const struct agent_server *gs, uint32_t agent,
						     uint32_t correlation);
/* "HtoD", "DtoH", ... for a memcpy's copy kind. */
const char *gpu_memcpy_kind__name(uint32_t kind);

#endif /* LLMPROF_AGENT_SERVER_H */
