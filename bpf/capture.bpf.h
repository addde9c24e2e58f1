/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The record every probe family emits: one struct sample_event with the
 * thread's kernel, user and Python stacks (and the user stack copy where the
 * unwinder wants one), into the one ring buffer the sampler drains.  A
 * family's program includes this header, fills event->kind and
 * event->detail, and calls capture__stacks(); userspace unwinds and
 * symbolizes every kind the same way.
 */
#ifndef LLMPROF_CAPTURE_BPF_H
#define LLMPROF_CAPTURE_BPF_H

#include "sampler.h"
#include "python.bpf.h"
#include "targets.bpf.h"
#include "unwind.bpf.h"

const volatile bool collect_kernel = true;
/* Unread bytes past which the reader is woken; userspace sets half the ring. */
const volatile __u64 wakeup_bytes = 4 * 1024 * 1024;

struct {
	__uint(type, BPF_MAP_TYPE_RINGBUF);
	__uint(max_entries, 16 * 1024 * 1024);
} samples SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, COUNTER_MAX);
	__type(key, __u32);
	__type(value, __u64);
} counters SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct governor_settings);
} governor_settings SEC(".maps");

/* 1, or N while the overhead governor slows the clock N times. */
static __always_inline __u32 governor_divisor(void)
{
	const struct governor_settings *settings;
	__u32 zero = 0;

	settings = bpf_map_lookup_elem(&governor_settings, &zero);
	return settings && settings->divisor > 1 ? settings->divisor : 1;
}

static __always_inline void count(__u32 counter)
{
	__u64 *value = bpf_map_lookup_elem(&counters, &counter);

	if (value)
		*value += 1;
}

/* A record for the current thread, its header filled; NULL when the ring is
 * full (the caller counts the loss under its own counter). */
static __always_inline struct sample_event *capture__reserve(__u32 kind)
{
	__u64 id = bpf_get_current_pid_tgid();
	struct sample_event *event;

	event = bpf_ringbuf_reserve(&samples, sizeof(*event) + STACK_COPY_RECORD_BYTES, 0);
	if (!event)
		return NULL;
	event->time_ns = bpf_ktime_get_ns();
	event->pid = id >> 32;
	event->tid = (__u32)id;
	event->cpu = bpf_get_smp_processor_id();
	event->kind = kind;
	event->correlation = 0;
	__builtin_memset(event->detail, 0, sizeof(event->detail));
	bpf_get_current_comm(event->comm, sizeof(event->comm));
	return event;
}

/* Fills the stacks of the current thread; kernel frames only where asked
 * for and collect_kernel allows.  Returns true when the Python reader wants
 * the record at once (an interpreter is being looked for).  With every
 * scratch slot of the CPU in use, the user and Python stacks stay empty. */
static __always_inline bool capture__stacks(void *ctx, struct sample_event *event, bool kernel)
{
	int slot = nest__take();
	bool urgent = false;

	if (kernel && collect_kernel) {
		event->kernel_stack_bytes =
		    bpf_get_stack(ctx, event->kernel_stack, sizeof(event->kernel_stack), 0);
		if (event->kernel_stack_bytes < 0)
			count(COUNTER_KERNEL_STACK_ERROR);
	} else {
		event->kernel_stack_bytes = 0;
	}
	/* The BPF unwinder records the user stack after the event. */
	event->user_stack_bytes = unwind_in_bpf
				      ? 0
				      : bpf_get_stack(ctx, event->user_stack,
						      sizeof(event->user_stack), BPF_F_USER_STACK);
	if (event->user_stack_bytes < 0)
		count(COUNTER_USER_STACK_ERROR);
	if (slot < 0) {
		count(COUNTER_CAPTURE_NESTED);
		event->python.nr_frames = 0;
		event->python.flags = 0;
		event->python.entry_mask = 0;
		if (unwind_in_bpf) {
			struct unwind_frames *frames = (struct unwind_frames *)(event + 1);

			frames->magic = UNWIND_FRAMES_MAGIC;
			frames->nr = 0;
			frames->end = UNWIND_END_DISTURBED;
			frames->by_rules = 0;
		}
		if (stack_copy_bytes) {
			struct user_stack_copy *copy =
			    (struct user_stack_copy *)((void *)(event + 1) + STACK_COPY_OFFSET);

			copy->size = 0;
			copy->error = -16; /* EBUSY */
			copy->stack_end = 0;
		}
		return false;
	}
	urgent = python__capture(&event->python, slot);
	if (unwind_in_bpf)
		unwind__walk_user_stack((struct unwind_frames *)(event + 1), slot);
	if (stack_copy_bytes)
		unwind__copy_user_stack(
		    (struct user_stack_copy *)((void *)(event + 1) + STACK_COPY_OFFSET), slot);
	nest__give(slot);
	return urgent;
}

/* Submits the record; the reader is woken only when the ring passes
 * wakeup_bytes (or urgent), otherwise it drains on its own timer, which
 * keeps wakeups off the target's CPUs. */
static __always_inline void capture__submit(struct sample_event *event, bool urgent)
{
	__u64 flags = BPF_RB_NO_WAKEUP;

	if (urgent || bpf_ringbuf_query(&samples, BPF_RB_AVAIL_DATA) > wakeup_bytes)
		flags = BPF_RB_FORCE_WAKEUP;
	bpf_ringbuf_submit(event, flags);
}

#endif /* LLMPROF_CAPTURE_BPF_H */
