/* SPDX-License-Identifier: GPL-2.0 */
/* Types shared by the BPF user-stack copy and the userspace unwinder. */
#ifndef LLMPROF_BPF_UNWIND_H
#define LLMPROF_BPF_UNWIND_H

/* x86-64 DWARF register numbers, as .eh_frame names them. */
enum unwind_register {
	UNWIND_REG_RAX = 0,
	UNWIND_REG_RDX,
	UNWIND_REG_RCX,
	UNWIND_REG_RBX,
	UNWIND_REG_RSI,
	UNWIND_REG_RDI,
	UNWIND_REG_RBP,
	UNWIND_REG_RSP,
	UNWIND_REG_R8,
	UNWIND_REG_R15 = 15,
	UNWIND_REG_RIP, /* the return address column */
	UNWIND_NR_REGS,
};

/* Largest user stack copy a sample can carry (perf allows 65528 too). */
#define MAX_STACK_COPY 65528
#define DEFAULT_STACK_COPY 16384
/* Slack after the copy so a page-sized read at any offset up to the copy
 * size stays inside the record, as the verifier wants to see. */
#define STACK_COPY_PAD 4096

/*
 * Follows struct sample_event in the ring-buffer record when the stack is
 * copied (--unwind dwarf or auto): the user registers at the sample and the
 * top of the user stack from regs[UNWIND_REG_RSP] on.  The record always
 * has room for the configured copy size; size says how much was read.
 */
struct user_stack_copy {
	__u64 regs[UNWIND_NR_REGS];
	__u32 size;	 /* bytes of data[] read, from sp up */
	__s32 error;	 /* 0, or the negative errno of a failed read */
	__u64 stack_end; /* end of the stack mapping, 0 when unknown */
	__u8 data[];
};

#endif /* LLMPROF_BPF_UNWIND_H */
