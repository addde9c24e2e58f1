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

/*
 * Unwinding in BPF (--unwind ehframe): userspace compiles each mapped
 * file's .eh_frame into rows sorted by address, one per address range with
 * the same rule; the BPF program finds the row of each pc and steps to the
 * caller.  The return address is always at CFA - 8 (x86-64); a range whose
 * rule is anything else has UNWIND_CFA_NONE.
 */
enum unwind_cfa_rule {
	UNWIND_CFA_NONE = 0,  /* no rule: step by the frame pointer */
	UNWIND_CFA_RSP,	      /* CFA = rsp + cfa_offset */
	UNWIND_CFA_RBP,	      /* CFA = rbp + cfa_offset */
	UNWIND_CFA_PLT,	      /* CFA = rsp + cfa_offset, + 8 when (pc & 15) >= rbp_offset */
	UNWIND_CFA_SIGNAL,    /* a signal trampoline: the registers are in the ucontext at rsp */
	UNWIND_CFA_OUTERMOST, /* the return address is undefined: the stack ends here */
};

enum unwind_rbp_rule {
	UNWIND_RBP_SAME = 0, /* rbp is the callee's */
	UNWIND_RBP_AT_CFA,   /* saved at CFA + 8 * rbp_offset */
};

/* 8 bytes, so that an mmap()able array holds rows back to back. */
struct unwind_row {
	__u32 pc;	  /* ELF virtual address where the rule starts */
	__s16 cfa_offset; /* in 8-byte words where rules has UNWIND_ROW_WORDS */
	__u8 rules;	  /* enum unwind_cfa_rule | enum unwind_rbp_rule << 4 */
	__s8 rbp_offset;  /* in 8-byte words; for UNWIND_CFA_PLT, the pc threshold */
};

#define UNWIND_ROW_WORDS 0x80 /* a large frame's cfa_offset, in words */
#define UNWIND_ROW_CFA(row) ((row)->rules & 7)
#define UNWIND_ROW_RBP(row) (((row)->rules >> 4) & 3)
#define UNWIND_ROW_CFA_OFFSET(row)                                                                 \
	((row)->rules & UNWIND_ROW_WORDS ? (__s64)(row)->cfa_offset * 8 : (__s64)(row)->cfa_offset)

/* One executable mapping of a file whose rows are loaded: pc in
 * [start, end) has ELF address pc - bias, looked up in rows
 * [first_row, first_row + nr_rows) of chunk chunk of the unwind_rows map. */
struct unwind_mapping {
	__u64 start;
	__u64 end;
	__u64 bias;
	__u32 first_row;
	__u32 nr_rows : 24;
	__u32 chunk : 8;
};

#define UNWIND_MAX_MAPPINGS 256
/* The most rows the chunks hold in all (8 bytes a row): 32 MiB. */
#define UNWIND_DEFAULT_ROWS (1u << 22)
/* Chunks of the rows map, created as files need room: the first holds
 * UNWIND_FIRST_CHUNK_ROWS (a small program's files: 31,000 rows), each next
 * one twice as many, and a file with more rows gets a chunk of its own. */
#define UNWIND_MAX_CHUNKS 32
#define UNWIND_FIRST_CHUNK_ROWS (1u << 16)

/* A process's mappings with rows, sorted by start. */
struct unwind_process {
	__u32 nr;
	__u32 pad;
	struct unwind_mapping mappings[UNWIND_MAX_MAPPINGS];
};

/* Frames a sample carries with --unwind ehframe: a power of two. */
#define UNWIND_MAX_FRAMES 512

enum unwind_walk_end {
	UNWIND_END_OUTERMOST = 1, /* the rules say the stack ends: it is whole */
	UNWIND_END_ZERO,	  /* a zero return address or frame pointer */
	UNWIND_END_READ,	  /* a stack word could not be read */
	UNWIND_END_NOT_UP,	  /* the caller's frame would not lie above: a bad guess */
	UNWIND_END_DEPTH,	  /* UNWIND_MAX_FRAMES reached: cut */
	UNWIND_END_DISTURBED,	  /* another walk shared the scratch: no frames */
};

#define UNWIND_FRAMES_MAGIC 0x756e7764 /* "unwd" */

/* Follows struct sample_event with --unwind ehframe: the user stack as the
 * BPF unwinder walked it, leaf first; every address but the leaf is a
 * return address (after a signal frame, the interrupted pc + 1). */
struct unwind_frames {
	__u32 magic;
	__u32 nr;
	__u32 end;	/* enum unwind_walk_end */
	__u32 by_rules; /* frames stepped by a row (the rest by frame pointer) */
	__u64 frames[UNWIND_MAX_FRAMES];
};

#endif /* LLMPROF_BPF_UNWIND_H */
