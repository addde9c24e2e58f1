// SPDX-License-Identifier: GPL-2.0
/*
 * The llmprof side of the GPU agent: the listening socket, its
 * connections, the records kept in memory and the accessors to them.  The
 * wire protocol is parsed in gpu_parse.c, the merge into a profile and the
 * GPU summary are in gpu_merge.c.  See agent_server.h.
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
#include "base/clock.h"
#include "gpu/gpu_protocol.h"
#include "gpu/agent_server.h"
#include "gpu/agent_server_internal.h"
#include "status.h"

_Static_assert(sizeof(struct gpu_message_header) == 8, "header");
_Static_assert(sizeof(struct gpu_hello) % 8 == 0, "hello");
_Static_assert(sizeof(struct gpu_kernel) % 8 == 0, "kernel");
_Static_assert(sizeof(struct gpu_memcpy) % 8 == 0, "memcpy");
_Static_assert(sizeof(struct gpu_memset) % 8 == 0, "memset");
_Static_assert(sizeof(struct gpu_launch) % 8 == 0, "launch");

static uint64_t string_hash(const void *ctx, uint32_t id)
{
	const char *text = ((const struct string_table *)ctx)->strings[id];

	return hash__fnv1a(HASH_FNV1A_START, text, strlen(text));
}

int64_t string_table__intern(struct string_table *t, const char *text, size_t len)
{
	uint64_t h = hash__fnv1a(HASH_FNV1A_START, text, len);
	size_t pos;
	char *copy;

	if (hash_index__reserve(&t->index, 256, string_hash, t))
		return -ENOMEM;
	for (pos = hash_index__first(&t->index, h); !hash_index__empty(&t->index, pos);
	     pos = hash_index__next(&t->index, pos)) {
		const char *s = t->strings[hash_index__id(&t->index, pos)];

		if (!strncmp(s, text, len) && s[len] == '\0')
			return hash_index__id(&t->index, pos);
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
	hash_index__set(&t->index, pos, t->nr);
	return t->nr++;
}

void string_table__free(struct string_table *t)
{
	for (size_t i = 0; i < t->nr; i++)
		free(t->strings[i]);
	free(t->strings);
	hash_index__free(&t->index);
}

uint64_t launch_key(uint32_t agent, uint32_t correlation)
{
	return (uint64_t)agent << 32 | correlation;
}

int launch_index__put(struct launch_index *li, uint64_t key, uint32_t value)
{
	return u64_map__put(&li->map, key, value);
}

int64_t launch_index__get(const struct launch_index *li, uint64_t key)
{
	uint64_t value;

	return u64_map__get(&li->map, key, &value) ? (int64_t)value : -1;
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
int64_t agent_server__add_agent(struct agent_server *gs, int fd)
{
	struct connection *c;

	if (gs->nr_agents == UINT32_MAX)
		return -E2BIG;
	if (array__grow_zeroed((void **)&gs->agents, &gs->cap_agents, gs->nr_agents + 1,
			       sizeof(*gs->agents)) ||
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

void agent_server__close_connection(struct agent_server *gs, uint32_t agent)
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

static bool peer_allowed(const struct agent_server *gs, int fd, struct ucred *cred)
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

static int accept_connections(struct agent_server *gs, bool stopping)
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
				status__warn("cannot accept a GPU agent: %s", strerror(errno));
				return 0;
			}
			return -errno;
		}
		if (!peer_allowed(gs, fd, &cred)) {
			status__warn("GPU agent socket: refused a connection from uid %u pid %d",
				     cred.uid, cred.pid);
			gs->stats.rejected++;
			close(fd);
			continue;
		}
		agent = agent_server__add_agent(gs, fd);
		if (agent < 0) {
			close(fd);
			status__warn("cannot accept a GPU agent: %s", strerror((int)-agent));
			continue;
		}
		gs->agents[agent].pid = cred.pid;
		event.data.u64 = agent;
		if (epoll_ctl(gs->epoll_fd, EPOLL_CTL_ADD, fd, &event)) {
			int err = -errno;

			agent_server__close_connection(gs, agent);
			return err;
		}
		if (stopping)
			send_stop(&gs->connections[agent]);
	}
}

/* Reads a bounded number of packets from one connection. */
static void read_connection(struct agent_server *gs, uint32_t agent)
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
			status__debug("GPU agent of pid %u: %s", gs->agents[agent].pid,
				      strerror(errno));
			agent_server__close_connection(gs, agent);
			return;
		}
		if (n == 0) {
			if (c->used)
				agent_server__end_malformed(gs, agent, -EBADMSG);
			else
				agent_server__close_connection(gs, agent);
			return;
		}
		if (msg.msg_flags & MSG_TRUNC) {
			agent_server__end_malformed(gs, agent, -EBADMSG);
			return;
		}
		c->used += n;
		err = agent_server__parse_buffer(gs, agent);
		if (err) {
			agent_server__end_malformed(gs, agent, err);
			return;
		}
		if (gs->agents[agent].goodbye && !c->used) {
			agent_server__close_connection(gs, agent);
			return;
		}
	}
}

static int handle_events(struct agent_server *gs, bool stopping)
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

int agent_server__on_readable(void *ctx)
{
	return handle_events(ctx, false);
}

int agent_server__stop(struct agent_server *gs, unsigned int timeout_ms)
{
	uint64_t deadline = clock__monotonic_ns() / 1000000 + timeout_ms;
	int err;

	err = handle_events(gs, true);
	if (err)
		return err;
	for (size_t i = 0; i < gs->nr_agents; i++)
		if (send_stop(&gs->connections[i]))
			agent_server__close_connection(gs, i);
	for (;;) {
		struct pollfd pfd = {.fd = gs->epoll_fd, .events = POLLIN};
		uint64_t now = clock__monotonic_ns() / 1000000;
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
		status__warn(
		    "GPU agent of pid %u did not finish in %u ms; its last records are lost",
		    gs->agents[i].pid, timeout_ms);
		agent_server__close_connection(gs, i);
	}
	return -ETIMEDOUT;
}

static int make_socket_name(char *name, size_t size)
{
	uint64_t random;

	if (getrandom(&random, sizeof(random), GRND_NONBLOCK) != sizeof(random)) {
		struct timespec ts;

		clock_gettime(CLOCK_MONOTONIC, &ts);
		random = hash__mix64(ts.tv_nsec ^ (uint64_t)ts.tv_sec << 30 ^ getpid());
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

/* LLMPROF_GPU_TIMELINE_RECORDS, a test knob; the default when unset or bad. */
static size_t timeline_records(void)
{
	const char *text = getenv("LLMPROF_GPU_TIMELINE_RECORDS");
	unsigned long long n;
	char *end;

	if (!text || !*text)
		return DEFAULT_TIMELINE_RECORDS;
	errno = 0;
	n = strtoull(text, &end, 10);
	if (errno || *end || !n || n > DEFAULT_TIMELINE_RECORDS) {
		status__warn(
		    "LLMPROF_GPU_TIMELINE_RECORDS=%s is not a count from 1 to %u; using %u", text,
		    DEFAULT_TIMELINE_RECORDS, DEFAULT_TIMELINE_RECORDS);
		return DEFAULT_TIMELINE_RECORDS;
	}
	return n;
}

int agent_server__open(struct agent_server **out, const struct agent_server_options *options)
{
	struct epoll_event event = {.events = EPOLLIN, .data.u64 = LISTENER};
	struct agent_server *gs = calloc(1, sizeof(*gs));
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
	gs->timeline_records =
	    gs->options.timeline_records ? gs->options.timeline_records : timeline_records();
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
	agent_server__close(gs);
	return err;
}

void agent_server__close(struct agent_server *gs)
{
	if (!gs)
		return;
	for (size_t i = 0; i < gs->nr_agents; i++) {
		agent_server__close_connection(gs, i);
		free(gs->agents[i].cupti_path);
		free(gs->agents[i].other_tool);
		free(gs->agents[i].error);
		free(gs->agents[i].notice);
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
	u64_map__free(&gs->launch_index.map);
	free(gs->launch_ring);
	fold_table__free(&gs->folds);
	string_table__free(&gs->names);
	free(gs);
}

const char *agent_server__socket_name(const struct agent_server *gs)
{
	return gs->name;
}

int agent_server__fd(const struct agent_server *gs)
{
	return gs->epoll_fd;
}

void agent_server__stats(const struct agent_server *gs, struct agent_server_stats *out)
{
	*out = gs->stats;
	out->dropped_by_agent = 0;
	out->unnamed_kernels = 0;
	for (size_t i = 0; i < gs->nr_agents; i++) {
		out->dropped_by_agent += gs->agents[i].dropped_activity +
					 gs->agents[i].dropped_launches +
					 gs->agents[i].dropped_messages;
		out->unnamed_kernels += gs->agents[i].unnamed_kernels;
	}
}

size_t agent_server__nr_agents(const struct agent_server *gs)
{
	return gs->nr_agents;
}

const struct gpu_agent_info *agent_server__agent(const struct agent_server *gs, size_t index)
{
	return index < gs->nr_agents ? &gs->agents[index] : NULL;
}

size_t agent_server__nr_records(const struct agent_server *gs)
{
	return gs->nr_records;
}

const struct gpu_record *agent_server__record(const struct agent_server *gs, size_t index)
{
	return index < gs->nr_records ? &gs->records[index] : NULL;
}

const char *agent_server__kernel_name(const struct agent_server *gs, const struct gpu_record *r)
{
	if (r->kind != GPU_KERNEL || r->name == NO_NAME || r->name >= gs->names.nr)
		return NULL;
	return gs->names.strings[r->name];
}

const struct gpu_launch_record *agent_server__launch(const struct agent_server *gs, uint32_t agent,
						     uint32_t correlation)
{
	int64_t i = launch_index__get(&gs->launch_index, launch_key(agent, correlation));
	const struct gpu_launch_record *l;

	if (i >= 0)
		return &gs->launches[i];
	if (!gs->launch_ring || !correlation)
		return NULL;
	l = &gs->launch_ring[correlation % LAUNCH_RING_SIZE];
	return l->correlation == correlation && l->agent == agent ? l : NULL;
}

const struct gpu_launch_record *agent_server__outer_launch(const struct agent_server *gs,
							   const struct gpu_record *r)
{
	const struct gpu_launch_record *l = NULL;

	if (r->runtime_correlation)
		l = agent_server__launch(gs, r->agent, r->runtime_correlation);
	if (!l)
		l = agent_server__launch(gs, r->agent, r->correlation);
	if (l && l->parent_correlation) {
		const struct gpu_launch_record *parent =
		    agent_server__launch(gs, r->agent, l->parent_correlation);

		if (parent)
			l = parent;
	}
	return l;
}
