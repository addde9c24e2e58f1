/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Return addresses that uretprobes took.  While a function with a
 * uretprobe runs (llmprof's own on NCCL and the CUDA allocation calls, or
 * anyone else's), the kernel has replaced its return address on the user
 * stack with the address of the uretprobe trampoline in the "[uprobes]"
 * mapping, and keeps the original in the task's pending return instances:
 * the slot's address (the sp at the function's entry) and the address it
 * held.  An unwind that reads the trampoline from such a slot takes the
 * original instead, and goes on to the caller.
 *
 * Read with CO-RE; a kernel without these fields (or without uprobes)
 * leaves the list empty.
 */
#ifndef LLMPROF_URETPROBE_BPF_H
#define LLMPROF_URETPROBE_BPF_H

#include <bpf/bpf_core_read.h>

#include "nest.bpf.h"

/* Pending return instances looked at, innermost first. */
#define URETPROBE_MAX_PENDING 8

struct uretprobe_pending {
	__u64 trampoline; /* what the hijacked slots hold */
	__u32 nr;
	__u32 pad;
	__u64 slot[URETPROBE_MAX_PENDING]; /* user address of the return address */
	__u64 original[URETPROBE_MAX_PENDING];
};

/* Each capture slot's list (nest.bpf.h), filled by uretprobe__collect(). */
struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, CAPTURE_NEST);
	__type(key, __u32);
	__type(value, struct uretprobe_pending);
} uretprobe_scratch SEC(".maps");

/* Collects the current task's pending return instances for the
 * uretprobe__original() calls of the capture in slot; NULL when the scratch
 * is missing. */
static __always_inline struct uretprobe_pending *uretprobe__collect(__u32 slot)
{
	struct task_struct *task = bpf_get_current_task_btf();
	struct uretprobe_pending *p;
	struct return_instance *ri;
	struct uprobe_task *utask;
	struct xol_area *area;

	p = bpf_map_lookup_elem(&uretprobe_scratch, &slot);
	if (!p)
		return NULL;
	p->nr = 0;
	p->trampoline = 0;
	/* Every field read, so that a relocation that fails on an older
	 * kernel lies in code the verifier drops. */
	if (!bpf_core_field_exists(struct task_struct, utask) ||
	    !bpf_core_field_exists(struct uprobe_task, return_instances) ||
	    !bpf_core_field_exists(struct return_instance, stack) ||
	    !bpf_core_field_exists(struct return_instance, orig_ret_vaddr) ||
	    !bpf_core_field_exists(struct return_instance, next) ||
	    !bpf_core_field_exists(struct mm_struct, uprobes_state) ||
	    !bpf_core_field_exists(struct xol_area, vaddr))
		return p;
	utask = BPF_CORE_READ(task, utask);
	if (!utask)
		return p;
	ri = BPF_CORE_READ(utask, return_instances);
	if (!ri)
		return p;
	area = BPF_CORE_READ(task, mm, uprobes_state.xol_area);
	if (!area)
		return p;
	p->trampoline = BPF_CORE_READ(area, vaddr);
	for (int i = 0; i < URETPROBE_MAX_PENDING && ri; i++) {
		p->slot[i] = BPF_CORE_READ(ri, stack);
		p->original[i] = BPF_CORE_READ(ri, orig_ret_vaddr);
		p->nr = i + 1;
		ri = BPF_CORE_READ(ri, next);
	}
	return p;
}

/* The return address that stack slot held before a uretprobe took it; ra
 * when no pending return of the capture's uretprobe__collect() took it. */
static __always_inline __u64 uretprobe__original(__u32 capture, __u64 slot, __u64 ra)
{
	const struct uretprobe_pending *p = bpf_map_lookup_elem(&uretprobe_scratch, &capture);

	if (!p || !p->nr || ra != p->trampoline)
		return ra;
	for (int i = 0; i < URETPROBE_MAX_PENDING; i++) {
		if (i >= p->nr)
			break;
		if (p->slot[i] == slot)
			return p->original[i];
	}
	return ra;
}

#endif /* LLMPROF_URETPROBE_BPF_H */
