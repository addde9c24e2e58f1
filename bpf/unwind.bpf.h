/* SPDX-License-Identifier: GPL-2.0 */
/*
 * BPF side of DWARF unwinding: copies the sampled thread's user registers
 * and the top of its user stack into the sample record, for userspace to
 * unwind with each binary's CFI (as perf --call-graph dwarf does); or, with
 * --unwind ehframe, walks the user stack here by the rows userspace
 * compiled from each binary's .eh_frame, and records return addresses only.
 */
#ifndef LLMPROF_UNWIND_BPF_H
#define LLMPROF_UNWIND_BPF_H

#include "unwind.h"
#include "uretprobe.bpf.h"

/* Bytes of user stack copied per sample; 0 turns copying off (--unwind fp).
 * Constant once loaded, so record sizes below are known to the verifier. */
const volatile __u32 stack_copy_bytes = 0;

/* Walk the user stack by unwind rows (--unwind ehframe): records carry a
 * struct unwind_frames after the event.  With stack_copy_bytes too
 * (--unwind compare), the stack copy follows it, for userspace to check the
 * walk against. */
const volatile bool unwind_in_bpf = false;

/* The copy size, clamped: the verifier then knows every bound below. */
#define STACK_COPY_MAX (stack_copy_bytes <= MAX_STACK_COPY ? stack_copy_bytes : MAX_STACK_COPY)
/* Where the copy starts after struct sample_event. */
#define STACK_COPY_OFFSET (unwind_in_bpf ? sizeof(struct unwind_frames) : 0)
/* Extra bytes a sample record carries after struct sample_event. */
#define STACK_COPY_RECORD_BYTES                                                                    \
	(STACK_COPY_OFFSET +                                                                       \
	 (stack_copy_bytes ? sizeof(struct user_stack_copy) + STACK_COPY_MAX + STACK_COPY_PAD      \
			   : 0))

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

/* Fills copy (STACK_COPY_RECORD_BYTES long) for the current task, the
 * capture in slot. */
static __always_inline void unwind__copy_user_stack(struct user_stack_copy *copy, __u32 slot)
{
	struct task_struct *task = bpf_get_current_task_btf();
	/* The user registers: at the interrupt when it hit user mode, at
	 * kernel entry otherwise; either way at the top of the task's kernel
	 * stack. */
	struct pt_regs *regs = (struct pt_regs *)bpf_task_pt_regs(task);
	__u32 max = STACK_COPY_MAX;
	__u32 tid = (__u32)bpf_get_current_pid_tgid();
	__u64 sp, end = 0, size, *known;
	struct uretprobe_pending *p;
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
	/* Return addresses that pending uretprobes took: the originals, in
	 * place, so the copy reads as the stack would without the probes. */
	p = uretprobe__collect(slot);
	if (!p || !p->nr)
		return;
	for (int i = 0; i < URETPROBE_MAX_PENDING; i++) {
		__u64 off = p->slot[i] - sp, *word;

		if (i >= p->nr)
			break;
		if (p->slot[i] < sp || off + 8 > size || off > STACK_COPY_MAX - 8)
			continue;
		word = (__u64 *)(copy->data + off);
		if (*word == p->trampoline)
			*word = p->original[i];
	}
}

/* The rows, in chunks that userspace creates as files need room (a
 * process loads libraries for as long as it runs): each chunk an array of
 * files' rows back to back, written through mmap(); its size is its own
 * (BPF_F_INNER_MAP). */
struct unwind_row_chunk {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(map_flags, BPF_F_MMAPABLE | BPF_F_INNER_MAP);
	__uint(max_entries, 1);
	/* Sizes, not types: an object that never reads a row (a probe
	 * family's) would carry only a declaration of struct unwind_row. */
	__uint(key_size, sizeof(__u32));
	__uint(value_size, sizeof(struct unwind_row));
};

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY_OF_MAPS);
	__uint(max_entries, UNWIND_MAX_CHUNKS);
	__type(key, __u32);
	__array(values, struct unwind_row_chunk);
} unwind_rows SEC(".maps");

/* Each process's executable mappings that have rows. */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__uint(max_entries, 4096);
	__type(key, __u32);
	__type(value, struct unwind_process);
} unwind_processes SEC(".maps");

/* The walk in progress: bpf_loop()'s callback finds it here. */
struct unwind_walk {
	__u64 pc, sp, bp;
	__u64 owner; /* when the walk began: another walk in the slot changes it */
	__u32 pid;
	__u32 exact; /* pc is no return address: the leaf, or past a signal frame */
	struct unwind_frames out;
};

/* One walk a capture slot (nest.bpf.h). */
struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, CAPTURE_NEST);
	__type(key, __u32);
	__type(value, struct unwind_walk);
} unwind_scratch SEC(".maps");

/* Offsets in the ucontext_t that a signal trampoline's rsp points at
 * (uc_mcontext.gregs[REG_RBP], [REG_RSP], [REG_RIP]). */
#define UCONTEXT_RBP 120
#define UCONTEXT_RSP 160
#define UCONTEXT_RIP 168

/* The row for pc in proc's mappings; false where there is none. */
static __always_inline bool unwind__find_row(const struct unwind_process *proc, __u64 pc,
					     struct unwind_row *out)
{
	const struct unwind_mapping *m = NULL;
	const struct unwind_row *row;
	void *chunk;
	__u32 lo = 0, hi = proc->nr, idx;
	__u64 vaddr;

	if (hi > UNWIND_MAX_MAPPINGS)
		hi = UNWIND_MAX_MAPPINGS;
	for (int i = 0; i < 9 && lo < hi; i++) {
		__u32 mid = (lo + hi) / 2;
		const struct unwind_mapping *try = &proc->mappings[mid & (UNWIND_MAX_MAPPINGS - 1)];

		if (pc < try->start) {
			hi = mid;
		} else if (pc >= try->end) {
			lo = mid + 1;
		} else {
			m = try;
			break;
		}
	}
	if (!m || !m->nr_rows)
		return false;
	idx = m->chunk;
	chunk = bpf_map_lookup_elem(&unwind_rows, &idx);
	if (!chunk)
		return false;
	vaddr = pc - m->bias;
	if (vaddr > 0xffffffffULL)
		return false;
	/* The last row whose pc <= vaddr. */
	lo = m->first_row;
	hi = m->first_row + m->nr_rows;
	for (int i = 0; i < 24 && hi - lo > 1; i++) {
		__u32 mid = lo + (hi - lo) / 2;

		row = bpf_map_lookup_elem(chunk, &mid);
		if (!row)
			return false;
		if (row->pc <= vaddr)
			lo = mid;
		else
			hi = mid;
	}
	idx = lo;
	row = bpf_map_lookup_elem(chunk, &idx);
	if (!row || row->pc > vaddr)
		return false;
	*out = *row;
	return true;
}

/* One frame: records st->pc, then steps to the caller.  0 to go on, 1 to
 * stop (bpf_loop).  ctx: the capture's slot. */
static long unwind__step(__u64 index, void *ctx)
{
	__u32 slot = *(__u32 *)ctx, nr;
	struct unwind_walk *st = bpf_map_lookup_elem(&unwind_scratch, &slot);
	const struct unwind_process *proc;
	struct unwind_row row = {};
	__u64 pc, cfa, ra, bp;
	bool by_rules = false, frame_pointer = false;

	if (!st)
		return 1;
	nr = st->out.nr;
	if (nr >= UNWIND_MAX_FRAMES) {
		st->out.end = UNWIND_END_DEPTH;
		return 1;
	}
	pc = st->pc;
	/* The symbolizer looks up every frame but the leaf at address - 1. */
	st->out.frames[nr & (UNWIND_MAX_FRAMES - 1)] = nr && st->exact ? pc + 1 : pc;
	st->out.nr = nr + 1;

	proc = bpf_map_lookup_elem(&unwind_processes, &st->pid);
	/* A return address may be a function's end (a call that does not
	 * return): its call lies at pc - 1. */
	if (proc)
		by_rules = unwind__find_row(proc, st->exact ? pc : pc - 1, &row);
	bp = st->bp;
	switch (by_rules ? UNWIND_ROW_CFA(&row) : UNWIND_CFA_NONE) {
	case UNWIND_CFA_OUTERMOST:
		st->out.end = UNWIND_END_OUTERMOST;
		return 1;
	case UNWIND_CFA_SIGNAL:
		if (bpf_probe_read_user(&bp, sizeof(bp), (const void *)(st->sp + UCONTEXT_RBP)) ||
		    bpf_probe_read_user(&cfa, sizeof(cfa), (const void *)(st->sp + UCONTEXT_RSP)) ||
		    bpf_probe_read_user(&ra, sizeof(ra), (const void *)(st->sp + UCONTEXT_RIP))) {
			st->out.end = UNWIND_END_READ;
			return 1;
		}
		st->out.by_rules++;
		st->sp = cfa;
		st->bp = bp;
		st->pc = ra;
		st->exact = 1;
		return 0;
	case UNWIND_CFA_RSP:
		cfa = st->sp + UNWIND_ROW_CFA_OFFSET(&row);
		break;
	case UNWIND_CFA_RBP:
		cfa = st->bp + UNWIND_ROW_CFA_OFFSET(&row);
		break;
	case UNWIND_CFA_PLT:
		cfa = st->sp + row.cfa_offset + ((pc & 15) >= (__u64)row.rbp_offset ? 8 : 0);
		break;
	default:
		/* No rule: the frame pointer, as bpf_get_stack() would. */
		if (!st->bp) {
			st->out.end = UNWIND_END_ZERO;
			return 1;
		}
		cfa = st->bp + 16;
		frame_pointer = true;
		break;
	}
	if (bpf_probe_read_user(&ra, sizeof(ra), (const void *)(cfa - 8))) {
		st->out.end = UNWIND_END_READ;
		return 1;
	}
	ra = uretprobe__original(slot, cfa - 8, ra);
	if (frame_pointer) {
		if (bpf_probe_read_user(&bp, sizeof(bp), (const void *)(cfa - 16)))
			bp = 0;
	} else if (UNWIND_ROW_RBP(&row) == UNWIND_RBP_AT_CFA) {
		if (bpf_probe_read_user(&bp, sizeof(bp),
					(const void *)(cfa + (__s64)row.rbp_offset * 8)))
			bp = 0;
	}
	/* Each caller's frame lies above its callee's. */
	if (cfa <= st->sp) {
		st->out.end = UNWIND_END_NOT_UP;
		return 1;
	}
	if (!ra) {
		st->out.end = UNWIND_END_ZERO;
		return 1;
	}
	if (!frame_pointer)
		st->out.by_rules++;
	st->sp = cfa;
	st->bp = bp;
	st->pc = ra;
	st->exact = 0;
	return 0;
}

/* Walks the current task's user stack into out (--unwind ehframe), with
 * the scratch of the capture in slot. */
static __always_inline void unwind__walk_user_stack(struct unwind_frames *out, __u32 slot)
{
	struct task_struct *task = bpf_get_current_task_btf();
	struct pt_regs *regs = (struct pt_regs *)bpf_task_pt_regs(task);
	__u64 owner = bpf_ktime_get_ns();
	struct unwind_walk *st;
	__u32 nr;

	out->magic = UNWIND_FRAMES_MAGIC;
	out->nr = 0;
	out->end = UNWIND_END_READ;
	out->by_rules = 0;
	st = bpf_map_lookup_elem(&unwind_scratch, &slot);
	if (!st)
		return;
	st->owner = owner;
	st->pc = regs->ip;
	st->sp = regs->sp;
	st->bp = regs->bp;
	st->pid = bpf_get_current_pid_tgid() >> 32;
	st->exact = 1;
	st->out.nr = 0;
	st->out.end = 0;
	st->out.by_rules = 0;
	if (!st->pc)
		return;
	uretprobe__collect(slot);
	bpf_loop(UNWIND_MAX_FRAMES + 1, unwind__step, &slot, 0);
	out->nr = st->out.nr;
	out->end = st->out.end;
	out->by_rules = st->out.by_rules;
	/* Masks the verifier can follow: a full stack, or fewer frames. */
	nr = st->out.nr;
	if (nr >= UNWIND_MAX_FRAMES)
		bpf_probe_read_kernel(out->frames, sizeof(out->frames), st->out.frames);
	else
		bpf_probe_read_kernel(out->frames, (nr & (UNWIND_MAX_FRAMES - 1)) * sizeof(__u64),
				      st->out.frames);
	/* Another walk ran in this slot meanwhile: what st holds is not ours. */
	if (st->owner != owner) {
		out->nr = 0;
		out->end = UNWIND_END_DISTURBED;
	}
}

#endif /* LLMPROF_UNWIND_BPF_H */
