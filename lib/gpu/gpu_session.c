// SPDX-License-Identifier: GPL-2.0
/*
 * The llmprof side of the GPU agent: listening socket, connections, parsing
 * of the wire protocol (gpu_protocol.h), records in memory, the merge into a
 * profile and the GPU summary.  See gpu_session.h.
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <poll.h>
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
#include "gpu/gpu_protocol.h"
#include "gpu/gpu_session.h"
#include "status.h"
#include "sampling/symbolizer.h"

_Static_assert(sizeof(struct gpu_message_header) == 8, "header");
_Static_assert(sizeof(struct gpu_hello) % 8 == 0, "hello");
_Static_assert(sizeof(struct gpu_kernel) % 8 == 0, "kernel");
_Static_assert(sizeof(struct gpu_memcpy) % 8 == 0, "memcpy");
_Static_assert(sizeof(struct gpu_memset) % 8 == 0, "memset");
_Static_assert(sizeof(struct gpu_launch) % 8 == 0, "launch");

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
	uint32_t *slots; /* index + 1 */
	size_t nr_slots;
};

/* (agent, correlation) -> launch index. */
struct launch_index {
	uint64_t *keys;
	uint32_t *values; /* index + 1, 0 empty */
	size_t cap, used;
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

static uint64_t fnv1a(const void *data, size_t len)
{
	const unsigned char *p = data;
	uint64_t h = 0xcbf29ce484222325ULL;

	for (size_t i = 0; i < len; i++) {
		h ^= p[i];
		h *= 0x100000001b3ULL;
	}
	return h;
}

static int64_t string_table__intern(struct string_table *t, const char *text, size_t len)
{
	uint64_t h = fnv1a(text, len);
	size_t pos;
	char *copy;

	if ((t->nr + 1) * 2 > t->nr_slots) {
		size_t nr_slots = t->nr_slots ? t->nr_slots * 2 : 256;
		uint32_t *slots = calloc(nr_slots, sizeof(*slots));

		if (!slots)
			return -ENOMEM;
		for (size_t i = 0; i < t->nr; i++) {
			pos = fnv1a(t->strings[i], strlen(t->strings[i])) & (nr_slots - 1);
			while (slots[pos])
				pos = (pos + 1) & (nr_slots - 1);
			slots[pos] = i + 1;
		}
		free(t->slots);
		t->slots = slots;
		t->nr_slots = nr_slots;
	}
	for (pos = h & (t->nr_slots - 1); t->slots[pos]; pos = (pos + 1) & (t->nr_slots - 1)) {
		const char *s = t->strings[t->slots[pos] - 1];

		if (!strncmp(s, text, len) && s[len] == '\0')
			return t->slots[pos] - 1;
	}
	if (array__grow_zeroed((void **)&t->strings, &t->cap, t->nr + 1, sizeof(*t->strings)))
		return -ENOMEM;
	copy = strndup(text, len);
	if (!copy)
		return -ENOMEM;
	/* A NUL inside the text made the copy shorter: intern that. */
	if (strlen(copy) != len) {
		int64_t id = string_table__intern(t, copy, strlen(copy));

		free(copy);
		return id;
	}
	t->strings[t->nr] = copy;
	t->slots[pos] = t->nr + 1;
	return t->nr++;
}

static void string_table__free(struct string_table *t)
{
	for (size_t i = 0; i < t->nr; i++)
		free(t->strings[i]);
	free(t->strings);
	free(t->slots);
}

static uint64_t launch_key(uint32_t agent, uint32_t correlation)
{
	return (uint64_t)agent << 32 | correlation;
}

static uint64_t mix64(uint64_t x)
{
	x ^= x >> 33;
	x *= 0xff51afd7ed558ccdULL;
	x ^= x >> 33;
	return x;
}

static int launch_index__put(struct launch_index *li, uint64_t key, uint32_t value)
{
	size_t pos;

	if ((li->used + 1) * 2 > li->cap) {
		size_t cap = li->cap ? li->cap * 2 : 1024;
		uint64_t *keys = calloc(cap, sizeof(*keys));
		uint32_t *values = calloc(cap, sizeof(*values));

		if (!keys || !values) {
			free(keys);
			free(values);
			return -ENOMEM;
		}
		for (size_t i = 0; i < li->cap; i++) {
			if (!li->values[i])
				continue;
			pos = mix64(li->keys[i]) & (cap - 1);
			while (values[pos])
				pos = (pos + 1) & (cap - 1);
			keys[pos] = li->keys[i];
			values[pos] = li->values[i];
		}
		free(li->keys);
		free(li->values);
		li->keys = keys;
		li->values = values;
		li->cap = cap;
	}
	for (pos = mix64(key) & (li->cap - 1); li->values[pos]; pos = (pos + 1) & (li->cap - 1)) {
		if (li->keys[pos] == key) {
			li->values[pos] = value + 1;
			return 0;
		}
	}
	li->keys[pos] = key;
	li->values[pos] = value + 1;
	li->used++;
	return 0;
}

static int64_t launch_index__get(const struct launch_index *li, uint64_t key)
{
	if (!li->cap)
		return -1;
	for (size_t pos = mix64(key) & (li->cap - 1); li->values[pos];
	     pos = (pos + 1) & (li->cap - 1))
		if (li->keys[pos] == key)
			return li->values[pos] - 1;
	return -1;
}

const char *gpu_memcpy_kind__name(uint32_t kind)
{
	static const char *const names[] = {
		[GPU_MEMCPY_UNKNOWN] = "unknown", [GPU_MEMCPY_HTOD] = "HtoD",
		[GPU_MEMCPY_DTOH] = "DtoH",	      [GPU_MEMCPY_HTOA] = "HtoA",
		[GPU_MEMCPY_ATOH] = "AtoH",	      [GPU_MEMCPY_ATOA] = "AtoA",
		[GPU_MEMCPY_ATOD] = "AtoD",	      [GPU_MEMCPY_DTOA] = "DtoA",
		[GPU_MEMCPY_DTOD] = "DtoD",	      [GPU_MEMCPY_HTOH] = "HtoH",
		[GPU_MEMCPY_PTOP] = "PtoP",
	};

	return kind < sizeof(names) / sizeof(names[0]) ? names[kind] : "unknown";
}

/* A new agent slot; its connection starts closed (ingest) or gets fd. */
static int64_t add_agent(struct gpu_session *gs, int fd)
{
	struct connection *c;

	if (gs->nr_agents == UINT32_MAX)
		return -E2BIG;
	if (array__grow_zeroed((void **)&gs->agents, &gs->cap_agents, gs->nr_agents + 1, sizeof(*gs->agents)) ||
	    array__grow_zeroed((void **)&gs->connections, &gs->cap_connections, gs->nr_agents + 1,
		 sizeof(*gs->connections)))
		return -ENOMEM;
	c = &gs->connections[gs->nr_agents];
	memset(c, 0, sizeof(*c));
	c->fd = -1;
	c->data = malloc(2 * GPU_MESSAGE_MAX);
	if (!c->data)
		return -ENOMEM;
	c->fd = fd;
	memset(&gs->agents[gs->nr_agents], 0, sizeof(gs->agents[0]));
	gs->stats.agents = gs->nr_agents + 1;
	return gs->nr_agents++;
}

static void close_connection(struct gpu_session *gs, uint32_t agent)
{
	struct connection *c = &gs->connections[agent];

	if (c->fd >= 0) {
		if (gs->epoll_fd >= 0)
			epoll_ctl(gs->epoll_fd, EPOLL_CTL_DEL, c->fd, NULL);
		close(c->fd);
	}
	c->fd = -1;
	free(c->data);
	c->data = NULL;
	c->used = 0;
	free(c->names);
	c->names = NULL;
	c->nr_names = 0;
	gs->agents[agent].closed = true;
}

static int add_record(struct gpu_session *gs, const struct gpu_record *r)
{
	size_t max = gs->options.max_records ? gs->options.max_records : DEFAULT_MAX_RECORDS;

	if (gs->nr_records >= max) {
		gs->stats.dropped_records++;
		return 0;
	}
	if (array__grow_zeroed((void **)&gs->records, &gs->cap_records, gs->nr_records + 1, sizeof(*r)))
		return -ENOMEM;
	gs->records[gs->nr_records++] = *r;
	gs->stats.records = gs->nr_records;
	if (r->kind == GPU_KERNEL)
		gs->stats.kernels++;
	else if (r->kind == GPU_MEMCPY)
		gs->stats.memcpys++;
	else
		gs->stats.memsets++;
	return 0;
}

static int add_launch(struct gpu_session *gs, const struct gpu_launch_record *l)
{
	size_t max = gs->options.max_records ? gs->options.max_records : DEFAULT_MAX_RECORDS;
	int err;

	if (gs->nr_launches >= max) {
		gs->stats.dropped_records++;
		return 0;
	}
	if (array__grow_zeroed((void **)&gs->launches, &gs->cap_launches, gs->nr_launches + 1, sizeof(*l)))
		return -ENOMEM;
	err = launch_index__put(&gs->launch_index, launch_key(l->agent, l->correlation),
				gs->nr_launches);
	if (err)
		return err;
	gs->launches[gs->nr_launches++] = *l;
	gs->stats.launches = gs->nr_launches;
	gs->stats.probed += !!(l->flags & GPU_LAUNCH_PROBED);
	gs->stats.outer_launches += !l->parent_correlation;
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
	char path[64];
	ssize_t n;
	int fd;

	comm[0] = '\0';
	snprintf(path, sizeof(path), "/proc/%u/comm", pid);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return;
	n = read(fd, comm, 15);
	close(fd);
	if (n <= 0)
		return;
	comm[n] = '\0';
	if (comm[n - 1] == '\n')
		comm[n - 1] = '\0';
}

/*
 * Checks one message at data and stores what it says.  Returns the bytes it
 * took (> 0), 0 when more bytes are needed, -EBADMSG or -EPROTO for data
 * that ends the connection, -ENOMEM.
 */
static int64_t parse_message(struct gpu_session *gs, uint32_t agent, const uint8_t *data,
			     size_t len)
{
	struct connection *c = &gs->connections[agent];
	struct gpu_agent_info *info = &gs->agents[agent];
	struct gpu_launch_record l;
	struct gpu_message_header h;
	struct gpu_record r;
	const uint8_t *body = data + sizeof(h);
	size_t body_len;
	int err = 0;

	if (len < sizeof(h))
		return 0;
	memcpy(&h, data, sizeof(h));
	if (h.length < sizeof(h) || h.length % 8 || h.length > GPU_MESSAGE_MAX)
		return -EBADMSG;
	if (len < h.length)
		return 0;
	body_len = h.length - sizeof(h);
	if (!info->hello && h.type != GPU_MSG_HELLO)
		return -EBADMSG;

#define NEED(type_)                                                                                \
	do {                                                                                       \
		if (body_len < sizeof(type_))                                                      \
			return -EBADMSG;                                                           \
	} while (0)

	switch (h.type) {
	case GPU_MSG_HELLO: {
		struct gpu_hello m;

		NEED(m);
		memcpy(&m, body, sizeof(m));
		if (info->hello || m.path_length > body_len - sizeof(m))
			return -EBADMSG;
		if (m.protocol_version != GPU_PROTOCOL_VERSION) {
			report__warn("GPU agent of pid %u speaks protocol %u, llmprof %u: ignored",
				     m.pid, m.protocol_version, GPU_PROTOCOL_VERSION);
			return -EPROTO;
		}
		info->hello = true;
		/* SO_PEERCRED's pid is in our pid namespace, the agent's may not be. */
		if (!info->pid)
			info->pid = m.pid;
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
		report__debug("GPU agent %s of pid %u (%s) uses %s, clock %s", info->version,
			      info->pid, info->comm, info->cupti_path ? info->cupti_path : "?",
			      m.clock_mode == GPU_CLOCK_CALLBACK ? "callback" : "offset");
		break;
	}
	case GPU_MSG_NAME: {
		struct gpu_name m;
		int64_t id;

		NEED(m);
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
		break;
	}
	case GPU_MSG_KERNEL: {
		struct gpu_kernel m;

		NEED(m);
		memcpy(&m, body, sizeof(m));
		if (!m.start_ns || m.end_ns < m.start_ns) {
			info->incomplete++;
			break;
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
		err = add_record(gs, &r);
		break;
	}
	case GPU_MSG_MEMCPY: {
		struct gpu_memcpy m;

		NEED(m);
		memcpy(&m, body, sizeof(m));
		if (!m.start_ns || m.end_ns < m.start_ns) {
			info->incomplete++;
			break;
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
		};
		err = add_record(gs, &r);
		break;
	}
	case GPU_MSG_MEMSET: {
		struct gpu_memset m;

		NEED(m);
		memcpy(&m, body, sizeof(m));
		if (!m.start_ns || m.end_ns < m.start_ns) {
			info->incomplete++;
			break;
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
		err = add_record(gs, &r);
		break;
	}
	case GPU_MSG_LAUNCH: {
		struct gpu_launch m;

		NEED(m);
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
		err = add_launch(gs, &l);
		break;
	}
	case GPU_MSG_DROPPED: {
		struct gpu_dropped m;

		NEED(m);
		memcpy(&m, body, sizeof(m));
		info->dropped_activity = m.activity_records;
		info->dropped_launches = m.launch_records;
		info->dropped_messages = m.messages;
		info->incomplete = m.incomplete;
		break;
	}
	case GPU_MSG_OTHER_SUBSCRIBER: {
		struct gpu_other_subscriber m;

		NEED(m);
		memcpy(&m, body, sizeof(m));
		if (m.length > body_len - sizeof(m))
			return -EBADMSG;
		if (!info->other_subscriber)
			gs->stats.other_subscriber++;
		info->other_subscriber = true;
		free(info->other_tool);
		info->other_tool = m.length ? text_dup(body + sizeof(m), m.length) : NULL;
		report__warn(
		    "CUPTI in pid %u is in use by %s: no GPU data from it, CPU only", info->pid,
		    info->other_tool && info->other_tool[0] ? info->other_tool : "another tool");
		break;
	}
	case GPU_MSG_ERROR: {
		struct gpu_error m;

		NEED(m);
		memcpy(&m, body, sizeof(m));
		if (m.length > body_len - sizeof(m))
			return -EBADMSG;
		free(info->error);
		info->error = text_dup(body + sizeof(m), m.length);
		report__warn("GPU agent in pid %u: %s", info->pid,
			     info->error ? info->error : "error");
		break;
	}
	case GPU_MSG_GOODBYE: {
		struct gpu_goodbye m;

		NEED(m);
		memcpy(&m, body, sizeof(m));
		info->goodbye = true;
		info->sent_kernels = m.kernels;
		info->sent_memcpys = m.memcpys;
		info->sent_memsets = m.memsets;
		info->sent_launches = m.launches;
		break;
	}
	default:
		/* A type this llmprof does not know: skip it. */
		break;
	}
#undef NEED
	return err ? err : (int64_t)h.length;
}

/* Parses what the connection's buffer holds; keeps a partial message. */
static int parse_buffer(struct gpu_session *gs, uint32_t agent)
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
	if (off) {
		memmove(c->data, c->data + off, c->used - off);
		c->used -= off;
	}
	return n < 0 ? (int)n : 0;
}

static void end_malformed(struct gpu_session *gs, uint32_t agent, int err)
{
	if (err == -ENOMEM)
		report__warn("GPU agent of pid %u: out of memory, its data stops here",
			     gs->agents[agent].pid);
	else if (err != -EPROTO)
		report__warn("GPU agent of pid %u sent malformed data: connection closed",
			     gs->agents[agent].pid);
	gs->agents[agent].malformed = true;
	gs->stats.malformed++;
	close_connection(gs, agent);
}

int gpu_session__ingest(struct gpu_session *gs, const void *data, size_t len)
{
	const uint8_t *bytes = data;
	int64_t agent = add_agent(gs, -1);
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
		err = parse_buffer(gs, agent);
		if (err)
			break;
	}
	if (!err && gs->connections[agent].used)
		err = -EBADMSG; /* ends inside a message */
	if (err) {
		gs->agents[agent].malformed = true;
		gs->stats.malformed++;
	}
	close_connection(gs, agent);
	return err == -ENOMEM ? err : err ? -EBADMSG : 0;
}

static bool peer_allowed(const struct gpu_session *gs, int fd, struct ucred *cred)
{
	socklen_t len = sizeof(*cred);

	if (getsockopt(fd, SOL_SOCKET, SO_PEERCRED, cred, &len))
		return false;
	return cred->uid == 0 || cred->uid == geteuid() || cred->uid == gs->options.target_uid;
}

static int send_stop(struct connection *c)
{
	struct gpu_message_header h = {.type = GPU_MSG_STOP, .length = sizeof(h)};

	if (c->fd < 0 || c->stop_sent)
		return 0;
	c->stop_sent = true;
	if (send(c->fd, &h, sizeof(h), MSG_NOSIGNAL | MSG_DONTWAIT) != sizeof(h))
		return -errno;
	return 0;
}

static int accept_connections(struct gpu_session *gs, bool stopping)
{
	for (;;) {
		struct epoll_event event = {.events = EPOLLIN};
		struct ucred cred;
		int64_t agent;
		int fd;

		fd = accept4(gs->listen_fd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC);
		if (fd < 0) {
			if (errno == EAGAIN || errno == EINTR || errno == ECONNABORTED)
				return 0;
			if (errno == EMFILE || errno == ENFILE || errno == ENOBUFS ||
			    errno == ENOMEM) {
				report__warn("cannot accept a GPU agent: %s", strerror(errno));
				return 0;
			}
			return -errno;
		}
		if (!peer_allowed(gs, fd, &cred)) {
			report__warn("GPU agent socket: refused a connection from uid %u pid %d",
				     cred.uid, cred.pid);
			gs->stats.rejected++;
			close(fd);
			continue;
		}
		agent = add_agent(gs, fd);
		if (agent < 0) {
			close(fd);
			report__warn("cannot accept a GPU agent: %s", strerror((int)-agent));
			continue;
		}
		gs->agents[agent].pid = cred.pid;
		event.data.u64 = agent;
		if (epoll_ctl(gs->epoll_fd, EPOLL_CTL_ADD, fd, &event)) {
			int err = -errno;

			close_connection(gs, agent);
			return err;
		}
		if (stopping)
			send_stop(&gs->connections[agent]);
	}
}

/* Reads a bounded number of packets from one connection. */
static void read_connection(struct gpu_session *gs, uint32_t agent)
{
	for (int i = 0; i < PACKETS_PER_WAKEUP; i++) {
		struct connection *c = &gs->connections[agent];
		struct iovec iov;
		struct msghdr msg = {.msg_iov = &iov, .msg_iovlen = 1};
		ssize_t n;
		int err;

		if (c->fd < 0)
			return;
		iov.iov_base = c->data + c->used;
		iov.iov_len = 2 * GPU_MESSAGE_MAX - c->used;
		n = recvmsg(c->fd, &msg, MSG_DONTWAIT);
		if (n < 0) {
			if (errno == EAGAIN || errno == EINTR)
				return;
			report__debug("GPU agent of pid %u: %s", gs->agents[agent].pid,
				      strerror(errno));
			close_connection(gs, agent);
			return;
		}
		if (n == 0) {
			if (c->used)
				end_malformed(gs, agent, -EBADMSG);
			else
				close_connection(gs, agent);
			return;
		}
		if (msg.msg_flags & MSG_TRUNC) {
			end_malformed(gs, agent, -EBADMSG);
			return;
		}
		c->used += n;
		err = parse_buffer(gs, agent);
		if (err) {
			end_malformed(gs, agent, err);
			return;
		}
		if (gs->agents[agent].goodbye && !c->used) {
			close_connection(gs, agent);
			return;
		}
	}
}

static int handle_events(struct gpu_session *gs, bool stopping)
{
	for (;;) {
		struct epoll_event events[16];
		int n = epoll_wait(gs->epoll_fd, events, 16, 0);

		if (n < 0) {
			if (errno == EINTR)
				continue;
			return -errno;
		}
		if (!n)
			return 0;
		for (int i = 0; i < n; i++) {
			if (events[i].data.u64 == LISTENER) {
				int err = accept_connections(gs, stopping);

				if (err)
					return err;
				continue;
			}
			if (events[i].data.u64 < gs->nr_agents)
				read_connection(gs, events[i].data.u64);
		}
		if (n < 16)
			return 0;
	}
}

int gpu_session__on_readable(void *ctx)
{
	return handle_events(ctx, false);
}

static uint64_t monotonic_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1000ull + ts.tv_nsec / 1000000;
}

int gpu_session__stop(struct gpu_session *gs, unsigned int timeout_ms)
{
	uint64_t deadline = monotonic_ms() + timeout_ms;
	int err;

	err = handle_events(gs, true);
	if (err)
		return err;
	for (size_t i = 0; i < gs->nr_agents; i++)
		if (send_stop(&gs->connections[i]))
			close_connection(gs, i);
	for (;;) {
		struct pollfd pfd = {.fd = gs->epoll_fd, .events = POLLIN};
		uint64_t now = monotonic_ms();
		bool open = false;

		for (size_t i = 0; i < gs->nr_agents; i++)
			open |= gs->connections[i].fd >= 0;
		if (!open)
			return 0;
		if (now >= deadline)
			break;
		if (poll(&pfd, 1, deadline - now) < 0 && errno != EINTR)
			return -errno;
		err = handle_events(gs, true);
		if (err)
			return err;
	}
	for (size_t i = 0; i < gs->nr_agents; i++) {
		if (gs->connections[i].fd < 0)
			continue;
		report__warn(
		    "GPU agent of pid %u did not finish in %u ms; its last records are lost",
		    gs->agents[i].pid, timeout_ms);
		close_connection(gs, i);
	}
	return -ETIMEDOUT;
}

static int make_socket_name(char *name, size_t size)
{
	uint64_t random;

	if (getrandom(&random, sizeof(random), GRND_NONBLOCK) != sizeof(random)) {
		struct timespec ts;

		clock_gettime(CLOCK_MONOTONIC, &ts);
		random = mix64(ts.tv_nsec ^ (uint64_t)ts.tv_sec << 30 ^ getpid());
	}
	snprintf(name, size, "@llmprof-gpu-%d-%016" PRIx64, getpid(), random);
	return 0;
}

static socklen_t fill_address(struct sockaddr_un *addr, const char *name)
{
	size_t len = strlen(name);

	memset(addr, 0, sizeof(*addr));
	addr->sun_family = AF_UNIX;
	memcpy(addr->sun_path, name, len);
	if (name[0] == '@')
		addr->sun_path[0] = '\0';
	return offsetof(struct sockaddr_un, sun_path) + len + (name[0] == '@' ? 0 : 1);
}

int gpu_session__open(struct gpu_session **out, const struct gpu_session_options *options)
{
	struct epoll_event event = {.events = EPOLLIN, .data.u64 = LISTENER};
	struct gpu_session *gs = calloc(1, sizeof(*gs));
	struct sockaddr_un addr;
	int err = -ENOMEM;

	*out = NULL;
	if (!gs)
		return -ENOMEM;
	gs->listen_fd = -1;
	gs->epoll_fd = -1;
	if (options)
		gs->options = *options;
	else
		gs->options.target_uid = (uid_t)-1;
	gs->options.socket_name = NULL;
	if (options && options->socket_name) {
		if (strlen(options->socket_name) < 2 ||
		    strlen(options->socket_name) >= sizeof(addr.sun_path)) {
			err = -ENAMETOOLONG;
			goto cleanup;
		}
		snprintf(gs->name, sizeof(gs->name), "%s", options->socket_name);
	} else {
		make_socket_name(gs->name, sizeof(gs->name));
	}

	gs->listen_fd = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	if (gs->listen_fd < 0) {
		err = -errno;
		goto cleanup;
	}
	if (gs->name[0] != '@') {
		/* Only our user may connect until the socket is handed over. */
		mode_t old = umask(0077);

		err = bind(gs->listen_fd, (struct sockaddr *)&addr, fill_address(&addr, gs->name));
		umask(old);
		if (err) {
			err = -errno;
			goto cleanup;
		}
		gs->path = strdup(gs->name);
		if (!gs->path) {
			err = -ENOMEM;
			goto cleanup;
		}
		if (gs->options.target_uid != (uid_t)-1 && gs->options.target_uid != geteuid() &&
		    chown(gs->path, gs->options.target_uid, (gid_t)-1)) {
			err = -errno;
			goto cleanup;
		}
	} else if (bind(gs->listen_fd, (struct sockaddr *)&addr, fill_address(&addr, gs->name))) {
		/* Abstract names have no permissions: SO_PEERCRED guards them. */
		err = -errno;
		goto cleanup;
	}
	if (listen(gs->listen_fd, 64)) {
		err = -errno;
		goto cleanup;
	}
	gs->epoll_fd = epoll_create1(EPOLL_CLOEXEC);
	if (gs->epoll_fd < 0 || epoll_ctl(gs->epoll_fd, EPOLL_CTL_ADD, gs->listen_fd, &event)) {
		err = -errno;
		goto cleanup;
	}
	*out = gs;
	return 0;
cleanup:
	gpu_session__close(gs);
	return err;
}

void gpu_session__close(struct gpu_session *gs)
{
	if (!gs)
		return;
	for (size_t i = 0; i < gs->nr_agents; i++) {
		close_connection(gs, i);
		free(gs->agents[i].cupti_path);
		free(gs->agents[i].other_tool);
		free(gs->agents[i].error);
	}
	if (gs->listen_fd >= 0)
		close(gs->listen_fd);
	if (gs->epoll_fd >= 0)
		close(gs->epoll_fd);
	if (gs->path)
		unlink(gs->path);
	free(gs->path);
	free(gs->connections);
	free(gs->agents);
	free(gs->records);
	free(gs->launches);
	free(gs->launch_index.keys);
	free(gs->launch_index.values);
	string_table__free(&gs->names);
	free(gs);
}

const char *gpu_session__socket_name(const struct gpu_session *gs)
{
	return gs->name;
}

int gpu_session__fd(const struct gpu_session *gs)
{
	return gs->epoll_fd;
}

void gpu_session__stats(const struct gpu_session *gs, struct gpu_session_stats *out)
{
	*out = gs->stats;
	out->dropped_by_agent = 0;
	for (size_t i = 0; i < gs->nr_agents; i++)
		out->dropped_by_agent += gs->agents[i].dropped_activity +
					 gs->agents[i].dropped_launches +
					 gs->agents[i].dropped_messages;
}

size_t gpu_session__nr_agents(const struct gpu_session *gs)
{
	return gs->nr_agents;
}

const struct gpu_agent_info *gpu_session__agent(const struct gpu_session *gs, size_t index)
{
	return index < gs->nr_agents ? &gs->agents[index] : NULL;
}

size_t gpu_session__nr_records(const struct gpu_session *gs)
{
	return gs->nr_records;
}

const struct gpu_record *gpu_session__record(const struct gpu_session *gs, size_t index)
{
	return index < gs->nr_records ? &gs->records[index] : NULL;
}

const char *gpu_session__kernel_name(const struct gpu_session *gs, const struct gpu_record *r)
{
	if (r->kind != GPU_KERNEL || r->name == NO_NAME || r->name >= gs->names.nr)
		return NULL;
	return gs->names.strings[r->name];
}

const struct gpu_launch_record *gpu_session__launch(const struct gpu_session *gs, uint32_t agent,
						    uint32_t correlation)
{
	int64_t i = launch_index__get(&gs->launch_index, launch_key(agent, correlation));

	return i < 0 ? NULL : &gs->launches[i];
}

/* Merge. */

struct merge_state {
	struct gpu_session *gs;
	struct profile *profile;
	const struct gpu_merge_options *options;
	int64_t *kernel_frames; /* name index -> frame id + 1 */
	int64_t memcpy_frames[GPU_MEMCPY_PTOP + 2];
	int64_t memset_frame, unknown_kernel_frame, unattributed_frame;
	int64_t *process_frames; /* per agent, frame id + 1 */
	uint64_t *stack_ns;	 /* per stack id */
	size_t cap_stack_ns;
	uint32_t *frames; /* MAX_STACK + 3 */
};

static int compare_records(const void *a, const void *b, void *ctx)
{
	const struct gpu_record *records = ctx;
	const struct gpu_record *x = &records[*(const size_t *)a];
	const struct gpu_record *y = &records[*(const size_t *)b];

#define CMP(f)                                                                                     \
	if (x->f != y->f)                                                                          \
		return x->f < y->f ? -1 : 1;
	CMP(device);
	CMP(stream);
	CMP(start_ns);
	CMP(end_ns);
	CMP(agent);
	CMP(correlation);
	CMP(kind);
	CMP(name);
#undef CMP
	return 0;
}

/* A frame interned on first use; *slot keeps its id + 1 (or the error). */
static int64_t intern_once(struct profile *p, int64_t *slot, const char *name, enum frame_kind kind)
{
	if (!*slot) {
		int64_t id = profile__intern_frame(p, name, NULL, 0, kind);

		*slot = id < 0 ? id : id + 1;
	}
	return *slot < 0 ? *slot : *slot - 1;
}

static int64_t leaf_frame(struct merge_state *m, const struct gpu_record *r)
{
	struct profile *p = m->profile;
	const char *mangled;
	char *demangled;
	char name[64];
	int64_t id;

	if (r->kind == GPU_MEMSET)
		return intern_once(p, &m->memset_frame, "memset", FRAME_GPU);
	if (r->kind == GPU_MEMCPY) {
		uint32_t kind = r->name <= GPU_MEMCPY_PTOP ? r->name : GPU_MEMCPY_UNKNOWN;

		snprintf(name, sizeof(name), "memcpy %s", gpu_memcpy_kind__name(kind));
		return intern_once(p, &m->memcpy_frames[kind], name, FRAME_GPU);
	}
	if (r->name == NO_NAME || r->name >= m->gs->names.nr)
		return intern_once(p, &m->unknown_kernel_frame, "[unknown kernel]", FRAME_GPU);
	if (m->kernel_frames[r->name])
		return intern_once(p, &m->kernel_frames[r->name], NULL, FRAME_GPU);
	mangled = m->gs->names.strings[r->name];
	/* As perf shows C++ names, like CPU frames. */
	demangled = symbolizer__demangle(mangled);
	id = intern_once(p, &m->kernel_frames[r->name], demangled ? demangled : mangled, FRAME_GPU);
	free(demangled);
	return id;
}

static int64_t process_frame(struct merge_state *m, uint32_t agent)
{
	struct profile *p = m->profile;
	const char *name = m->options->process_name;
	int64_t *slot = &m->process_frames[agent];

	if (!*slot && !name) {
		for (size_t i = 0; i < p->nr_frames; i++) {
			if (p->frames[i].kind == FRAME_PROCESS) {
				*slot = i + 1;
				break;
			}
		}
		name = m->gs->agents[agent].comm[0] ? m->gs->agents[agent].comm : "[process]";
	}
	return intern_once(p, slot, name, FRAME_PROCESS);
}

/* The launch record that stands for r: its own, or the runtime call that
 * made it (memcpy's runtime id, a nested driver call's parent). */
static const struct gpu_launch_record *outer_launch(const struct gpu_session *gs,
						    const struct gpu_record *r)
{
	const struct gpu_launch_record *l = NULL;

	if (r->runtime_correlation)
		l = gpu_session__launch(gs, r->agent, r->runtime_correlation);
	if (!l)
		l = gpu_session__launch(gs, r->agent, r->correlation);
	if (l && l->parent_correlation) {
		const struct gpu_launch_record *parent =
		    gpu_session__launch(gs, r->agent, l->parent_correlation);

		if (parent)
			l = parent;
	}
	return l;
}

/* The core's stack for one correlation id into m->frames; its depth, or 0. */
static size_t stack_of(struct merge_state *m, uint32_t agent, uint32_t correlation)
{
	const struct gpu_launch_record *at = gpu_session__launch(m->gs, agent, correlation);
	size_t depth = 0;

	if (!correlation ||
	    m->options->launch_stack(m->options->ctx, correlation, at ? at->tid : 0,
				     at ? at->time_ns : 0, m->frames, MAX_STACK, &depth) ||
	    !depth || depth > MAX_STACK)
		return 0;
	for (size_t d = 0; d < depth; d++)
		if (m->frames[d] >= m->profile->nr_frames)
			return 0;
	return depth;
}

/* The launch stack of a record into m->frames; its depth, 0 if none.  The
 * outermost call first: its probe is the one that fired. */
static size_t launch_stack(struct merge_state *m, const struct gpu_record *r, uint32_t *correlation)
{
	const struct gpu_launch_record *l = outer_launch(m->gs, r);
	uint32_t ids[4];
	size_t n = 0, depth;

	if (!m->options->launch_stack)
		return 0;
	if (l)
		ids[n++] = l->correlation;
	if (r->runtime_correlation)
		ids[n++] = r->runtime_correlation;
	ids[n++] = r->correlation;
	for (size_t i = 0; i < n; i++) {
		if (i && ids[i] == ids[0])
			continue;
		depth = stack_of(m, r->agent, ids[i]);
		if (depth) {
			*correlation = ids[i];
			return depth;
		}
	}
	return 0;
}

/*
 * Launches that fired no probe (rate limit, or the probe's event was lost)
 * take the stack of a probed launch of the same kernel: on the same thread
 * and nearest in time, else on any thread of that process.
 */
struct probed {
	uint32_t agent;
	uint32_t key; /* kernel name index, or a memcpy/memset key */
	uint32_t tid;
	uint32_t correlation;
	uint64_t time_ns;
};

static uint32_t record_key(const struct gpu_record *r)
{
	if (r->kind == GPU_MEMCPY)
		return 0xfffffe00u | (r->name & 0xff);
	if (r->kind == GPU_MEMSET)
		return 0xffffff00u;
	return r->name;
}

static int compare_probed_tid(const void *a, const void *b)
{
	const struct probed *x = a, *y = b;

#define CMP(f)                                                                                     \
	if (x->f != y->f)                                                                          \
		return x->f < y->f ? -1 : 1;
	CMP(agent);
	CMP(key);
	CMP(tid);
	CMP(time_ns);
	CMP(correlation);
#undef CMP
	return 0;
}

static int compare_probed_time(const void *a, const void *b)
{
	const struct probed *x = a, *y = b;

#define CMP(f)                                                                                     \
	if (x->f != y->f)                                                                          \
		return x->f < y->f ? -1 : 1;
	CMP(agent);
	CMP(key);
	CMP(time_ns);
	CMP(tid);
	CMP(correlation);
#undef CMP
	return 0;
}

/* In [lo, hi) of sorted entries equal in what cmp compares but time, the
 * one nearest to time_ns (the earlier one on a tie). */
static const struct probed *nearest(const struct probed *v, size_t lo, size_t hi, uint64_t time_ns)
{
	size_t first = lo, last = hi;

	if (lo == hi)
		return NULL;
	while (lo < hi) {
		size_t mid = (lo + hi) / 2;

		if (v[mid].time_ns < time_ns)
			lo = mid + 1;
		else
			hi = mid;
	}
	if (lo == last)
		return &v[lo - 1];
	if (lo == first || v[lo].time_ns - time_ns < time_ns - v[lo - 1].time_ns)
		return &v[lo];
	return &v[lo - 1];
}

/* The range of v (n entries) that matches key on the fields cmp orders
 * first; matching is done by cmp on a probe entry. */
static void equal_range(const struct probed *v, size_t n, const struct probed *key,
			int (*prefix)(const struct probed *, const struct probed *), size_t *lo,
			size_t *hi)
{
	size_t l = 0, h = n;

	while (l < h) {
		size_t mid = (l + h) / 2;

		if (prefix(&v[mid], key) < 0)
			l = mid + 1;
		else
			h = mid;
	}
	*lo = l;
	h = n;
	while (l < h) {
		size_t mid = (l + h) / 2;

		if (prefix(&v[mid], key) <= 0)
			l = mid + 1;
		else
			h = mid;
	}
	*hi = l;
}

static int prefix_agent_key(const struct probed *x, const struct probed *y)
{
	if (x->agent != y->agent)
		return x->agent < y->agent ? -1 : 1;
	return x->key < y->key ? -1 : x->key > y->key;
}

static int prefix_agent_key_tid(const struct probed *x, const struct probed *y)
{
	int c = prefix_agent_key(x, y);

	if (c)
		return c;
	return x->tid < y->tid ? -1 : x->tid > y->tid;
}

static size_t inferred_stack(struct merge_state *m, const struct gpu_record *r,
			     const struct probed *by_tid, const struct probed *by_time, size_t n)
{
	const struct gpu_launch_record *l = outer_launch(m->gs, r);
	struct probed key = {
		.agent = r->agent,
		.key = record_key(r),
		.tid = l ? l->tid : 0,
		.time_ns = l ? l->time_ns : r->start_ns,
	};
	const struct probed *hit = NULL;
	size_t lo, hi;

	if (!n || !m->options->launch_stack)
		return 0;
	if (l) {
		equal_range(by_tid, n, &key, prefix_agent_key_tid, &lo, &hi);
		hit = nearest(by_tid, lo, hi, key.time_ns);
	}
	if (!hit) {
		equal_range(by_time, n, &key, prefix_agent_key, &lo, &hi);
		hit = nearest(by_time, lo, hi, key.time_ns);
	}
	return hit ? stack_of(m, hit->agent, hit->correlation) : 0;
}

struct resolved {
	int64_t stack; /* with the leaf */
	int64_t leaf;
	bool attributed;
};

static int intern_resolved(struct merge_state *m, const struct gpu_record *r, size_t depth,
			   struct resolved *out)
{
	struct profile *p = m->profile;

	out->attributed = depth > 0;
	if (!depth) {
		int64_t process = process_frame(m, r->agent);
		int64_t unattributed =
		    intern_once(p, &m->unattributed_frame, "[unattributed]", FRAME_UNKNOWN);

		if (process < 0)
			return process;
		if (unattributed < 0)
			return unattributed;
		m->frames[depth++] = process;
		m->frames[depth++] = unattributed;
	}
	m->frames[depth++] = out->leaf;
	out->stack = profile__intern_stack(p, m->frames, depth);
	return out->stack < 0 ? out->stack : 0;
}

static int add_activity(struct merge_state *m, const struct gpu_record *r,
			const struct resolved *res)
{
	struct profile *p = m->profile;
	struct gpu_activity a = {
		.start_ns = r->start_ns > p->start_ns ? r->start_ns - p->start_ns : 0,
		.end_ns = r->end_ns - p->start_ns,
		.device = r->device,
		.stream = r->stream,
		.correlation = r->correlation,
		.kind = r->kind,
		.frame = res->leaf,
		.stack = res->attributed ? res->stack : UINT32_MAX,
	};
	int err = profile__add_gpu(p, &a);

	if (err)
		return err;
	m->gs->stats.merged++;
	if (!res->attributed)
		m->gs->stats.unattributed++;
	if (p->unit == UNIT_MICROSECONDS) {
		if (array__grow_zeroed((void **)&m->stack_ns, &m->cap_stack_ns, res->stack + 1,
			 sizeof(*m->stack_ns)))
			return -ENOMEM;
		m->stack_ns[res->stack] += a.end_ns - a.start_ns;
	}
	return 0;
}

int gpu_session__merge(struct gpu_session *gs, struct profile *p,
		       const struct gpu_merge_options *options)
{
	struct gpu_merge_options none = { 0 };
	struct merge_state m = {.gs = gs, .profile = p, .options = options ? options : &none};
	size_t n = gs->nr_records ? gs->nr_records : 1, nr_probed = 0;
	size_t *order = malloc(n * sizeof(*order));
	struct resolved *res = calloc(n, sizeof(*res));
	struct probed *by_tid = malloc(n * sizeof(*by_tid));
	struct probed *by_time = malloc(n * sizeof(*by_time));
	int err = -ENOMEM;

	m.kernel_frames = calloc(gs->names.nr ? gs->names.nr : 1, sizeof(*m.kernel_frames));
	m.process_frames = calloc(gs->nr_agents ? gs->nr_agents : 1, sizeof(*m.process_frames));
	m.frames = malloc((MAX_STACK + 3) * sizeof(*m.frames));
	if (!order || !res || !by_tid || !by_time || !m.kernel_frames || !m.process_frames ||
	    !m.frames)
		goto cleanup;
	gs->stats.merged = gs->stats.unattributed = gs->stats.outside_window = 0;
	gs->stats.inferred = 0;
	for (size_t i = 0; i < gs->nr_records; i++)
		order[i] = i;
	qsort_r(order, gs->nr_records, sizeof(*order), compare_records, gs->records);

	/* The stacks the core has, by correlation id. */
	for (size_t i = 0; i < gs->nr_records; i++) {
		const struct gpu_record *r = &gs->records[order[i]];
		const struct gpu_launch_record *l;
		uint32_t correlation = 0;
		size_t depth;

		res[i].leaf = -1;
		if (p->start_ns && r->end_ns <= p->start_ns) {
			gs->stats.outside_window++;
			continue;
		}
		res[i].leaf = leaf_frame(&m, r);
		if (res[i].leaf < 0) {
			err = res[i].leaf;
			goto cleanup;
		}
		depth = launch_stack(&m, r, &correlation);
		if (!depth)
			continue;
		err = intern_resolved(&m, r, depth, &res[i]);
		if (err)
			goto cleanup;
		l = gpu_session__launch(gs, r->agent, correlation);
		by_tid[nr_probed++] = (struct probed){
			.agent = r->agent,
			.key = record_key(r),
			.tid = l ? l->tid : 0,
			.correlation = correlation,
			.time_ns = l ? l->time_ns : r->start_ns,
		};
	}
	memcpy(by_time, by_tid, nr_probed * sizeof(*by_time));
	qsort(by_tid, nr_probed, sizeof(*by_tid), compare_probed_tid);
	qsort(by_time, nr_probed, sizeof(*by_time), compare_probed_time);

	/* The rest: a sibling launch's stack, or unattributed. */
	for (size_t i = 0; i < gs->nr_records; i++) {
		const struct gpu_record *r = &gs->records[order[i]];
		size_t depth;

		if (res[i].leaf < 0 || res[i].attributed)
			continue;
		depth = inferred_stack(&m, r, by_tid, by_time, nr_probed);
		gs->stats.inferred += depth > 0;
		err = intern_resolved(&m, r, depth, &res[i]);
		if (err)
			goto cleanup;
	}

	for (size_t i = 0; i < gs->nr_records; i++) {
		if (res[i].leaf < 0)
			continue;
		err = add_activity(&m, &gs->records[order[i]], &res[i]);
		if (err)
			goto cleanup;
	}
	/* Rounded once per stack, so short kernels do not vanish. */
	for (size_t s = 0; s < m.cap_stack_ns && s < p->nr_stacks; s++)
		if (m.stack_ns[s])
			profile__add_weight(p, s, (m.stack_ns[s] + 500) / 1000);
	err = 0;
cleanup:
	free(order);
	free(res);
	free(by_tid);
	free(by_time);
	free(m.kernel_frames);
	free(m.process_frames);
	free(m.stack_ns);
	free(m.frames);
	return err;
}

/* Summary. */

struct span {
	uint64_t start, end;
};

static int compare_spans(const void *a, const void *b)
{
	const struct span *x = a, *y = b;

	if (x->start != y->start)
		return x->start < y->start ? -1 : 1;
	return x->end < y->end ? -1 : x->end > y->end;
}

static int compare_activity_frame(const void *a, const void *b)
{
	const struct gpu_activity *x = *(const struct gpu_activity *const *)a;
	const struct gpu_activity *y = *(const struct gpu_activity *const *)b;

	return x->frame < y->frame ? -1 : x->frame > y->frame;
}

struct share_sort {
	const struct profile *profile;
};

static int compare_share(const void *a, const void *b, void *ctx)
{
	const struct gpu_kernel_share *x = a, *y = b;
	const struct profile *p = ctx;

	if (x->total_ns != y->total_ns)
		return x->total_ns > y->total_ns ? -1 : 1;
	return strcmp(p->frames[x->frame].name, p->frames[y->frame].name);
}

int gpu_summary__compute(const struct profile *p, size_t top, struct gpu_summary *out)
{
	const struct gpu_activity **by_frame = NULL;
	struct span *spans = NULL;
	uint64_t span_end = 0;
	size_t nr_shares = 0;
	int err = -ENOMEM;

	memset(out, 0, sizeof(*out));
	for (size_t i = 0; i < p->nr_gpu; i++)
		if (p->gpu[i].end_ns > span_end)
			span_end = p->gpu[i].end_ns;
	out->wall_ns = p->duration_ns ? p->duration_ns : span_end;
	spans = malloc((p->nr_gpu ? p->nr_gpu : 1) * sizeof(*spans));
	by_frame = malloc((p->nr_gpu ? p->nr_gpu : 1) * sizeof(*by_frame));
	if (!spans || !by_frame)
		goto cleanup;

	for (size_t i = 0; i < p->nr_gpu; i++) {
		const struct gpu_activity *a = &p->gpu[i];
		uint64_t ns = a->end_ns - a->start_ns;

		if (a->stack == UINT32_MAX)
			out->unattributed++;
		if (a->kind == GPU_KERNEL) {
			out->kernels++;
			out->kernel_ns += ns;
			by_frame[nr_shares++] = a;
		} else if (a->kind == GPU_MEMCPY) {
			out->memcpys++;
			out->memcpy_ns += ns;
		} else {
			out->memsets++;
			out->memset_ns += ns;
		}
		for (uint32_t d = 0; d < out->nr_devices + 1; d++) {
			if (d == out->nr_devices) {
				if (d == sizeof(out->devices) / sizeof(out->devices[0]))
					break;
				out->devices[out->nr_devices++] = a->device;
				break;
			}
			if (out->devices[d] == a->device)
				break;
		}
	}

	/* Busy time: the union of each device's spans, cut to the wall time. */
	for (uint32_t d = 0; d < out->nr_devices; d++) {
		size_t n = 0;
		uint64_t busy = 0, cursor = 0;

		for (size_t i = 0; i < p->nr_gpu; i++) {
			const struct gpu_activity *a = &p->gpu[i];
			uint64_t end = a->end_ns < out->wall_ns ? a->end_ns : out->wall_ns;

			if (a->device != out->devices[d] || a->start_ns >= end)
				continue;
			spans[n++] = (struct span){a->start_ns, end};
		}
		qsort(spans, n, sizeof(*spans), compare_spans);
		for (size_t i = 0; i < n; i++) {
			uint64_t start = spans[i].start > cursor ? spans[i].start : cursor;

			if (spans[i].end > start)
				busy += spans[i].end - start;
			if (spans[i].end > cursor)
				cursor = spans[i].end;
		}
		out->busy_ns[d] = busy;
	}

	qsort(by_frame, nr_shares, sizeof(*by_frame), compare_activity_frame);
	out->top = calloc(nr_shares ? nr_shares : 1, sizeof(*out->top));
	if (!out->top)
		goto cleanup;
	for (size_t i = 0; i < nr_shares; i++) {
		struct gpu_kernel_share *s = &out->top[out->nr_top];

		if (!out->nr_top || out->top[out->nr_top - 1].frame != by_frame[i]->frame) {
			s->frame = by_frame[i]->frame;
			out->nr_top++;
		} else {
			s = &out->top[out->nr_top - 1];
		}
		s->total_ns += by_frame[i]->end_ns - by_frame[i]->start_ns;
		s->count++;
	}
	qsort_r(out->top, out->nr_top, sizeof(*out->top), compare_share, (void *)p);
	if (out->nr_top > top)
		out->nr_top = top;
	err = 0;
cleanup:
	free(spans);
	free(by_frame);
	if (err)
		gpu_summary__free(out);
	return err;
}

void gpu_summary__free(struct gpu_summary *s)
{
	free(s->top);
	s->top = NULL;
	s->nr_top = 0;
}

int gpu_session__print_summary(const struct gpu_session *gs, const struct profile *p, size_t top)
{
	struct gpu_session_stats stats;
	struct gpu_summary s;
	uint64_t memcpy_bytes = 0;
	size_t total;
	int err;

	err = gpu_summary__compute(p, top, &s);
	if (err)
		return err;
	gpu_session__stats(gs, &stats);
	for (size_t i = 0; i < gs->nr_records; i++)
		if (gs->records[i].kind == GPU_MEMCPY)
			memcpy_bytes += gs->records[i].bytes;
	total = s.kernels + s.memcpys + s.memsets;

	report__text("GPU summary (%zu agent%s):\n", stats.agents, stats.agents == 1 ? "" : "s");
	for (uint32_t d = 0; d < s.nr_devices; d++)
		report__text("  device %u: busy %.1f%% of %.3f s wall time\n", s.devices[d],
			     s.wall_ns ? 100.0 * s.busy_ns[d] / s.wall_ns : 0.0, s.wall_ns / 1e9);
	report__text("  kernels %" PRIu64 " (%.3f s), memcpy %" PRIu64 " (%.1f MiB, %.3f s), "
		     "memset %" PRIu64 " (%.3f s)\n",
		     s.kernels, s.kernel_ns / 1e9, s.memcpys, memcpy_bytes / 1048576.0,
		     s.memcpy_ns / 1e9, s.memsets, s.memset_ns / 1e9);
	if (s.nr_top)
		report__text("  top kernels by GPU time:\n");
	for (size_t i = 0; i < s.nr_top; i++)
		report__text("    %5.1f%% %10.3f ms %8" PRIu64 "  %s\n",
			     s.kernel_ns ? 100.0 * s.top[i].total_ns / s.kernel_ns : 0.0,
			     s.top[i].total_ns / 1e6, s.top[i].count,
			     p->frames[s.top[i].frame].name);
	if (stats.probed < stats.outer_launches)
		report__text("  launch probe fired for %zu of %zu launches (rate limit "
			     "LLMPROF_AGENT_PROBE_RATE)\n",
			     stats.probed, stats.outer_launches);
	if (stats.inferred)
		report__text("  %zu GPU activities whose launch fired no probe took the stack of a "
			     "launch of the same kernel\n",
			     stats.inferred);
	if (s.unattributed)
		report__text("  unattributed: %" PRIu64
			     " of %zu GPU activities had no launch stack\n",
			     s.unattributed, total);
	if (stats.dropped_by_agent || stats.dropped_records)
		report__text("  dropped: %" PRIu64 " records in the agents, %" PRIu64 " here\n",
			     stats.dropped_by_agent, stats.dropped_records);
	for (size_t i = 0; i < gs->nr_agents; i++) {
		const struct gpu_agent_info *a = &gs->agents[i];

		if (a->incomplete)
			report__text("  pid %u: %" PRIu64 " GPU records without valid times\n",
				     a->pid, a->incomplete);
		if (a->other_subscriber)
			report__text("  pid %u: CUPTI in use by %s, no GPU data\n", a->pid,
				     a->other_tool && a->other_tool[0] ? a->other_tool
								       : "another tool");
		else if (a->hello && !a->goodbye)
			report__text(
			    "  pid %u: agent did not finish, its last records are missing\n",
			    a->pid);
	}
	gpu_summary__free(&s);
	return 0;
}
