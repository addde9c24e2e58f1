/* SPDX-License-Identifier: GPL-2.0 */
/*
 * What the GPU receiver's parts share: the session and its connections
 * (gpu_session.c: socket, accept, read, stop), the parsing of the wire
 * protocol into records (gpu_parse.c), and the merge of those records into
 * a profile (gpu_merge.c).
 */
#ifndef LLMPROF_GPU_SESSION_INTERNAL_H
#define LLMPROF_GPU_SESSION_INTERNAL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "base/hash_index.h"
#include "gpu/gpu_session.h"

#define DEFAULT_MAX_RECORDS (8u << 20)
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

struct gpu_session {
	struct gpu_session_options options;
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
	struct string_table names;

	struct gpu_session_stats stats;
};

int64_t string_table__intern(struct string_table *t, const char *text, size_t len);
void string_table__free(struct string_table *t);
uint64_t launch_key(uint32_t agent, uint32_t correlation);
int launch_index__put(struct launch_index *li, uint64_t key, uint32_t value);
int64_t launch_index__get(const struct launch_index *li, uint64_t key);
int64_t gpu_session__add_agent(struct gpu_session *gs, int fd);
void gpu_session__close_connection(struct gpu_session *gs, uint32_t agent);
int gpu_session__parse_buffer(struct gpu_session *gs, uint32_t agent);
void gpu_session__end_malformed(struct gpu_session *gs, uint32_t agent, int err);

#endif /* LLMPROF_GPU_SESSION_INTERNAL_H */
