/* SPDX-License-Identifier: GPL-2.0 */
/*
 * BPF side of DWARF unwinding: copies the sampled thread's user registers
 * and the top of its user stack into the sample record, for userspace to
 * unwind with each binary's CFI (as perf --call-graph dwarf does).
 */
#ifndef LLMPROF_UNWIND_BPF_H
#define LLMPROF_UNWIND_BPF_H

#include "unwind.h"

/* Bytes of user stack copied per sample; 0 turns copying off (--unwind fp).
 * Constant once loaded, so record sizes below are known to the verifier. */
const volatile __u32 stack_copy_bytes = 0;

/* The copy size, clamped: the verifier then knows every bound below. */
#define STACK_COPY_MAX (stack_copy_bytes <= MAX_STACK_COPY ? stack_copy_bytes : MAX_STACK_COPY)
/* Extra bytes a sample record carries after struct sample_event. */
#define STACK_COPY_RECORD_BYTES                                                                    \
	(stack_copy_bytes ? sizeof(struct user_stack_copy) + STACK_COPY_MAX + STACK_COPY_PAD : 0)

/* The end of each thread's stack mapping, for the samples whose own lookup
 * finds the mmap lock taken (a thread in mmap() or munmap()). */
struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__uint(max_entries, 16384);
	__type(key, __u32);
	__type(value, __u64);
} stack_ends SEC(".maps");

static long unwind__vma_end(struct task_struct *task, struct vm_area_struct *vma, void *ctx)
{
	*(__u64 *)ctx = vma->vm_end;
	return 0;
}

/*
 * A read of the whole range fails when one page in it is not present: a
 * stack page the thread never touched (a large local buffer it never wrote)
 * or one past the stack's end.  Such a page reads as zeros, which is what
 * it holds, so read page by page and keep the rest; a failed read leaves
 * its part zeroed.  Fails only when sp's own page cannot be read.
 */
static __always_inline long copy_by_page(struct user_stack_copy *copy, __u64 sp, __u64 size,
					 __u32 max)
{
	__u64 off = 0, len = 4096 - (sp & 4095);
	long first = 0;

	for (int i = 0; i < MAX_STACK_COPY / 4096 + 2; i++) {
		long err;

		if (off >= size || off > max)
			break;
		if (len > size - off)
			len = size - off;
		if (len > 4096)
			len = 4096;
		err = bpf_probe_read_user(copy->data + off, len, (const void *)(sp + off));
		if (!i)
			first = err;
		off += len;
		len = 4096;
	}
	return first;
}

/* Fills copy (STACK_COPY_RECORD_BYTES long) for the current task. */
static __always_inline void unwind__copy_user_stack(struct user_stack_copy *copy)
{
	struct task_struct *task = bpf_get_current_task_btf();
	/* The user registers: at the interrupt when it hit user mode, at
	 * kernel entry otherwise; either way at the top of the task's kernel
	 * stack. */
	struct pt_regs *regs = (struct pt_regs *)bpf_task_pt_regs(task);
	__u32 max = STACK_COPY_MAX;
	__u32 tid = (__u32)bpf_get_current_pid_tgid();
	__u64 sp, end = 0, size, *known;
	long err;

	copy->regs[UNWIND_REG_RAX] = regs->ax;
	copy->regs[UNWIND_REG_RDX] = regs->dx;
	copy->regs[UNWIND_REG_RCX] = regs->cx;
	copy->regs[UNWIND_REG_RBX] = regs->bx;
	copy->regs[UNWIND_REG_RSI] = regs->si;
	copy->regs[UNWIND_REG_RDI] = regs->di;
	copy->regs[UNWIND_REG_RBP] = regs->bp;
	copy->regs[UNWIND_REG_RSP] = regs->sp;
	copy->regs[UNWIND_REG_R8] = regs->r8;
	copy->regs[UNWIND_REG_R8 + 1] = regs->r9;
	copy->regs[UNWIND_REG_R8 + 2] = regs->r10;
	copy->regs[UNWIND_REG_R8 + 3] = regs->r11;
	copy->regs[UNWIND_REG_R8 + 4] = regs->r12;
	copy->regs[UNWIND_REG_R8 + 5] = regs->r13;
	copy->regs[UNWIND_REG_R8 + 6] = regs->r14;
	copy->regs[UNWIND_REG_R15] = regs->r15;
	copy->regs[UNWIND_REG_RIP] = regs->ip;
	sp = regs->sp;
	copy->size = 0;
	copy->error = 0;
	copy->stack_end = 0;

	/* A read that crosses the end of the stack mapping fails whole, so
	 * stop at the end of sp's mapping.  The lookup needs the mmap lock;
	 * when another thread holds it, take the end this thread's last
	 * lookup found. */
	size = max;
	known = bpf_map_lookup_elem(&stack_ends, &tid);
	if (!bpf_find_vma(task, sp, unwind__vma_end, &end, 0) && end > sp) {
		if (!known || *known != end)
			bpf_map_update_elem(&stack_ends, &tid, &end, BPF_ANY);
	} else {
		end = known && *known > sp ? *known : 0;
	}
	if (end) {
		copy->stack_end = end;
		if (end - sp < size)
			size = end - sp;
	}
	if (size > max)
		size = max;
	err = bpf_probe_read_user(copy->data, size, (const void *)sp);
	if (err)
		err = copy_by_page(copy, sp, size, max);
	if (err) {
		copy->error = err;
		return;
	}
	copy->size = size;
}

#endif /* LLMPROF_UNWIND_BPF_H */
