/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The agent's state and what its parts share: cupti_agent.c (CUPTI, the
 * records, the agent thread) and agent_socket.c (the socket to llmprof and
 * the packets on it).  Private to the agent; nothing here is exported.
 */
#ifndef LLMPROF_AGENT_PRIVATE_H
#define LLMPROF_AGENT_PRIVATE_H

#include <cupti.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <time.h>

#include "gpu/gpu_protocol.h"

#define EXPORT __attribute__((visibility("default")))

#ifndef LLMPROF_CUDA_ROOT
#define LLMPROF_CUDA_ROOT "/usr/local/cuda"
#endif
#ifndef LLMPROF_VERSION
#define LLMPROF_VERSION "0"
#endif

/* Memory the agent may hold, whatever llmprof does: 8 CUPTI buffers of
 * 1 MiB, a launch queue of 64 Ki records (3 MiB), the name table (24 KiB
 * of slots growing to 1.5 MiB, and 8 MiB of names). */
#define BUFFER_SIZE (1u << 20)
#define MAX_BUFFERS 8
#define LAUNCH_RING_SIZE (1u << 16)
#define NAME_SLOTS_MIN (1u << 10)
#define NAME_SLOTS_MAX (1u << 16)
#define MAX_NAMES (NAME_SLOTS_MAX / 2)
#define MAX_NAME_BYTES (8u << 20)
/* How long a sender waits for llmprof before it drops. */
#define SEND_WAIT_MS 200
#define TICK_MS 10
#define FLUSH_INTERVAL_MS 1000
#define DETACH_WAIT_MS 2000
/* At stop, how long work already launched may take to finish before a
 * forced flush cuts it off (llmprof waits 3 s for the goodbye). */
#define DRAIN_WAIT_MS 1000
/* Launch probes per second and thread, unless LLMPROF_AGENT_PROBE_RATE says
 * otherwise (0: every launch). */
#define PROBE_RATE_DEFAULT 10000
/* Flush intervals in a row in which launches older than an interval got no
 * record back, though flushed every tick after the first: another client
 * took the records.  Four, not two: a kernel or a collective that holds the
 * GPU for two seconds (a rank waiting for a straggler), or a starved
 * completion thread, is not another client. */
#define RECORDS_TAKEN_INTERVALS 4
/* How far CUPTI's clock may be from ours while our timestamp callback is
 * its clock (the two reads are microseconds apart). */
#define CLOCK_CALLBACK_SLACK_NS 10000000ull
#define PROBE_BURST 64

enum agent_state {
	STATE_IDLE = 0,
	STATE_STARTING,	  /* start() took it; setup under way */
	STATE_ACTIVE,	  /* subscribed, recording */
	STATE_STOPPING,	  /* flushing; callbacks record nothing */
	STATE_DETACHING,  /* waiting for an API exit callback to finalize */
	STATE_FINALIZING, /* a callback is in cuptiFinalize() */
	STATE_OTHER,	  /* another tool owns CUPTI; only the socket is kept */
	STATE_FORKED,	  /* a child after fork(): never records */
};

/* The CUPTI entry points, resolved with dlsym. */
struct cupti {
	void *handle;
	char path[4096];
	uint32_t version;
	__typeof__(cuptiSubscribe) *subscribe;
	__typeof__(cuptiSubscribe_v2) *subscribe_v2; /* CUPTI 13+, optional */
	__typeof__(cuptiUnsubscribe) *unsubscribe;
	__typeof__(cuptiEnableCallback) *enable_callback;
	__typeof__(cuptiEnableDomain) *enable_domain;
	__typeof__(cuptiActivityEnable) *activity_enable;
	__typeof__(cuptiActivityDisable) *activity_disable;
	__typeof__(cuptiActivityRegisterCallbacks) *register_callbacks;
	__typeof__(cuptiActivityRegisterTimestampCallback) *register_timestamp; /* optional */
	__typeof__(cuptiActivityGetNextRecord) *next_record;
	__typeof__(cuptiActivityGetNumDroppedRecords) *dropped_records;
	__typeof__(cuptiActivityFlushAll) *flush_all;
	__typeof__(cuptiGetTimestamp) *get_timestamp;
	__typeof__(cuptiFinalize) *finalize;
	__typeof__(cuptiGetResultString) *result_string; /* optional */
	__typeof__(cuptiGetVersion) *get_version;	 /* optional */
	__typeof__(cuptiGetGraphExecId) *graph_exec_id;	 /* optional */
};

/* A packet being filled with whole messages. */
struct packet {
	uint8_t data[GPU_MESSAGE_MAX];
	size_t used;
	uint32_t messages;
};

struct launch_slot {
	_Atomic uint64_t sequence;
	struct gpu_launch launch;
};

struct name_slot {
	const char *key; /* CUPTI's pointer */
	char *copy;	 /* to notice a reused pointer */
	uint32_t id;
};

struct agent {
	_Atomic int state;
	_Atomic uint32_t generation; /* bumped per session: resets thread state */
	enum gpu_agent_mode mode;
	char socket_name[108];
	struct cupti cupti;
	CUpti_SubscriberHandle subscriber;
	uint32_t clock_mode;
	_Atomic int64_t clock_offset;
	uint64_t clock_error;
	uint64_t start_ns;
	uint64_t probe_interval_ns; /* 0: no limit */

	pthread_mutex_t send_lock; /* fd and sends */
	int fd;
	_Atomic bool dead; /* the socket failed: llmprof is gone */
	bool congested;	   /* the last send timed out */

	pthread_mutex_t completion_lock; /* completion packet and names */
	struct packet completion_packet;
	struct name_slot *names; /* name_slots of them, a power of two */
	uint32_t name_slots, nr_names, next_name_id;
	size_t name_bytes;

	pthread_mutex_t drain_lock; /* launch ring consumer and thread packet */
	struct packet thread_packet;
	uint64_t dequeue_pos;
	_Atomic uint64_t enqueue_pos;

	pthread_mutex_t pool_lock;
	void *free_buffers[MAX_BUFFERS];
	int nr_free;
	_Atomic int buffers_out;

	_Atomic uint64_t dropped_activity, dropped_launches, dropped_messages, incomplete;
	/* Kernels sent without their name: the name table was full
	 * (gpu_dropped.unnamed_kernels). */
	_Atomic uint64_t dropped_names;
	_Atomic uint64_t sent_kernels, sent_memcpys, sent_memsets, sent_launches;
	/* Launches outside graphs that make one GPU record each, and such
	 * records come back: what is still in flight at stop. */
	_Atomic uint64_t launched_work, finished_work;
	_Atomic uint32_t first_counted; /* correlation id of the first, 0 none yet */
	/* Another CUPTI client took the activity records (its own buffer
	 * callbacks, or it disabled the kinds): CUPTI's activity is its now. */
	_Atomic bool records_taken;
	/* CUPTI's clock is no longer our timestamp callback: another client
	 * registered its own (Kineto's returns TSC cycles). */
	_Atomic bool foreign_clock;
	/* This CUPTI gives graph launches' records wrong correlation ids in
	 * this session: they are sent with none. */
	bool graph_correlation_wrong;
	/* With a foreign clock, the latest time a record on ours can have (the
	 * buffer's arrival); 0: no limit.  Under completion_lock. */
	uint64_t our_clock_until;
};

extern struct agent agent;

static inline uint64_t monotonic_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1000000000ull + ts.tv_nsec;
}

/* agent_socket.c */
void socket_close(void);
void socket_send(const void *data, size_t len, uint32_t messages, int wait_ms);
void packet_flush(struct packet *p, int wait_ms);
void packet_add(struct packet *p, uint32_t type, const void *body, size_t body_len,
		const void *text, size_t text_len, int wait_ms);
void send_message(uint32_t type, const void *body, size_t body_len, const char *text);
const char *cupti_error(CUptiResult result);
void send_error(int error, CUptiResult result, const char *what);
void send_refusal(const char *reason);
void send_notice(const char *text);
int socket_connect(const char *name);

/* cupti_agent.c */
void measure_offset(void);

/* agent_activity.c */
void CUPTIAPI buffer_requested(uint8_t **buffer, size_t *size, size_t *max_records);
void buffer_release(uint8_t *buffer);
uint64_t to_monotonic(uint64_t t);
uint32_t name_id(const char *name);
void names_reset(void);
bool times_valid(uint64_t start, uint64_t end);
void emit_kernel(const CUpti_ActivityKernel10 *k);
void emit_memcpy(const CUpti_ActivityMemcpy6 *c);
void emit_memset(const CUpti_ActivityMemset4 *s);
void work_finished(uint32_t graph_id, uint32_t correlation);
void CUPTIAPI buffer_completed(CUcontext context, uint32_t stream, uint8_t *buffer, size_t size,
			       size_t valid);

#endif /* LLMPROF_AGENT_PRIVATE_H */
