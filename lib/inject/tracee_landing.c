// SPDX-License-Identifier: GPL-2.0
/*
 * The landing frame: what lets the borrowed thread put itself back if
 * llmprof dies (SIGKILL, a crash) while it holds the thread.  The kernel
 * then detaches the thread wherever it is, and it runs on from its current
 * registers, which during an injection point into a call of ours.  Every
 * such call therefore returns into an rt_sigreturn whose frame, right above
 * the return address, is the thread's own state as it was when stopped:
 * general registers (an interrupted system call rewound so that it runs
 * again), the FPU/XSAVE area and the signal mask.  With llmprof alive, the
 * return is caught at that rt_sigreturn's syscall-entry stop and the
 * thread is put back by ptrace as before; the frame is never used.
 */
#include <cpuid.h>
#include <elf.h>
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/user.h>

#include "inject/inject_internal.h"

#if defined(__x86_64__)

#define FP_XSTATE_MAGIC1 0x46505853U
#define FP_XSTATE_MAGIC2 0x46505845U
#define FXSAVE_SIZE 512
#define XSAVE_HEADER_END 576
#define SW_RESERVED_OFFSET 464

/* The kernel's struct sigcontext (x86-64), as rt_sigreturn reads it. */
struct landing_sigcontext {
	uint64_t r8, r9, r10, r11, r12, r13, r14, r15;
	uint64_t rdi, rsi, rbp, rbx, rdx, rax, rcx, rsp, rip, eflags;
	uint16_t cs, gs, fs, ss;
	uint64_t err, trapno, oldmask, cr2;
	uint64_t fpstate;
	uint64_t reserved[8];
};

/* The kernel's struct rt_sigframe: the return address, a ucontext, siginfo. */
struct landing_frame {
	uint64_t pretcode;
	uint64_t uc_flags;
	uint64_t uc_link;
	uint64_t ss_sp; /* uc_stack: invalid flags, so sigaltstack stays as it is */
	int32_t ss_flags;
	int32_t ss_pad;
	uint64_t ss_size;
	struct landing_sigcontext mcontext;
	uint64_t sigmask;
	unsigned char siginfo[128];
};

_Static_assert(sizeof(struct landing_sigcontext) == 256, "struct sigcontext layout");
_Static_assert(sizeof(struct landing_frame) == 440, "struct rt_sigframe layout");

/* The XSAVE components present in the saved area end here (standard format). */
static size_t xsave__used_size(const struct tracee *tracee, uint64_t *features)
{
	uint64_t present;
	size_t size = XSAVE_HEADER_END;
	unsigned int i;

	memcpy(&present, tracee->fpu + FXSAVE_SIZE, sizeof(present));
	/* x87 and SSE (with MXCSR) live in the legacy area: always restored. */
	*features = present | 3;
	for (i = 2; i < 63; i++) {
		unsigned int eax, ebx, ecx, edx;

		if (!(present & (1ULL << i)) || !__get_cpuid_count(0xd, i, &eax, &ebx, &ecx, &edx))
			continue;
		if (eax && ebx && ebx + eax > size)
			size = ebx + eax;
	}
	return size < tracee->fpu_size ? size : tracee->fpu_size;
}

size_t landing__size(const struct tracee *tracee)
{
	return sizeof(struct landing_frame) + 64 + tracee->fpu_size + sizeof(uint32_t);
}

/*
 * The registers that resume the thread as if we had never stopped it.  On
 * release (landing false) the kernel's own restart logic still runs after
 * the stop, so only two cases are rewound by hand: a RESTARTBLOCK whose
 * restart_block our calls overwrote, and -EINTR, which calls like
 * epoll_wait return for the interrupt itself.  rt_sigreturn (landing true)
 * turns restarts off and resets restart_block, so there every restartable
 * return is rewound to run the original system call again.
 */
void tracee__resume_regs(struct tracee *tracee, struct user_regs_struct *regs, bool landing)
{
	long nr = (long)regs->orig_rax, ret = (long)regs->rax;
	bool rewind = false;
	unsigned char insn[2];

	if (nr < 0)
		return;
	if (ret == -KERNEL_ERESTART_RESTARTBLOCK) {
		rewind = landing || tracee->restart_block_clobbered;
	} else if (ret == -KERNEL_ERESTARTSYS || ret == -KERNEL_ERESTARTNOINTR ||
		   ret == -KERNEL_ERESTARTNOHAND) {
		rewind = landing;
	} else if (ret == -EINTR && !tracee->held_count) {
		struct proc_status thread, process;

		/* Unless a handler is about to run, for a signal that came
		 * meanwhile: then -EINTR is the right answer. */
		if (!target_status__read(tracee->pid, tracee->tid, &thread) &&
		    !target_status__read(tracee->pid, 0, &process) &&
		    !((thread.pending | process.shared_pending) & ~tracee->saved_mask &
		      process.caught))
			rewind = true;
	}
	if (rewind && tracee__read(tracee, regs->rip - 2, insn, 2) == 0 && insn[0] == 0x0f &&
	    insn[1] == 0x05) {
		regs->rip -= 2;
		regs->rax = regs->orig_rax; /* no error code: the kernel leaves it alone */
	}
}

/* Writes the landing frame at frame (the stack pointer of the calls). */
int tracee__write_landing(struct tracee *tracee, unsigned long frame)
{
	struct user_regs_struct regs = tracee->saved;
	struct landing_sigcontext *sc;
	struct landing_frame *f;
	size_t fp_offset, used, size;
	uint32_t magic2 = FP_XSTATE_MAGIC2;
	unsigned char *buf;
	int err;

	if (!tracee->fpu)
		return -EINVAL;
	buf = calloc(1, landing__size(tracee));
	if (!buf)
		return -ENOMEM;
	tracee__resume_regs(tracee, &regs, true);
	f = (struct landing_frame *)buf;
	f->pretcode = tracee->restore_rt;
	f->ss_flags = 3; /* neither SS_ONSTACK nor SS_DISABLE: EINVAL, ignored */
	f->sigmask = tracee->saved_mask;
	sc = &f->mcontext;
	sc->r8 = regs.r8;
	sc->r9 = regs.r9;
	sc->r10 = regs.r10;
	sc->r11 = regs.r11;
	sc->r12 = regs.r12;
	sc->r13 = regs.r13;
	sc->r14 = regs.r14;
	sc->r15 = regs.r15;
	sc->rdi = regs.rdi;
	sc->rsi = regs.rsi;
	sc->rbp = regs.rbp;
	sc->rbx = regs.rbx;
	sc->rdx = regs.rdx;
	sc->rax = regs.rax;
	sc->rcx = regs.rcx;
	sc->rsp = regs.rsp;
	sc->rip = regs.rip;
	sc->eflags = regs.eflags;
	sc->cs = (uint16_t)regs.cs;
	sc->ss = (uint16_t)regs.ss;

	/* XRSTOR wants 64-byte alignment. */
	fp_offset = ((frame + sizeof(*f) + 63) & ~63UL) - frame;
	sc->fpstate = frame + fp_offset;
	if (tracee->fpu_type == NT_X86_XSTATE) {
		uint64_t features;
		uint32_t word;

		used = xsave__used_size(tracee, &features);
		memcpy(buf + fp_offset, tracee->fpu, used);
		/* ptrace puts XCR0 in the software-reserved bytes; a signal
		 * frame has the magic and sizes there instead. */
		memset(buf + fp_offset + SW_RESERVED_OFFSET, 0, FXSAVE_SIZE - SW_RESERVED_OFFSET);
		word = FP_XSTATE_MAGIC1;
		memcpy(buf + fp_offset + SW_RESERVED_OFFSET, &word, 4);
		word = (uint32_t)(used + sizeof(magic2));
		memcpy(buf + fp_offset + SW_RESERVED_OFFSET + 4, &word, 4);
		memcpy(buf + fp_offset + SW_RESERVED_OFFSET + 8, &features, 8);
		word = (uint32_t)used;
		memcpy(buf + fp_offset + SW_RESERVED_OFFSET + 16, &word, 4);
		memcpy(buf + fp_offset + used, &magic2, sizeof(magic2));
		size = fp_offset + used + sizeof(magic2);
	} else {
		/* No XSAVE: the legacy area, with no magic, is what the kernel
		 * expects. */
		memcpy(buf + fp_offset, tracee->fpu, FXSAVE_SIZE);
		memset(buf + fp_offset + SW_RESERVED_OFFSET, 0, FXSAVE_SIZE - SW_RESERVED_OFFSET);
		size = fp_offset + FXSAVE_SIZE;
	}
	err = tracee__write(tracee, frame, buf, size);
	free(buf);
	return err;
}

#endif /* __x86_64__ */
