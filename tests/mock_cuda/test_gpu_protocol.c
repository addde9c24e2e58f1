// SPDX-License-Identifier: GPL-2.0
/*
 * Unit tests of the agent wire protocol as lib/agent_server.c parses it:
 * a valid stream, every truncation of it, malformed messages, unknown
 * types, random bytes, and the same over a real socket with a message split
 * across packets, a bad connection next to a good one, and STOP.
 */
#include <errno.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include "gpu/gpu_protocol.h"
#include "gpu/agent_server.h"
#include "status.h"
#include "test_wire.h"

static void build_valid(struct stream *s)
{
	struct gpu_memcpy c = {
	    .start_ns = 5000,
	    .end_ns = 6000,
	    .bytes = 1 << 20,
	    .stream = 7,
	    .correlation = 31,
	    .runtime_correlation = 30,
	    .copy_kind = GPU_MEMCPY_HTOD,
	};
	struct gpu_memset m = {.start_ns = 6000, .end_ns = 6500, .bytes = 4096, .correlation = 40};
	struct gpu_launch l = {
	    .time_ns = 900,
	    .correlation = 10,
	    .tid = 4243,
	    .callback_id = 211,
	    .domain = GPU_DOMAIN_RUNTIME,
	};
	struct gpu_launch nested = {
	    .time_ns = 901,
	    .correlation = 11,
	    .parent_correlation = 10,
	    .tid = 4243,
	    .callback_id = 307,
	    .domain = GPU_DOMAIN_DRIVER,
	};
	struct gpu_dropped d = {
	    .activity_records = 3, .launch_records = 2, .messages = 1, .unnamed_kernels = 5};
	struct gpu_goodbye g = {.kernels = 2, .memcpys = 1, .memsets = 1, .launches = 2};
	uint32_t unknown[2] = {1, 2};

	memset(s, 0, sizeof(*s));
	add_hello(s, GPU_PROTOCOL_VERSION);
	add_name(s, 1, "_Z11gemm_kerneljPf");
	add(s, GPU_MSG_LAUNCH, &l, sizeof(l), NULL);
	add(s, GPU_MSG_LAUNCH, &nested, sizeof(nested), NULL);
	add_kernel(s, 10, 1, 1000, 3000);
	add(s, 999, unknown, sizeof(unknown), NULL); /* a newer agent's type */
	add_kernel(s, 11, 1, 3000, 4000);
	add_kernel(s, 12, 1, 4000, 3999); /* end before start: incomplete */
	add(s, GPU_MSG_MEMCPY, &c, sizeof(c), NULL);
	add(s, GPU_MSG_MEMSET, &m, sizeof(m), NULL);
	add(s, GPU_MSG_DROPPED, &d, sizeof(d), NULL);
	add(s, GPU_MSG_GOODBYE, &g, sizeof(g), NULL);
}

static struct agent_server *new_session(void)
{
	struct agent_server *gs;

	if (agent_server__open(&gs, NULL)) {
		fprintf(stderr, "FAIL: agent_server__open\n");
		exit(1);
	}
	return gs;
}

static void test_valid(void)
{
	struct agent_server *gs = new_session();
	const struct gpu_agent_info *a;
	const struct gpu_launch_record *l;
	const struct gpu_record *r;
	struct stream s;

	build_valid(&s);
	EXPECT(agent_server__ingest(gs, s.data, s.len) == 0, "valid stream refused");
	EXPECT(agent_server__nr_records(gs) == 4, "%zu records", agent_server__nr_records(gs));
	a = agent_server__agent(gs, 0);
	EXPECT(a && a->hello && a->goodbye && a->pid == 4242, "agent info");
	EXPECT(a && a->clock_mode == GPU_CLOCK_OFFSET && a->clock_offset_ns == -5, "clock");
	EXPECT(a && !strcmp(a->version, "0.1.0"), "version %s", a ? a->version : "");
	EXPECT(a && a->cupti_path && !strcmp(a->cupti_path, "/opt/cuda/lib64/libcupti.so.13"),
	       "path");
	EXPECT(a && a->dropped_activity == 3 && a->dropped_launches == 2 &&
		   a->dropped_messages == 1,
	       "dropped");
	EXPECT(a && a->incomplete == 0, "DROPPED replaces the incomplete count: %lu",
	       (unsigned long)(a ? a->incomplete : 0));
	EXPECT(a && a->unnamed_kernels == 5, "kernels without a name: %lu",
	       (unsigned long)(a ? a->unnamed_kernels : 0));
	r = agent_server__record(gs, 0);
	EXPECT(r && r->kind == GPU_KERNEL && r->start_ns == 1000 && r->end_ns == 3000 &&
		   r->correlation == 10 && r->stream == 7,
	       "first kernel");
	EXPECT(r && !strcmp(agent_server__kernel_name(gs, r), "_Z11gemm_kerneljPf"), "name");
	r = agent_server__record(gs, 2);
	EXPECT(r && r->kind == GPU_MEMCPY && r->name == GPU_MEMCPY_HTOD && r->bytes == 1 << 20 &&
		   r->runtime_correlation == 30 && r->correlation == 31,
	       "memcpy");
	EXPECT(r && !agent_server__kernel_name(gs, r), "memcpy has no kernel name");
	r = agent_server__record(gs, 3);
	EXPECT(r && r->kind == GPU_MEMSET && r->bytes == 4096, "memset");
	l = agent_server__launch(gs, 0, 11);
	EXPECT(l && l->parent_correlation == 10 && l->domain == GPU_DOMAIN_DRIVER && l->tid == 4243,
	       "nested launch");
	EXPECT(!agent_server__launch(gs, 0, 12), "launch 12 does not exist");
	EXPECT(!agent_server__launch(gs, 1, 10), "launch on another agent");
	agent_server__close(gs);
}

/* Every prefix: whole messages parse, a cut one is malformed, nothing else
 * happens. */
static void test_truncated(void)
{
	struct stream s;
	int boundary = 0;

	build_valid(&s);
	for (size_t len = 1; len < s.len; len++) {
		struct agent_server *gs = new_session();
		bool whole = false;
		int err;

		while (boundary < s.nr_boundaries && s.boundaries[boundary] < len)
			boundary++;
		whole = boundary < s.nr_boundaries && s.boundaries[boundary] == len;
		err = agent_server__ingest(gs, s.data, len);
		EXPECT(whole ? err == 0 : err == -EBADMSG, "prefix %zu: %d", len, err);
		EXPECT(agent_server__nr_records(gs) <= 4, "prefix %zu: records", len);
		agent_server__close(gs);
	}
}

static void expect_malformed(const char *what, const struct stream *s, size_t records)
{
	struct agent_server *gs = new_session();
	struct agent_server_stats stats;
	int err = agent_server__ingest(gs, s->data, s->len);

	agent_server__stats(gs, &stats);
	EXPECT(err == -EBADMSG, "%s: %d", what, err);
	EXPECT(stats.malformed == 1, "%s: malformed %zu", what, stats.malformed);
	EXPECT(agent_server__nr_records(gs) == records, "%s: %zu records kept", what,
	       agent_server__nr_records(gs));
	agent_server__close(gs);
}

static void test_malformed(void)
{
	struct gpu_message_header h;
	struct gpu_name name;
	struct gpu_hello hello;
	struct stream s;

	memset(&s, 0, sizeof(s));
	add_kernel(&s, 1, 0, 10, 20);
	expect_malformed("kernel before hello", &s, 0);

	memset(&s, 0, sizeof(s));
	add_hello(&s, GPU_PROTOCOL_VERSION);
	add_hello(&s, GPU_PROTOCOL_VERSION);
	expect_malformed("second hello", &s, 0);

	memset(&s, 0, sizeof(s));
	add_hello(&s, GPU_PROTOCOL_VERSION + 1);
	expect_malformed("other protocol version", &s, 0);

	const uint32_t bad_lengths[] = {0, 4, 12, GPU_MESSAGE_MAX + 8, 0xfffffff8u};
	for (size_t i = 0; i < sizeof(bad_lengths) / sizeof(bad_lengths[0]); i++) {
		memset(&s, 0, sizeof(s));
		add_hello(&s, GPU_PROTOCOL_VERSION);
		add_kernel(&s, 1, 0, 10, 20);
		h = (struct gpu_message_header){.type = GPU_MSG_KERNEL, .length = bad_lengths[i]};
		memcpy(s.data + s.len, &h, sizeof(h));
		s.len += 16;
		expect_malformed("bad length", &s, 1);
	}

	memset(&s, 0, sizeof(s));
	add_hello(&s, GPU_PROTOCOL_VERSION);
	h = (struct gpu_message_header){.type = GPU_MSG_KERNEL, .length = 16};
	add(&s, GPU_MSG_KERNEL, (uint8_t[8]){0}, 8, NULL);
	expect_malformed("short kernel", &s, 0);

	memset(&s, 0, sizeof(s));
	add_hello(&s, GPU_PROTOCOL_VERSION);
	name = (struct gpu_name){.id = 0, .length = 3};
	add(&s, GPU_MSG_NAME, &name, sizeof(name), "abc");
	expect_malformed("name id 0", &s, 0);

	memset(&s, 0, sizeof(s));
	add_hello(&s, GPU_PROTOCOL_VERSION);
	name = (struct gpu_name){.id = 1, .length = 4000};
	add(&s, GPU_MSG_NAME, &name, sizeof(name), "abc");
	expect_malformed("name longer than its message", &s, 0);

	memset(&s, 0, sizeof(s));
	hello = (struct gpu_hello){.protocol_version = GPU_PROTOCOL_VERSION, .path_length = 100};
	add(&s, GPU_MSG_HELLO, &hello, sizeof(hello), "short");
	expect_malformed("path longer than its message", &s, 0);

	/* A NUL inside a name and a name of unknown id are data, not errors. */
	memset(&s, 0, sizeof(s));
	add_hello(&s, GPU_PROTOCOL_VERSION);
	name = (struct gpu_name){.id = 2, .length = 5};
	add(&s, GPU_MSG_NAME, &name, sizeof(name), "ab\0cd");
	add_kernel(&s, 1, 2, 10, 20);
	add_kernel(&s, 2, 77, 10, 20);
	{
		struct agent_server *gs = new_session();

		EXPECT(agent_server__ingest(gs, s.data, s.len) == 0, "odd names refused");
		EXPECT(agent_server__nr_records(gs) == 2, "odd names: records");
		EXPECT(!strcmp(agent_server__kernel_name(gs, agent_server__record(gs, 0)), "ab"),
		       "name with NUL");
		EXPECT(!agent_server__kernel_name(gs, agent_server__record(gs, 1)), "unknown id");
		agent_server__close(gs);
	}
}

/* A DROPPED of the protocol's first layout (an agent copy an older llmprof
 * left in a process) parses with no kernels without a name; one shorter
 * than that layout is malformed. */
static void test_older_dropped(void)
{
	struct gpu_dropped d = {.activity_records = 3, .messages = 1, .unnamed_kernels = 9};
	const struct gpu_agent_info *a;
	struct agent_server_stats stats;
	struct agent_server *gs;
	struct stream s;

	memset(&s, 0, sizeof(s));
	add_hello(&s, GPU_PROTOCOL_VERSION);
	add(&s, GPU_MSG_DROPPED, &d, 4 * sizeof(__u64), NULL);
	add_kernel(&s, 1, 0, 10, 20);
	gs = new_session();
	EXPECT(agent_server__ingest(gs, s.data, s.len) == 0, "older DROPPED refused");
	a = agent_server__agent(gs, 0);
	agent_server__stats(gs, &stats);
	EXPECT(a && a->dropped_activity == 3 && a->dropped_messages == 1 && !a->unnamed_kernels,
	       "older DROPPED: %lu dropped, %lu unnamed",
	       (unsigned long)(a ? a->dropped_activity : 0),
	       (unsigned long)(a ? a->unnamed_kernels : 0));
	EXPECT(stats.dropped_by_agent == 4 && !stats.unnamed_kernels && !stats.malformed,
	       "older DROPPED: stats");
	EXPECT(agent_server__nr_records(gs) == 1, "older DROPPED: the kernel after it");
	agent_server__close(gs);

	memset(&s, 0, sizeof(s));
	add_hello(&s, GPU_PROTOCOL_VERSION);
	add(&s, GPU_MSG_DROPPED, &d, 3 * sizeof(__u64), NULL);
	expect_malformed("DROPPED shorter than its first layout", &s, 0);
}

/* Random bytes after a valid hello never crash the parser. */
static void test_random(void)
{
	uint64_t seed = 0x1234567;
	struct stream s;

	for (int round = 0; round < 2000; round++) {
		struct agent_server *gs = new_session();
		size_t len;

		memset(&s, 0, sizeof(s));
		add_hello(&s, GPU_PROTOCOL_VERSION);
		seed = seed * 6364136223846793005ull + 1442695040888963407ull;
		len = (seed >> 33) % 4096;
		for (size_t i = 0; i < len; i++) {
			seed = seed * 6364136223846793005ull + 1442695040888963407ull;
			s.data[s.len + i] = seed >> 56;
			/* Plausible headers now and then, to get past the framing. */
			if (i % 64 == 4 && (seed & 1))
				s.data[s.len + i] = 0x40;
		}
		s.len += len;
		agent_server__ingest(gs, s.data, s.len);
		agent_server__close(gs);
	}
}

static int client_connect(const char *name)
{
	struct sockaddr_un addr = {.sun_family = AF_UNIX};
	size_t len = strlen(name);
	int fd = socket(AF_UNIX, SOCK_SEQPACKET, 0);

	memcpy(addr.sun_path, name, len);
	addr.sun_path[0] = '\0';
	if (fd < 0 ||
	    connect(fd, (struct sockaddr *)&addr, offsetof(struct sockaddr_un, sun_path) + len)) {
		perror("connect");
		exit(1);
	}
	return fd;
}

static void pump(struct agent_server *gs)
{
	for (int i = 0; i < 10; i++) {
		struct pollfd pfd = {.fd = agent_server__fd(gs), .events = POLLIN};

		poll(&pfd, 1, 20);
		EXPECT(agent_server__on_readable(gs) == 0, "on_readable failed");
	}
}

static void test_socket(void)
{
	struct agent_server *gs = new_session();
	struct agent_server_stats stats;
	struct gpu_message_header h;
	struct stream s;
	int good, bad;
	size_t half;

	EXPECT(agent_server__socket_name(gs)[0] == '@', "abstract name %s",
	       agent_server__socket_name(gs));
	build_valid(&s);
	good = client_connect(agent_server__socket_name(gs));
	bad = client_connect(agent_server__socket_name(gs));
	/* The first message split over two packets. */
	half = s.boundaries[0] / 2;
	EXPECT(send(good, s.data, half, 0) == (ssize_t)half, "send");
	pump(gs);
	EXPECT(send(good, s.data + half, s.boundaries[0] - half, 0) > 0, "send");
	/* The rest but the goodbye in one packet. */
	EXPECT(send(good, s.data + s.boundaries[0],
		    s.boundaries[s.nr_boundaries - 2] - s.boundaries[0], 0) > 0,
	       "send");
	EXPECT(send(bad, "\x01\0\0\0\x03\0\0\0garbage!", 16, 0) == 16, "send");
	pump(gs);
	agent_server__stats(gs, &stats);
	EXPECT(stats.agents == 2, "%zu agents", stats.agents);
	EXPECT(stats.malformed == 1, "%zu malformed", stats.malformed);
	EXPECT(agent_server__nr_records(gs) == 4, "%zu records", agent_server__nr_records(gs));
	EXPECT(recv(bad, &h, sizeof(h), MSG_DONTWAIT) == 0, "bad connection not closed");

	/* STOP reaches the agent; its goodbye ends the connection. */
	if (!fork()) {
		struct pollfd pfd = {.fd = good, .events = POLLIN};

		poll(&pfd, 1, 5000);
		if (recv(good, &h, sizeof(h), 0) != sizeof(h) || h.type != GPU_MSG_STOP)
			_exit(1);
		send(good, s.data + s.boundaries[s.nr_boundaries - 2],
		     s.len - s.boundaries[s.nr_boundaries - 2], 0);
		_exit(0);
	}
	close(good);
	EXPECT(agent_server__stop(gs, 5000) == 0, "stop timed out");
	EXPECT(agent_server__agent(gs, 0)->goodbye, "no goodbye after STOP");
	close(bad);
	agent_server__close(gs);
}

/* A filesystem socket is created for our user only and removed at close. */
static void test_path_socket(void)
{
	struct agent_server_options options = {.target_uid = (uid_t)-1};
	struct agent_server *gs;
	char path[64];
	struct stat st;

	snprintf(path, sizeof(path), "/tmp/llmprof-test-%d.sock", getpid());
	options.socket_name = path;
	EXPECT(agent_server__open(&gs, &options) == 0, "open %s", path);
	EXPECT(!stat(path, &st) && (st.st_mode & 077) == 0, "mode %o", st.st_mode);
	agent_server__close(gs);
	EXPECT(access(path, F_OK) != 0, "socket left behind");
}

int main(void)
{
	status__set_level(STATUS_QUIET);
	test_valid();
	test_truncated();
	test_malformed();
	test_older_dropped();
	test_random();
	test_socket();
	test_path_socket();
	if (failures)
		fprintf(stderr, "%d failures\n", failures);
	return failures ? 1 : 0;
}
