// SPDX-License-Identifier: GPL-2.0
/*
 * The wire protocol (gpu_protocol.h) as the receiver reads it: one message
 * at a time from a connection's reassembly buffer, checked, and stored as
 * agent facts, GPU records and launch records.  Bad data ends that one
 * connection, never the session.
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <poll.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/random.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include "array.h"
#include "base/clock.h"
#include "base/procfs.h"
#include "gpu/gpu_protocol.h"
#include "gpu/agent_server.h"
#include "gpu/agent_server_internal.h"
#include "status.h"

/* Records of one fold: same process, launching thread, kernel or copy,
 * device, and call site. */
static bool same_fold(const struct gpu_fold *f, const struct gpu_record *r, uint32_t tid,
		      uint32_t site)
{
	return f->record.agent == r->agent && f->record.kind == r->kind &&
	       f->record.name == r->name && f->record.device == r->device &&
	       f->record.src_memory == r->src_memory && f->record.dst_memory == r->dst_memory &&
	       !f->record.correlation == !r->correlation && f->launch.tid == tid && f->site == site;
}

/* The hash of a fold's records whatever their site. */
static uint64_t fold_hash(const struct gpu_record *r, uint32_t tid)
{
	uint64_t h = ((uint64_t)r->agent << 32 | r->name) * 0x9e3779b97f4a7c15ull;

	h ^= ((uint64_t)tid << 32 | r->device << 16 | r->kind << 8 | r->src_memory << 4 |
	      r->dst_memory) *
	     0xc2b2ae3d27d4eb4full;
	return (h ^ (h >> 29)) + !r->correlation;
}

static uint64_t site_hash(uint64_t hash, uint32_t site)
{
	return hash ^ (uint64_t)site * 0xff51afd7ed558ccdull;
}

static uint64_t fold_rehash(const void *ctx, uint32_t id)
{
	const struct fold_table *t = ctx;
	const struct gpu_fold *f = &t->folds[id];

	return site_hash(fold_hash(&f->record, f->launch.tid), f->site);
}

/* The call site r's records fold under: its launch's when that fired the
 * probe, else the latest such launch's of the same kernel and thread, else
 * 0. */
static uint32_t fold_site(const struct fold_table *t, const struct gpu_record *r,
			  const struct gpu_launch_record *l, uint32_t tid, uint64_t hash)
{
	uint64_t latest;

	if (l && (l->flags & GPU_LAUNCH_PROBED))
		return l->correlation;
	if (!u64_map__get(&t->latest, hash, &latest) || latest >= t->nr ||
	    !same_fold(&t->folds[latest], r, tid, t->folds[latest].site))
		return 0;
	return t->folds[latest].site;
}

/*
 * Adds r's time to its fold, on its launch l (NULL: none known).  The
 * first record whose launch fired the probe stands for the fold (else the
 * first record): its stack, which the core keeps, is the one all of them
 * take.
 */
static int fold_record(struct agent_server *gs, const struct gpu_record *r,
		       const struct gpu_launch_record *l)
{
	struct fold_table *t = &gs->folds;
	struct hash_index *index = &t->index;
	uint32_t tid = l ? l->tid : 0;
	uint64_t hash = fold_hash(r, tid);
	uint32_t site = fold_site(t, r, l, tid, hash);
	struct gpu_fold *f = NULL;
	size_t at;

	if (hash_index__reserve(index, 256, fold_rehash, t))
		return -ENOMEM;
	for (at = hash_index__first(index, site_hash(hash, site)); !hash_index__empty(index, at);
	     at = hash_index__next(index, at)) {
		if (same_fold(&t->folds[hash_index__id(index, at)], r, tid, site)) {
			f = &t->folds[hash_index__id(index, at)];
			break;
		}
	}
	if (!f) {
		if (array__grow_zeroed((void **)&t->folds, &t->cap, t->nr + 1, sizeof(*f)))
			return -ENOMEM;
		if (site && u64_map__put(&t->latest, hash, t->nr))
			return -ENOMEM;
		hash_index__set(index, at, t->nr);
		f = &t->folds[t->nr++];
		f->site = site;
	}
	if (!f->count ||
	    (l && (l->flags & GPU_LAUNCH_PROBED) && !(f->launch.flags & GPU_LAUNCH_PROBED))) {
		f->record = *r;
		f->launch = l ? *l : (struct gpu_launch_record){.tid = tid};
	}
	f->total_ns += r->end_ns - r->start_ns;
	f->bytes += r->bytes;
	f->count++;
	return 0;
}

int fold_table__add(struct agent_server *gs, const struct gpu_record *r)
{
	const struct gpu_launch_record *l = agent_server__outer_launch(gs, r);
	struct fold_table *t = &gs->folds;

	gs->folded++;
	/* The agent sends launches and records in packets of their own: a
	 * record that came before its launch waits for it. */
	if (!l && r->correlation && t->nr_pending < FOLD_PENDING_MAX) {
		if (array__grow((void **)&t->pending, &t->cap_pending, t->nr_pending + 1,
				sizeof(*t->pending)))
			return -ENOMEM;
		t->pending[t->nr_pending++] = (struct fold_pending){*r, clock__monotonic_ns()};
		return 0;
	}
	return fold_record(gs, r, l);
}

int fold_table__add_pending(struct agent_server *gs, bool all)
{
	struct fold_table *t = &gs->folds;
	uint64_t now = clock__monotonic_ns();
	size_t waiting = 0;
	int err = 0;

	/* Looked at again only when launches came or the oldest is due: a
	 * buffer of records alone costs nothing here. */
	if (!all && t->nr_pending && gs->stats.launches == t->launches_seen &&
	    now - t->pending[0].since_ns < FOLD_PENDING_WAIT_NS)
		return 0;
	t->launches_seen = gs->stats.launches;
	for (size_t i = 0; i < t->nr_pending && !err; i++) {
		const struct gpu_record *r = &t->pending[i].record;
		const struct gpu_launch_record *l = agent_server__outer_launch(gs, r);

		if (l || all || now - t->pending[i].since_ns >= FOLD_PENDING_WAIT_NS)
			err = fold_record(gs, r, l);
		else
			t->pending[waiting++] = t->pending[i];
	}
	t->nr_pending = err ? t->nr_pending : waiting;
	return err;
}

void fold_table__free(struct fold_table *t)
{
	free(t->folds);
	free(t->pending);
	hash_index__free(&t->index);
	u64_map__free(&t->latest);
	memset(t, 0, sizeof(*t));
}

static int add_record(struct agent_server *gs, const struct gpu_record *r)
{
	int err;

	if (r->kind == GPU_KERNEL)
		gs->stats.kernels++;
	else if (r->kind == GPU_MEMCPY)
		gs->stats.memcpys++;
	else
		gs->stats.memsets++;
	if (gs->nr_records >= gs->timeline_records) {
		if (!gs->folded)
			status__info("GPU timeline full at %zu records; later ones are added to "
				     "their stacks' totals only",
				     gs->nr_records);
		err = fold_table__add(gs, r);
		gs->stats.folded = gs->folded;
		return err;
	}
	if (array__grow_zeroed((void **)&gs->records, &gs->cap_records, gs->nr_records + 1,
			       sizeof(*r)))
		return -ENOMEM;
	gs->records[gs->nr_records++] = *r;
	gs->stats.records = gs->nr_records;
	return 0;
}

static int add_launch(struct agent_server *gs, const struct gpu_launch_record *l)
{
	int err;

	gs->stats.launches++;
	gs->stats.probed += !!(l->flags & GPU_LAUNCH_PROBED);
	gs->stats.outer_launches += !l->parent_correlation;
	/* Past the timeline a launch only has to wait for its records. */
	if (gs->nr_launches >= gs->timeline_records) {
		if (!gs->launch_ring) {
			gs->launch_ring = calloc(LAUNCH_RING_SIZE, sizeof(*gs->launch_ring));
			if (!gs->launch_ring)
				return -ENOMEM;
		}
		if (l->correlation)
			gs->launch_ring[l->correlation % LAUNCH_RING_SIZE] = *l;
		return 0;
	}
	if (array__grow_zeroed((void **)&gs->launches, &gs->cap_launches, gs->nr_launches + 1,
			       sizeof(*l)))
		return -ENOMEM;
	err = launch_index__put(&gs->launch_index, launch_key(l->agent, l->correlation),
				gs->nr_launches);
	if (err)
		return err;
	gs->launches[gs->nr_launches++] = *l;
	return 0;
}

static uint32_t kernel_name(const struct connection *c, uint32_t id)
{
	return id && id < c->nr_names && c->names[id] ? c->names[id] - 1 : NO_NAME;
}

static char *text_dup(const uint8_t *text, uint32_t len)
{
	return strndup((const char *)text, len);
}

static void read_comm(uint32_t pid, char comm[16])
{
	procfs__read_comm(pid, comm, 16);
}

/* One message's body, known to hold its fixed part. */
struct message {
	struct agent_server *server;
	uint32_t agent;
	uint32_t type;
	const uint8_t *body;
	size_t length; /* of the body */
};

static int parse_hello(const struct message *msg)
{
	struct agent_server *gs = msg->server;
	uint32_t agent = msg->agent;
	const uint8_t *body = msg->body;
	size_t body_len = msg->length;
	struct gpu_agent_info *info = &gs->agents[agent];
	struct gpu_hello m;

	memcpy(&m, body, sizeof(m));
	if (info->hello || m.path_length > body_len - sizeof(m))
		return -EBADMSG;
	if (m.protocol_version != GPU_PROTOCOL_VERSION) {
		status__warn("GPU agent of pid %u speaks protocol %u, llmprof %u: ignored", m.pid,
			     m.protocol_version, GPU_PROTOCOL_VERSION);
		return -EPROTO;
	}
	info->hello = true;
	/* SO_PEERCRED's pid is in our pid namespace, the agent's may not be. */
	if (!info->pid)
		info->pid = m.pid;
	info->other_pid_namespace = info->pid != m.pid;
	info->cupti_version = m.cupti_version;
	info->clock_mode = m.clock_mode;
	info->clock_offset_ns = m.clock_offset_ns;
	info->clock_error_ns = m.clock_error_ns;
	info->mode = m.agent_mode;
	memcpy(info->version, m.agent_version, sizeof(info->version));
	info->version[sizeof(info->version) - 1] = '\0';
	if (m.path_length) {
		info->cupti_path = text_dup(body + sizeof(m), m.path_length);
		if (!info->cupti_path)
			return -ENOMEM;
	}
	read_comm(info->pid, info->comm);
	status__debug("GPU agent %s of pid %u (%s) uses %s, clock %s", info->version, info->pid,
		      info->comm, info->cupti_path ? info->cupti_path : "?",
		      m.clock_mode == GPU_CLOCK_CALLBACK ? "callback" : "offset");
	return 0;
}

static int parse_name(const struct message *msg)
{
	struct agent_server *gs = msg->server;
	uint32_t agent = msg->agent;
	const uint8_t *body = msg->body;
	size_t body_len = msg->length;
	struct connection *c = &gs->connections[agent];
	struct gpu_name m;
	int64_t id;

	memcpy(&m, body, sizeof(m));
	if (!m.id || m.id >= MAX_NAME_ID || m.length > body_len - sizeof(m))
		return -EBADMSG;
	if (m.id >= c->nr_names) {
		size_t nr = c->nr_names;

		if (array__grow_zeroed((void **)&c->names, &nr, m.id + 1, sizeof(*c->names)))
			return -ENOMEM;
		c->nr_names = nr;
	}
	id = string_table__intern(&gs->names, (const char *)body + sizeof(m), m.length);
	if (id < 0)
		return id;
	c->names[m.id] = id + 1;
	return 0;
}

static int parse_kernel(const struct message *msg)
{
	struct agent_server *gs = msg->server;
	uint32_t agent = msg->agent;
	const uint8_t *body = msg->body;
	struct connection *c = &gs->connections[agent];
	struct gpu_agent_info *info = &gs->agents[agent];
	struct gpu_record r;
	struct gpu_kernel m;

	memcpy(&m, body, sizeof(m));
	if (!m.start_ns || m.end_ns < m.start_ns) {
		info->incomplete++;
		return 0;
	}
	r = (struct gpu_record){
	    .start_ns = m.start_ns,
	    .end_ns = m.end_ns,
	    .kind = GPU_KERNEL,
	    .device = m.device,
	    .context = m.context,
	    .stream = m.stream,
	    .correlation = m.correlation,
	    .graph_id = m.graph_id,
	    .name = kernel_name(c, m.name_id),
	    .agent = agent,
	};
	return add_record(gs, &r);
}

static int parse_memcpy(const struct message *msg)
{
	struct agent_server *gs = msg->server;
	uint32_t agent = msg->agent;
	const uint8_t *body = msg->body;
	struct gpu_agent_info *info = &gs->agents[agent];
	struct gpu_record r;
	struct gpu_memcpy m;

	memcpy(&m, body, sizeof(m));
	if (!m.start_ns || m.end_ns < m.start_ns) {
		info->incomplete++;
		return 0;
	}
	r = (struct gpu_record){
	    .start_ns = m.start_ns,
	    .end_ns = m.end_ns,
	    .bytes = m.bytes,
	    .kind = GPU_MEMCPY,
	    .device = m.device,
	    .context = m.context,
	    .stream = m.stream,
	    .correlation = m.correlation,
	    .runtime_correlation = m.runtime_correlation,
	    .graph_id = m.graph_id,
	    .name = m.copy_kind,
	    .agent = agent,
	    .src_memory = m.src_kind,
	    .dst_memory = m.dst_kind,
	};
	return add_record(gs, &r);
}

static int parse_memset(const struct message *msg)
{
	struct agent_server *gs = msg->server;
	uint32_t agent = msg->agent;
	const uint8_t *body = msg->body;
	struct gpu_agent_info *info = &gs->agents[agent];
	struct gpu_record r;
	struct gpu_memset m;

	memcpy(&m, body, sizeof(m));
	if (!m.start_ns || m.end_ns < m.start_ns) {
		info->incomplete++;
		return 0;
	}
	r = (struct gpu_record){
	    .start_ns = m.start_ns,
	    .end_ns = m.end_ns,
	    .bytes = m.bytes,
	    .kind = GPU_MEMSET,
	    .device = m.device,
	    .context = m.context,
	    .stream = m.stream,
	    .correlation = m.correlation,
	    .graph_id = m.graph_id,
	    .name = NO_NAME,
	    .agent = agent,
	};
	return add_record(gs, &r);
}

static int parse_launch(const struct message *msg)
{
	struct agent_server *gs = msg->server;
	uint32_t agent = msg->agent;
	const uint8_t *body = msg->body;
	struct gpu_launch_record l;
	struct gpu_launch m;

	memcpy(&m, body, sizeof(m));
	l = (struct gpu_launch_record){
	    .time_ns = m.time_ns,
	    .correlation = m.correlation,
	    .parent_correlation = m.parent_correlation,
	    .tid = m.tid,
	    .callback_id = m.callback_id,
	    .domain = m.domain,
	    .flags = m.flags,
	    .graph_exec_id = m.graph_exec_id,
	    .agent = agent,
	};
	return add_launch(gs, &l);
}

static int parse_dropped(const struct message *msg)
{
	struct agent_server *gs = msg->server;
	uint32_t agent = msg->agent;
	const uint8_t *body = msg->body;
	struct gpu_agent_info *info = &gs->agents[agent];
	struct gpu_dropped m = {0};

	/* An older agent's is shorter: what it lacks stays 0. */
	memcpy(&m, body, msg->length < sizeof(m) ? msg->length : sizeof(m));
	info->dropped_activity = m.activity_records;
	info->dropped_launches = m.launch_records;
	info->dropped_messages = m.messages;
	info->incomplete = m.incomplete;
	info->unnamed_kernels = m.unnamed_kernels;
	return 0;
}

static int parse_other_subscriber(const struct message *msg)
{
	struct agent_server *gs = msg->server;
	uint32_t agent = msg->agent;
	const uint8_t *body = msg->body;
	size_t body_len = msg->length;
	struct gpu_agent_info *info = &gs->agents[agent];
	struct gpu_other_subscriber m;

	memcpy(&m, body, sizeof(m));
	if (m.length > body_len - sizeof(m))
		return -EBADMSG;
	if (!info->other_subscriber)
		gs->stats.other_subscriber++;
	info->other_subscriber = true;
	free(info->other_tool);
	info->other_tool = m.length ? text_dup(body + sizeof(m), m.length) : NULL;
	status__warn("CUPTI in pid %u is in use by %s: no GPU data from it, CPU only", info->pid,
		     info->other_tool && info->other_tool[0] ? info->other_tool : "another tool");
	return 0;
}

static int parse_error(const struct message *msg)
{
	struct agent_server *gs = msg->server;
	uint32_t agent = msg->agent;
	const uint8_t *body = msg->body;
	size_t body_len = msg->length;
	struct gpu_agent_info *info = &gs->agents[agent];
	char **text = msg->type == GPU_MSG_NOTICE ? &info->notice : &info->error;
	struct gpu_error m;

	memcpy(&m, body, sizeof(m));
	if (m.length > body_len - sizeof(m))
		return -EBADMSG;
	free(*text);
	*text = text_dup(body + sizeof(m), m.length);
	if (msg->type == GPU_MSG_NOTICE)
		status__warn("GPU data of pid %u: %s", info->pid,
			     info->notice ? info->notice : "incomplete");
	/* -ENOTSUP: the agent chose not to capture, and says why. */
	else if (m.error == -ENOTSUP)
		status__warn("CPU only for pid %u: %s", info->pid,
			     info->error ? info->error : "GPU capture not safe");
	else
		status__warn("GPU agent in pid %u: %s", info->pid,
			     info->error ? info->error : "error");
	return 0;
}

static int parse_goodbye(const struct message *msg)
{
	struct agent_server *gs = msg->server;
	uint32_t agent = msg->agent;
	const uint8_t *body = msg->body;
	struct gpu_agent_info *info = &gs->agents[agent];
	struct gpu_goodbye m;

	memcpy(&m, body, sizeof(m));
	info->goodbye = true;
	info->sent_kernels = m.kernels;
	info->sent_memcpys = m.memcpys;
	info->sent_memsets = m.memsets;
	info->sent_launches = m.launches;
	return 0;
}

/* The messages this llmprof knows, by type: the fixed part's smallest size
 * (its first version's, see gpu_protocol.h) and its parser; a type not here
 * is skipped. */
static const struct {
	size_t size;
	int (*parse)(const struct message *msg);
} parsers[] = {
    [GPU_MSG_HELLO] = {sizeof(struct gpu_hello), parse_hello},
    [GPU_MSG_NAME] = {sizeof(struct gpu_name), parse_name},
    [GPU_MSG_KERNEL] = {sizeof(struct gpu_kernel), parse_kernel},
    [GPU_MSG_MEMCPY] = {sizeof(struct gpu_memcpy), parse_memcpy},
    [GPU_MSG_MEMSET] = {sizeof(struct gpu_memset), parse_memset},
    [GPU_MSG_LAUNCH] = {sizeof(struct gpu_launch), parse_launch},
    [GPU_MSG_DROPPED] = {offsetof(struct gpu_dropped, unnamed_kernels), parse_dropped},
    [GPU_MSG_OTHER_SUBSCRIBER] = {sizeof(struct gpu_other_subscriber), parse_other_subscriber},
    [GPU_MSG_ERROR] = {sizeof(struct gpu_error), parse_error},
    [GPU_MSG_NOTICE] = {sizeof(struct gpu_error), parse_error},
    [GPU_MSG_GOODBYE] = {sizeof(struct gpu_goodbye), parse_goodbye},
};

/*
 * Checks one message at data and stores what it says.  Returns the bytes it
 * took (> 0), 0 when more bytes are needed, -EBADMSG or -EPROTO for data
 * that ends the connection, -ENOMEM.
 */
static int64_t parse_message(struct agent_server *gs, uint32_t agent, const uint8_t *data,
			     size_t len)
{
	struct gpu_agent_info *info = &gs->agents[agent];
	struct gpu_message_header h;
	struct message msg;
	int err;

	if (len < sizeof(h))
		return 0;
	memcpy(&h, data, sizeof(h));
	if (h.length < sizeof(h) || h.length % 8 || h.length > GPU_MESSAGE_MAX)
		return -EBADMSG;
	if (len < h.length)
		return 0;
	if (!info->hello && h.type != GPU_MSG_HELLO)
		return -EBADMSG;
	/* A type this llmprof does not know: skipped. */
	if (h.type >= sizeof(parsers) / sizeof(parsers[0]) || !parsers[h.type].parse)
		return h.length;
	msg = (struct message){.server = gs,
			       .agent = agent,
			       .type = h.type,
			       .body = data + sizeof(h),
			       .length = h.length - sizeof(h)};
	if (msg.length < parsers[h.type].size)
		return -EBADMSG;
	err = parsers[h.type].parse(&msg);
	return err ? err : (int64_t)h.length;
}

/* Parses what the connection's buffer holds; keeps a partial message. */
int agent_server__parse_buffer(struct agent_server *gs, uint32_t agent)
{
	struct connection *c = &gs->connections[agent];
	size_t off = 0;
	int64_t n = 0;

	while (off < c->used) {
		n = parse_message(gs, agent, c->data + off, c->used - off);
		if (n <= 0)
			break;
		off += n;
	}
	if (gs->folds.nr_pending && n >= 0) {
		int err = fold_table__add_pending(gs, false);

		if (err)
			return err;
	}
	if (off) {
		memmove(c->data, c->data + off, c->used - off);
		c->used -= off;
	}
	return n < 0 ? (int)n : 0;
}

void agent_server__end_malformed(struct agent_server *gs, uint32_t agent, int err)
{
	if (err == -ENOMEM)
		status__warn("GPU agent of pid %u: out of memory, its data stops here",
			     gs->agents[agent].pid);
	else if (err != -EPROTO)
		status__warn("GPU agent of pid %u sent malformed data: connection closed",
			     gs->agents[agent].pid);
	gs->agents[agent].malformed = true;
	gs->stats.malformed++;
	agent_server__close_connection(gs, agent);
}

int agent_server__ingest(struct agent_server *gs, const void *data, size_t len)
{
	const uint8_t *bytes = data;
	int64_t agent = agent_server__add_agent(gs, -1);
	int err = 0;

	if (agent < 0)
		return agent;
	while (len) {
		struct connection *c = &gs->connections[agent];
		size_t chunk = 2 * GPU_MESSAGE_MAX - c->used;

		if (chunk > len)
			chunk = len;
		memcpy(c->data + c->used, bytes, chunk);
		c->used += chunk;
		bytes += chunk;
		len -= chunk;
		err = agent_server__parse_buffer(gs, agent);
		if (err)
			break;
	}
	if (!err && gs->connections[agent].used)
		err = -EBADMSG; /* ends inside a message */
	if (err) {
		gs->agents[agent].malformed = true;
		gs->stats.malformed++;
	}
	agent_server__close_connection(gs, agent);
	return err == -ENOMEM ? err : err ? -EBADMSG : 0;
}
