/* SPDX-License-Identifier: GPL-2.0 */
/*
 * What the GPU receiver's parts share: the session and its connections
 * (agent_server.c: socket, accept, read, stop), the parsing of the wire
 * protocol into records (gpu_parse.c), and the merge of those records into
 * a profile (gpu_merge.c).
 */
#ifndef LLMPROF_AGENT_SERVER_INTERNAL_H
#define LLMPROF_AGENT_SERVER_INTERNAL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "base/hash_index.h"
#include "gpu/agent_server.h"

/* GPU records kept for the timeline; those after it are folded into
 * totals (struct gpu_fold).  LLMPROF_GPU_TIMELINE_RECORDS lowers it for
 * tests. */
#define DEFAULT_TIMELINE_RECORDS (1u << 23)
/* Launches past the timeline wait here for their records, direct-mapped
 * by correlation id: one lives until an id LAUNCH_RING_SIZE later. */
#define LAUNCH_RING_SIZE (1u << 18)
#define MAX_NAME_ID (1u << 20)
#define PACKETS_PER_WAKEUP 64
#define NO_NAME UINT32_MAX
#define LISTENER UINT64_MAX
/* Deepest launch stack taken from the core (its own limit is lower). */
#define MAX_STACK 4096

struct connection {
	int fd;	       /* -1 once closed */
	uint8_t *data; /* reassembly buffer, 2 * GPU_MESSAGE_MAX */
	size_t used;
	uint32_t *names; /* agent name id -> string table index */
	size_t nr_names;
	bool stop_sent;
};

/* Interned strings with an open-addressing index. */
struct string_table {
	char **strings;
	size_t nr, cap;
	struct hash_index index;
};

/* (agent, correlation) -> launch index. */
struct launch_index {
	struct u64_map map;
};

/*
 * The GPU records of one (process, thread, kernel or copy kind, device)
 * that arrived after the timeline was full, per call site: their time and
 * count, and one of them with its launch, whose stack stands for all of
 * them.  A launch that fired the probe is a site of its own (site: its
 * correlation id), so a kernel launched from two places keeps each one's
 * time; one that fired none joins the latest that did of the same
 * (process, thread, kernel, device), as a record on the timeline takes the
 * stack of the nearest, and before any did, site 0.  So there are at most
 * as many folds as launch probes past the timeline, which the launch-stack
 * rate bounds, as it bounds the core's launch stacks.  A record that came
 * before its launch waits for it in pending (at most FOLD_PENDING_MAX).
 */
struct gpu_fold {
	struct gpu_record record;
	struct gpu_launch_record launch; /* its outer launch; correlation 0: none */
	uint64_t total_ns, count, bytes;
	uint32_t site;
};

struct fold_table {
	struct gpu_fold *folds;
	size_t nr, cap;
	struct hash_index index;
	/* (process, thread, kernel, device) -> its latest fold with a site */
	struct u64_map latest;
	struct fold_pending {
		struct gpu_record record;
		uint64_t since_ns; /* when it arrived (CLOCK_MONOTONIC) */
	} * pending;
	size_t nr_pending, cap_pending;
	/* Launches known at the last look at pending: none new, none found. */
	uint64_t launches_seen;
};

#define FOLD_PENDING_MAX (1u << 16)
/* A record whose launch has not come in this long goes without it: the
 * agent dropped the launch (its queue was full). */
#define FOLD_PENDING_WAIT_NS 2000000000ull

struct agent_server {
	struct agent_server_options options;
	char name[108];
	char *path; /* filesystem socket to unlink, or NULL */
	int listen_fd;
	int epoll_fd;

	struct connection *connections;
	struct gpu_agent_info *agents;
	size_t nr_agents, cap_agents, cap_connections;

	struct gpu_record *records;
	size_t nr_records, cap_records;
	struct gpu_launch_record *launches;
	size_t nr_launches, cap_launches;
	struct launch_index launch_index;
	struct gpu_launch_record *launch_ring; /* LAUNCH_RING_SIZE, or NULL */
	struct fold_table folds;
	size_t timeline_records; /* records kept before folding */
	uint64_t folded;	 /* records folded */
	struct string_table names;

	struct agent_server_stats stats;
};

int64_t string_table__intern(struct string_table *t, const char *text, size_t len);
void string_table__free(struct string_table *t);
uint64_t launch_key(uint32_t agent, uint32_t correlation);
int launch_index__put(struct launch_index *li, uint64_t key, uint32_t value);
int64_t launch_index__get(const struct launch_index *li, uint64_t key);
/* The launch that stands for r: its own, or the runtime call that made it
 * (memcpy's runtime id, a nested driver call's parent); NULL if none. */
const struct gpu_launch_record *agent_server__outer_launch(const struct agent_server *gs,
							   const struct gpu_record *r);
int fold_table__add(struct agent_server *gs, const struct gpu_record *r);
/* Folds the records that came before their launches: those whose launch is
 * known now or that waited FOLD_PENDING_WAIT_NS, or (all) every one.  0 or
 * -ENOMEM. */
int fold_table__add_pending(struct agent_server *gs, bool all);
void fold_table__free(struct fold_table *t);
int64_t agent_server__add_agent(struct agent_server *gs, int fd);
void agent_server__close_connection(struct agent_server *gs, uint32_t agent);
int agent_server__parse_buffer(struct agent_server *gs, uint32_t agent);
void agent_server__end_malformed(struct agent_server *gs, uint32_t agent, int err);

#endif /* LLMPROF_AGENT_SERVER_INTERNAL_H */
