/* SPDX-License-Identifier: GPL-2.0 */
/* Builders of agent wire messages and a check macro, for the GPU tests. */
#ifndef LLMPROF_TEST_WIRE_H
#define LLMPROF_TEST_WIRE_H

#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "gpu/gpu_protocol.h"

static int failures;

#define EXPECT(cond, ...)                                                                          \
	do {                                                                                       \
		if (!(cond)) {                                                                     \
			fprintf(stderr, "FAIL %s:%d: %s: ", __FILE__, __LINE__, #cond);            \
			fprintf(stderr, __VA_ARGS__);                                              \
			fputc('\n', stderr);                                                       \
			failures++;                                                                \
		}                                                                                  \
	} while (0)

struct stream {
	uint8_t data[1 << 16];
	size_t len;
	size_t boundaries[64]; /* message ends */
	int nr_boundaries;
};

static inline void add(struct stream *s, uint32_t type, const void *body, size_t body_len,
		       const char *text)
{
	struct gpu_message_header h = {.type = type};
	size_t text_len = text ? strlen(text) : 0;

	h.length = GPU_MSG_ALIGN(sizeof(h) + body_len + text_len);
	memset(s->data + s->len, 0, h.length);
	memcpy(s->data + s->len, &h, sizeof(h));
	memcpy(s->data + s->len + sizeof(h), body, body_len);
	if (text_len)
		memcpy(s->data + s->len + sizeof(h) + body_len, text, text_len);
	s->len += h.length;
	s->boundaries[s->nr_boundaries++] = s->len;
}

static inline void add_hello(struct stream *s, uint32_t version)
{
	const char *path = "/opt/cuda/lib64/libcupti.so.13";
	struct gpu_hello hello = {
	    .protocol_version = version,
	    .pid = 4242,
	    .cupti_version = 130001,
	    .clock_mode = GPU_CLOCK_OFFSET,
	    .clock_offset_ns = -5,
	    .clock_error_ns = 40,
	    .start_ns = 1000,
	    .agent_mode = GPU_AGENT_RECORD,
	    .path_length = strlen(path),
	    .agent_version = "0.1.0",
	};

	add(s, GPU_MSG_HELLO, &hello, sizeof(hello), path);
}

static inline void add_name(struct stream *s, uint32_t id, const char *name)
{
	struct gpu_name m = {.id = id, .length = strlen(name)};

	add(s, GPU_MSG_NAME, &m, sizeof(m), name);
}

static inline void add_kernel_on(struct stream *s, uint32_t device, uint32_t stream,
				 uint32_t correlation, uint32_t name, uint64_t start, uint64_t end,
				 uint32_t graph_id)
{
	struct gpu_kernel k = {
	    .start_ns = start,
	    .end_ns = end,
	    .device = device,
	    .context = 1,
	    .stream = stream,
	    .correlation = correlation,
	    .name_id = name,
	    .graph_id = graph_id,
	    .grid = {64, 1, 1},
	    .block = {128, 1, 1},
	};

	add(s, GPU_MSG_KERNEL, &k, sizeof(k), NULL);
}

static inline void add_kernel(struct stream *s, uint32_t correlation, uint32_t name, uint64_t start,
			      uint64_t end)
{
	add_kernel_on(s, 0, 7, correlation, name, start, end, 0);
}

static inline void add_launch_on(struct stream *s, uint32_t correlation, uint32_t parent,
				 uint32_t domain, uint32_t flags, uint32_t tid, uint64_t time_ns)
{
	struct gpu_launch l = {
	    .time_ns = time_ns,
	    .correlation = correlation,
	    .parent_correlation = parent,
	    .tid = tid,
	    .callback_id = domain == GPU_DOMAIN_RUNTIME ? 211 : 307,
	    .domain = domain,
	    .flags = flags,
	};

	add(s, GPU_MSG_LAUNCH, &l, sizeof(l), NULL);
}

static inline void add_launch(struct stream *s, uint32_t correlation, uint32_t parent,
			      uint32_t domain, uint32_t flags)
{
	add_launch_on(s, correlation, parent, domain, flags, 4243, 100 + correlation);
}

#endif /* LLMPROF_TEST_WIRE_H */
