/* SPDX-License-Identifier: GPL-2.0 */
/*
 * What the probe families on a library's functions share in BPF (GPU
 * memory, NCCL): a thread's outermost call in progress, kept from its entry
 * probe to its return probe in the family's map of pending calls (whose
 * value starts with struct library_call), and the dynamic loader's probe
 * that tells userspace a library was mapped, stopping the target (record)
 * until the new library is probed.
 */
#ifndef LLMPROF_LIBRARY_CALL_BPF_H
#define LLMPROF_LIBRARY_CALL_BPF_H

#include "capture.bpf.h"

#define SIGSTOP 19

/* record: the target is our child, so it may be stopped while the probes
 * go into a library it has just mapped. */
const volatile bool stop_on_load = false;

/* The head of a family's pending call. */
struct library_call {
	__u64 cookie;	/* the probe's: which function, and its shape */
	__u64 start_ns; /* when the outermost call was entered */
	__u64 sp;	/* its stack pointer at entry */
	__u32 depth;	/* calls of the family nested in it, itself included */
};

/*
 * At entry: true when the thread is inside its outermost call already, so
 * this one is made inside it and only counted.  At or above the outermost
 * call's frame, that call never returned through its probe (longjmp, an
 * exception): the caller starts over.
 */
static __always_inline bool library_call__nested(void *pending_map, __u32 tid, __u64 sp)
{
	struct library_call *pending = bpf_map_lookup_elem(pending_map, &tid);

	if (pending && pending->depth && sp < pending->sp) {
		pending->depth++;
		return true;
	}
	return false;
}

/* At entry, for the outermost call. */
static __always_inline void library_call__begin(struct library_call *call, __u64 cookie, __u64 sp)
{
	call->cookie = cookie;
	call->start_ns = bpf_ktime_get_ns();
	call->sp = sp;
	call->depth = 1;
}

/* At return: the thread's pending call when this return ends its outermost
 * call; NULL when it ends a nested one, or none is pending. */
static __always_inline void *library_call__end(void *pending_map, __u32 tid)
{
	struct library_call *pending = bpf_map_lookup_elem(pending_map, &tid);

	if (!pending || !pending->depth)
		return NULL;
	if (--pending->depth)
		return NULL;
	return pending;
}

/* A record of the family's kind; NULL, the loss counted, when the ring is
 * full. */
static __always_inline struct sample_event *library_call__reserve(__u32 kind, __u32 lost_counter)
{
	struct sample_event *event = capture__reserve(kind);

	if (!event)
		count(lost_counter);
	return event;
}

/*
 * The dynamic loader's _dl_debug_state(), called as it maps and unmaps
 * libraries: a record whose detail[0] is loader_cookie makes userspace look
 * for a library to probe, at once.
 */
static __always_inline int library_call__loader(void *ctx, __u32 kind, __u32 lost_counter,
						__u64 loader_cookie)
{
	struct sample_event *event;

	if (!targets__contains(bpf_get_current_pid_tgid() >> 32))
		return 0;
	/* Before the record: whenever userspace sees it, the stop is already
	 * pending, and its SIGCONT (which also discards a pending stop) comes
	 * after the probes are in. */
	if (stop_on_load)
		bpf_send_signal(SIGSTOP);
	event = library_call__reserve(kind, lost_counter);
	if (!event)
		return 0;
	event->detail[0] = loader_cookie;
	capture__stacks(ctx, event, false);
	capture__submit(event, true);
	return 0;
}

#endif /* LLMPROF_LIBRARY_CALL_BPF_H */
