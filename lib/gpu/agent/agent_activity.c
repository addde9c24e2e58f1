// SPDX-License-Identifier: GPL-2.0
/*
 * The agent's activity records: the buffers CUPTI fills, and each kernel,
 * copy and set in them sent to llmprof on llmprof's clock, with kernel names
 * sent once and then referred to by number.
 */
#include "glibc_compat.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "agent_private.h"

void CUPTIAPI buffer_requested(uint8_t **buffer, size_t *size, size_t *max_records)
{
	void *b = NULL;

	*buffer = NULL;
	*size = 0;
	*max_records = 0;
	if (atomic_fetch_add(&agent.buffers_out, 1) >= MAX_BUFFERS)
		goto refuse;
	pthread_mutex_lock(&agent.pool_lock);
	if (agent.nr_free)
		b = agent.free_buffers[--agent.nr_free];
	pthread_mutex_unlock(&agent.pool_lock);
	if (!b)
		b = aligned_alloc(8, BUFFER_SIZE);
	if (!b)
		goto refuse;
	*buffer = b;
	*size = BUFFER_SIZE;
	return;
refuse:
	/* CUPTI drops records and counts them; we read the count later. */
	atomic_fetch_sub(&agent.buffers_out, 1);
}

void buffer_release(uint8_t *buffer)
{
	pthread_mutex_lock(&agent.pool_lock);
	if (agent.nr_free < MAX_BUFFERS)
		agent.free_buffers[agent.nr_free++] = buffer;
	else
		free(buffer);
	pthread_mutex_unlock(&agent.pool_lock);
	/* Never below zero: a new session starts the count afresh, and CUPTI
	 * may still return an older session's buffer. */
	for (int out = atomic_load(&agent.buffers_out); out > 0;)
		if (atomic_compare_exchange_weak(&agent.buffers_out, &out, out - 1))
			break;
}

uint64_t to_monotonic(uint64_t t)
{
	if (!t || agent.clock_mode == GPU_CLOCK_CALLBACK)
		return t;
	return t + atomic_load_explicit(&agent.clock_offset, memory_order_relaxed);
}

/*
 * The kernel-name table: open addressing on CUPTI's name pointer, from
 * NAME_SLOTS_MIN slots, doubled before it is half full, up to
 * NAME_SLOTS_MAX.  The agent lives in the user's process, so a session has
 * at most MAX_NAMES ids and MAX_NAME_BYTES of names; a kernel whose name
 * finds no room is sent without one, and counted in dropped_names.
 */

/* The slot of name: its own, or the empty one where it would go. */
static size_t name_slot_of(const struct name_slot *slots, uint32_t nr_slots, const char *name)
{
	uintptr_t h = (uintptr_t)name;
	size_t pos;

	h ^= h >> 17;
	h *= 0xed5ad4bbu;
	for (pos = h & (nr_slots - 1); slots[pos].key && slots[pos].key != name;
	     pos = (pos + 1) & (nr_slots - 1))
		;
	return pos;
}

/* Makes the first table, or doubles it; false when it cannot. */
static bool names_grow(void)
{
	uint32_t nr = agent.name_slots ? agent.name_slots * 2 : NAME_SLOTS_MIN;
	struct name_slot *slots;

	if (nr > NAME_SLOTS_MAX)
		return false;
	slots = calloc(nr, sizeof(*slots));
	if (!slots)
		return false;
	for (size_t i = 0; i < agent.name_slots; i++)
		if (agent.names[i].key)
			slots[name_slot_of(slots, nr, agent.names[i].key)] = agent.names[i];
	free(agent.names);
	agent.names = slots;
	agent.name_slots = nr;
	return true;
}

/* The slot for a name new to the table, growing it to stay under half
 * full (probes stay short, and an empty slot ends every probe); NULL when
 * it is full. */
static struct name_slot *names_new_slot(struct name_slot *slot, const char *name)
{
	if (2 * (agent.nr_names + 1) > agent.name_slots && names_grow())
		slot = &agent.names[name_slot_of(agent.names, agent.name_slots, name)];
	else if (agent.nr_names + 2 > agent.name_slots)
		return NULL;
	agent.nr_names++;
	return slot;
}

/* Id of a kernel name, sending the name first when it is new; 0 without
 * a name.  Caller holds completion_lock. */
uint32_t name_id(const char *name)
{
	struct name_slot *slot;
	struct gpu_name m;
	char *copy;
	size_t len;

	if (!name)
		return 0;
	if (!agent.names && !names_grow())
		goto drop;
	slot = &agent.names[name_slot_of(agent.names, agent.name_slots, name)];
	if (slot->key && !strcmp(slot->copy, name))
		return slot->id;
	/* New, or the pointer now names another kernel: a new id. */
	len = strlen(name);
	if (agent.next_name_id >= MAX_NAMES || agent.name_bytes + len > MAX_NAME_BYTES)
		goto drop;
	copy = strdup(name);
	if (!copy)
		goto drop;
	if (!slot->key && !(slot = names_new_slot(slot, name))) {
		free(copy);
		goto drop;
	}
	free(slot->copy);
	slot->copy = copy;
	slot->key = name;
	slot->id = ++agent.next_name_id;
	agent.name_bytes += len;
	m = (struct gpu_name){.id = slot->id, .length = len};
	if (m.length > GPU_TEXT_MAX)
		m.length = GPU_TEXT_MAX;
	packet_add(&agent.completion_packet, GPU_MSG_NAME, &m, sizeof(m), name, m.length,
		   SEND_WAIT_MS);
	return m.id;
drop:
	atomic_fetch_add_explicit(&agent.dropped_names, 1, memory_order_relaxed);
	return 0;
}

/* A new session starts with no names, and the smallest table. */
void names_reset(void)
{
	for (size_t i = 0; i < agent.name_slots; i++)
		free(agent.names[i].copy);
	free(agent.names);
	agent.names = NULL;
	agent.name_slots = agent.nr_names = agent.next_name_id = 0;
	agent.name_bytes = 0;
}

bool times_valid(uint64_t start, uint64_t end)
{
	if (start && end >= start && (!agent.our_clock_until || end <= agent.our_clock_until))
		return true;
	atomic_fetch_add_explicit(&agent.incomplete, 1, memory_order_relaxed);
	return false;
}

/* A record's correlation id, 0 where this CUPTI gets it wrong: a graph
 * launch's work after the process's first session (before 13.1 Update 1).
 * Sent as it came, it would put the work under another launch's stack. */
static uint32_t graph_correlation(uint32_t graph_id, uint32_t correlation)
{
	return graph_id && agent.graph_correlation_wrong ? 0 : correlation;
}

/*
 * Only fields that CUpti_ActivityKernel5 (CUDA 11) and later share are read,
 * at the offsets the CUDA 13 headers give them, so an older libcupti that a
 * framework ships still parses; cuptiActivityGetNextRecord() knows each
 * record's real size.
 */
void emit_kernel(const CUpti_ActivityKernel10 *k)
{
	struct gpu_kernel m;

	if (!times_valid(k->start, k->end))
		return;
	m = (struct gpu_kernel){
	    .start_ns = to_monotonic(k->start),
	    .end_ns = to_monotonic(k->end),
	    .graph_node_id = k->graphNodeId,
	    .device = k->deviceId,
	    .context = k->contextId,
	    .stream = k->streamId,
	    .correlation = graph_correlation(k->graphId, k->correlationId),
	    .name_id = name_id(k->name),
	    .graph_id = k->graphId,
	    .grid = {k->gridX, k->gridY, k->gridZ},
	    .block = {k->blockX, k->blockY, k->blockZ},
	    .shared_memory = k->staticSharedMemory + k->dynamicSharedMemory,
	    .registers = k->registersPerThread,
	};
	packet_add(&agent.completion_packet, GPU_MSG_KERNEL, &m, sizeof(m), NULL, 0, SEND_WAIT_MS);
	atomic_fetch_add_explicit(&agent.sent_kernels, 1, memory_order_relaxed);
}

void emit_memcpy(const CUpti_ActivityMemcpy6 *c)
{
	struct gpu_memcpy m;

	if (!times_valid(c->start, c->end))
		return;
	m = (struct gpu_memcpy){
	    .start_ns = to_monotonic(c->start),
	    .end_ns = to_monotonic(c->end),
	    .bytes = c->bytes,
	    .graph_node_id = c->graphNodeId,
	    .device = c->deviceId,
	    .context = c->contextId,
	    .stream = c->streamId,
	    .correlation = graph_correlation(c->graphId, c->correlationId),
	    .runtime_correlation = graph_correlation(c->graphId, c->runtimeCorrelationId),
	    .graph_id = c->graphId,
	    .copy_kind = c->copyKind,
	    .src_kind = c->srcKind,
	    .dst_kind = c->dstKind,
	    .flags = c->flags,
	};
	packet_add(&agent.completion_packet, GPU_MSG_MEMCPY, &m, sizeof(m), NULL, 0, SEND_WAIT_MS);
	atomic_fetch_add_explicit(&agent.sent_memcpys, 1, memory_order_relaxed);
}

void emit_memset(const CUpti_ActivityMemset4 *s)
{
	struct gpu_memset m;

	if (!times_valid(s->start, s->end))
		return;
	m = (struct gpu_memset){
	    .start_ns = to_monotonic(s->start),
	    .end_ns = to_monotonic(s->end),
	    .bytes = s->bytes,
	    .graph_node_id = s->graphNodeId,
	    .device = s->deviceId,
	    .context = s->contextId,
	    .stream = s->streamId,
	    .correlation = graph_correlation(s->graphId, s->correlationId),
	    .graph_id = s->graphId,
	    .value = s->value,
	};
	packet_add(&agent.completion_packet, GPU_MSG_MEMSET, &m, sizeof(m), NULL, 0, SEND_WAIT_MS);
	atomic_fetch_add_explicit(&agent.sent_memsets, 1, memory_order_relaxed);
}

/* Records of launches made before the first counted one do not count. */
void work_finished(uint32_t graph_id, uint32_t correlation)
{
	uint32_t first = atomic_load_explicit(&agent.first_counted, memory_order_relaxed);

	if (!graph_id && first && correlation >= first)
		atomic_fetch_add_explicit(&agent.finished_work, 1, memory_order_relaxed);
}

/* Whether CUPTI's clock is still our timestamp callback. */
static bool clock_is_ours(void)
{
	uint64_t cupti_now = 0, now;

	if (agent.cupti.get_timestamp(&cupti_now) != CUPTI_SUCCESS)
		return true;
	now = monotonic_ns();
	return cupti_now > now ? cupti_now - now < CLOCK_CALLBACK_SLACK_NS
			       : now - cupti_now < CLOCK_CALLBACK_SLACK_NS;
}

void CUPTIAPI buffer_completed(CUcontext context, uint32_t stream, uint8_t *buffer, size_t size,
			       size_t valid)
{
	int state = atomic_load(&agent.state);
	CUpti_Activity *record = NULL;
	size_t dropped = 0;

	if (agent.cupti.dropped_records(context, stream, &dropped) == CUPTI_SUCCESS && dropped)
		atomic_fetch_add(&agent.dropped_activity, dropped);
	if ((state != STATE_ACTIVE && state != STATE_STOPPING) || atomic_load(&agent.dead))
		goto cleanup;
	/* The clock checked for every buffer: about a microsecond.  Records on
	 * another client's clock (TSC cycles: far past now on ours) cannot be
	 * placed: they are not sent. */
	if (agent.clock_mode == GPU_CLOCK_CALLBACK && !clock_is_ours())
		atomic_store(&agent.foreign_clock, true);
	pthread_mutex_lock(&agent.completion_lock);
	agent.our_clock_until =
	    atomic_load(&agent.foreign_clock) ? monotonic_ns() + CLOCK_CALLBACK_SLACK_NS : 0;
	if (agent.clock_mode == GPU_CLOCK_OFFSET)
		measure_offset();
	while (agent.cupti.next_record(buffer, valid, &record) == CUPTI_SUCCESS) {
		const CUpti_ActivityKernel10 *k = (const CUpti_ActivityKernel10 *)record;
		const CUpti_ActivityMemcpy6 *c = (const CUpti_ActivityMemcpy6 *)record;
		const CUpti_ActivityMemset4 *s = (const CUpti_ActivityMemset4 *)record;

		switch (record->kind) {
		case CUPTI_ACTIVITY_KIND_KERNEL:
		case CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL:
			work_finished(k->graphId, k->correlationId);
			emit_kernel(k);
			break;
		case CUPTI_ACTIVITY_KIND_MEMCPY:
			work_finished(c->graphId, c->runtimeCorrelationId ? c->runtimeCorrelationId
									  : c->correlationId);
			emit_memcpy(c);
			break;
		case CUPTI_ACTIVITY_KIND_MEMSET:
			work_finished(s->graphId, s->correlationId);
			emit_memset(s);
			break;
		default:
			break;
		}
	}
	packet_flush(&agent.completion_packet, SEND_WAIT_MS);
	pthread_mutex_unlock(&agent.completion_lock);
cleanup:
	buffer_release(buffer);
}

/* Clock. */
