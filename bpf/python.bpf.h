/* SPDX-License-Identifier: GPL-2.0 */
/*
 * BPF side of Python frames, included by sampler.bpf.c: finds the sampled
 * thread's PyThreadState and copies its frame chain (code object,
 * instruction offset, eval-call boundaries) into struct python_stack.
 * Userspace resolves code objects and merges the frames with the native
 * stack; see lib/python.h.
 */
#ifndef LLMPROF_PYTHON_BPF_H
#define LLMPROF_PYTHON_BPF_H

#include "nest.bpf.h"
#include "python.h"
#include "targets.h"

/* Thread lookups are cached; a thread without a PyThreadState is looked
 * up again when its interpreter's thread list changes or after this long
 * (a new thread binds its thread state after it was linked in). */
#define PYTHON_NEGATIVE_TTL_NS 100000000ULL
#define PYTHON_MAX_THREAD_STEPS 1024
/* Marker frames (3.12+) do not count against PYTHON_MAX_FRAMES. */
#define PYTHON_MAX_FRAME_STEPS (2 * PYTHON_MAX_FRAMES + 8)

/* One interpreter layout per process of the target set, by tgid; a forked
 * child inherits its parent's (the same address space, copied).  Allocated
 * by entry: most sessions have a handful of Python processes, or none. */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__uint(max_entries, MAX_TARGETS);
	__type(key, __u32);
	__type(value, struct python_config);
} python_config SEC(".maps");

struct python_thread {
	__u64 tstate;	  /* 0: the thread has none */
	__u64 head;	  /* the first interpreter's thread list head when looked up */
	__u64 checked_ns; /* when a missing tstate was looked up */
};

struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__uint(max_entries, 16384);
	__type(key, __u32);
	__type(value, struct python_thread);
} python_threads SEC(".maps");

struct python_scratch {
	__u8 frame[PYTHON_FRAME_READ_MAX];
};

/* One frame buffer a capture slot (nest.bpf.h). */
struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, CAPTURE_NEST);
	__type(key, __u32);
	__type(value, struct python_scratch);
} python_scratch SEC(".maps");

static __always_inline __u64 python__read_u64(__u64 addr)
{
	__u64 value = 0;

	if (bpf_probe_read_user(&value, sizeof(value), (const void *)addr))
		return 0;
	return value;
}

/* A field of the frame copy; offsets come from userspace, so bound them
 * for the verifier (userspace keeps them inside frame_read_size). */
static __always_inline __u64 python__field_u64(const __u8 *buf, __u32 offset)
{
	if (offset > PYTHON_FRAME_READ_MAX - sizeof(__u64))
		return 0;
	return *(const __u64 *)(buf + offset);
}

static __always_inline __u32 python__field_u32(const __u8 *buf, __u32 offset)
{
	if (offset > PYTHON_FRAME_READ_MAX - sizeof(__u32))
		return 0;
	return *(const __u32 *)(buf + offset);
}

static __always_inline __u8 python__field_u8(const __u8 *buf, __u32 offset)
{
	if (offset > PYTHON_FRAME_READ_MAX - 1)
		return 0;
	return buf[offset];
}

struct python_thread_walk {
	const struct python_config *config;
	__u64 fsbase;
	__u64 interpreter;
	__u64 tstate; /* next candidate in the interpreter's list */
	__u64 found;
};

/* One step over the interpreters' thread lists: pthread_self() of a
 * thread is its fsbase on x86-64, and every PyThreadState records the
 * pthread_self() of the thread it belongs to.  No counters in the walk
 * state: the verifier would follow every value of one. */
static long python__thread_step(__u64 index, void *data)
{
	struct python_thread_walk *w = data;
	const struct python_config *c = w->config;

	if (!w->tstate) {
		if (!w->interpreter)
			return 1;
		w->interpreter = python__read_u64(w->interpreter + c->interpreter_next);
		if (!w->interpreter)
			return 1;
		w->tstate = python__read_u64(w->interpreter + c->interpreter_threads_head);
		return 0;
	}
	if (python__read_u64(w->tstate + c->thread_thread_id) == w->fsbase) {
		w->found = w->tstate;
		return 1;
	}
	w->tstate = python__read_u64(w->tstate + c->thread_next);
	return 0;
}

/* The sampled thread's PyThreadState, or 0. */
static __always_inline __u64 python__thread_state(const struct python_config *c, __u64 fsbase)
{
	struct python_thread_walk walk = {.config = c, .fsbase = fsbase};
	__u32 tid = (__u32)bpf_get_current_pid_tgid();
	struct python_thread *cached, entry = {};
	__u64 now = bpf_ktime_get_ns(), head;

	cached = bpf_map_lookup_elem(&python_threads, &tid);
	if (cached && cached->tstate &&
	    python__read_u64(cached->tstate + c->thread_thread_id) == fsbase)
		return cached->tstate;
	walk.interpreter = python__read_u64(c->runtime + c->runtime_interpreters_head);
	if (!walk.interpreter)
		return 0;
	head = python__read_u64(walk.interpreter + c->interpreter_threads_head);
	if (cached && !cached->tstate && cached->head == head &&
	    now - cached->checked_ns < PYTHON_NEGATIVE_TTL_NS)
		return 0;
	walk.tstate = head;
	bpf_loop(PYTHON_MAX_THREAD_STEPS, python__thread_step, &walk, 0);
	entry.tstate = walk.found;
	entry.head = head;
	entry.checked_ns = now;
	bpf_map_update_elem(&python_threads, &tid, &entry, BPF_ANY);
	return walk.found;
}

struct python_frame_walk {
	const struct python_config *config;
	struct python_stack *stack;
	__u8 *buf;
	__u64 frame;
};

static long python__frame_step(__u64 index, void *data)
{
	struct python_frame_walk *w = data;
	const struct python_config *c = w->config;
	struct python_stack *stack = w->stack;
	/* The count lives in the record, where the verifier does not follow
	 * its value from step to step. */
	__u32 size = c->frame_read_size, n = stack->nr_frames;
	struct python_frame *out;
	__u64 code, previous;
	__s32 stamp = 0;
	__u8 owner = 0;

	if (!w->frame)
		return 1;
	if (size > PYTHON_FRAME_READ_MAX)
		size = PYTHON_FRAME_READ_MAX;
	if (size < sizeof(__u64) || bpf_probe_read_user(w->buf, size, (const void *)w->frame)) {
		stack->flags |= PYTHON_STACK_READ_ERROR;
		return 1;
	}
	previous = python__field_u64(w->buf, c->frame_previous);
	code = python__field_u64(w->buf, c->frame_code);
	if (c->frame_owner != PYTHON_NO_OFFSET)
		owner = python__field_u8(w->buf, c->frame_owner);
	if (c->entry_mode == PYTHON_ENTRY_CSTACK_OWNER && owner == c->owner_cstack) {
		/* The frames leaf-ward of this marker, up to the previous one,
		 * are what one C-level eval call ran. */
		if (n > 0 && n <= PYTHON_MAX_FRAMES)
			stack->entry_mask |= 1ULL << ((n - 1) & (PYTHON_MAX_FRAMES - 1));
		w->frame = previous;
		return 0;
	}
	if (n >= PYTHON_MAX_FRAMES) {
		stack->flags |= PYTHON_STACK_TRUNCATED;
		return 1;
	}
	out = &stack->frames[n];
	out->code = code;
	if (c->instr_mode == PYTHON_INSTR_LASTI)
		out->instr = (__s32)python__field_u32(w->buf, c->frame_instr) * 2;
	else
		out->instr =
		    (__s32)(python__field_u64(w->buf, c->frame_instr) - (code + c->code_adaptive));
	if (bpf_probe_read_user(&stamp, sizeof(stamp), (const void *)(code + c->code_firstlineno)))
		stamp = 0;
	out->stamp = stamp;
	if (c->entry_mode == PYTHON_ENTRY_EVERY_FRAME ||
	    (c->entry_mode == PYTHON_ENTRY_FLAG && python__field_u8(w->buf, c->frame_is_entry)))
		stack->entry_mask |= 1ULL << n;
	stack->nr_frames = n + 1;
	w->frame = previous;
	return 0;
}

/* The Python stack of the current thread, with the scratch of the capture
 * in slot.  Returns true when userspace should read this sample at once. */
static __always_inline bool python__capture(struct python_stack *stack, __u32 slot)
{
	struct python_frame_walk walk = {.stack = stack};
	const struct python_config *c;
	struct task_struct *task;
	__u32 tgid;
	__u64 tstate;

	stack->nr_frames = 0;
	stack->flags = 0;
	stack->entry_mask = 0;
	tgid = bpf_get_current_pid_tgid() >> 32;
	c = bpf_map_lookup_elem(&python_config, &tgid);
	if (!c)
		return false;
	if (!c->runtime)
		return c->searching;
	walk.buf = bpf_map_lookup_elem(&python_scratch, &slot);
	if (!walk.buf)
		return false;
	task = bpf_get_current_task_btf();
	tstate = python__thread_state(c, task->thread.fsbase);
	if (!tstate)
		return false;
	walk.frame = python__read_u64(tstate + c->thread_frame);
	if (walk.frame && c->cframe_current_frame != PYTHON_NO_OFFSET)
		walk.frame = python__read_u64(walk.frame + c->cframe_current_frame);
	walk.config = c;
	bpf_loop(PYTHON_MAX_FRAME_STEPS, python__frame_step, &walk, 0);
	/* Out of steps before the thread's first frame. */
	if (walk.frame)
		stack->flags |= PYTHON_STACK_TRUNCATED;
	return false;
}

#endif /* LLMPROF_PYTHON_BPF_H */
