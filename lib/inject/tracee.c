// SPDX-License-Identifier: GPL-2.0
/*
 * ptrace on the one thread the injector borrows: seize and stop it, call a
 * function in it (or make a system call through libc's syscall()) and catch
 * the return at a syscall stop, hold back signals that arrive meanwhile,
 * and put back everything the calls disturbed (registers, FPU/xstate,
 * signal mask, errno, the interrupted system call) on release.  Each call
 * returns into a landing (tracee_landing.c), so that the thread also puts
 * itself back if we die holding it.
 */
#include <elf.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ptrace.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <sys/user.h>
#include <sys/wait.h>
#include <unistd.h>

#include "base/clock.h"
#include "inject/inject.h"
#include "inject/inject_internal.h"

#if defined(__x86_64__)

int tracee__read(struct tracee *tracee, unsigned long address, void *buf, size_t size)
{
	ssize_t n = pread(tracee->mem_fd, buf, size, (off_t)address);

	if (n < 0)
		return -errno;
	return (size_t)n == size ? 0 : -EIO;
}

int tracee__write(struct tracee *tracee, unsigned long address, const void *buf, size_t size)
{
	ssize_t n = pwrite(tracee->mem_fd, buf, size, (off_t)address);

	if (n < 0)
		return -errno;
	return (size_t)n == size ? 0 : -EIO;
}

int ptrace__error(void)
{
	return errno == ESRCH ? -ESRCH : -errno;
}

/*
 * Waits for the next stop of the thread, polling so that the deadline
 * holds (a blocking waitpid() cannot time out).
 */
static int tracee__wait(struct tracee *tracee, enum stop_kind *kind, int *signo)
{
	unsigned int delay_us = 2;
	int status;
	pid_t got;

	for (;;) {
		got = waitpid(tracee->tid, &status, __WALL | WNOHANG);
		if (got < 0 && errno == EINTR)
			continue;
		if (got < 0) {
			tracee->stopped = false;
			return -ESRCH;
		}
		if (got == tracee->tid) {
			if (WIFEXITED(status) || WIFSIGNALED(status)) {
				tracee->stopped = false;
				tracee->seized = false;
				return -ESRCH;
			}
			if (!WIFSTOPPED(status))
				continue;
			tracee->stopped = true;
			tracee->signal_stop = false;
			tracee->syscall_stop = false;
			*signo = WSTOPSIG(status);
			if (*signo == (SIGTRAP | 0x80) && (status >> 16) == 0) {
				*kind = STOP_SYSCALL;
				tracee->syscall_stop = true;
			} else if ((status >> 16) == PTRACE_EVENT_STOP) {
				*kind = *signo == SIGTRAP ? STOP_INTERRUPT : STOP_GROUP;
			} else if ((status >> 16) == 0) {
				*kind = STOP_SIGNAL;
				tracee->signal_stop = true;
			} else {
				*kind = STOP_INTERRUPT; /* no other PTRACE_O_* options are set */
			}
			return 0;
		}
		if (clock__monotonic_ns() >= tracee->deadline_ns)
			return -ETIMEDOUT;
		inject__sleep_us(delay_us);
		if (delay_us < 500)
			delay_us *= 2;
	}
}

/* A signal that arrived while we held the thread: re-delivered on detach. */
static void tracee__hold_signal(struct tracee *tracee, const siginfo_t *info)
{
	if (tracee->held_count < MAX_HELD_SIGNALS)
		tracee->held[tracee->held_count++] = *info;
	else
		tracee->held_lost++;
}

/*
 * A system call made by our calls that returned -ERESTART_RESTARTBLOCK has
 * overwritten the thread's restart_block, so the original one cannot be
 * resumed through restart_syscall() any more.
 */
static void tracee__note_restart(struct tracee *tracee)
{
	struct user_regs_struct regs;

	if (ptrace(PTRACE_GETREGS, tracee->tid, 0, &regs) == 0 && (long)regs.orig_rax >= 0 &&
	    (long)regs.rax == -KERNEL_ERESTART_RESTARTBLOCK)
		tracee->restart_block_clobbered = true;
}

/* PTRACE_SYSCALL while a call runs (its return is a syscall stop). */
static int tracee__resume(struct tracee *tracee, int request)
{
	if (ptrace(request, tracee->tid, 0, 0) < 0)
		return ptrace__error();
	tracee->stopped = false;
	tracee->signal_stop = false;
	tracee->syscall_stop = false;
	return 0;
}

/*
 * The first change to the thread comes after its registers point into a
 * call whose return lands: from then on, whatever we have changed, the
 * landing puts back.
 */
static int tracee__prepare(struct tracee *tracee)
{
	uint64_t mask;

	if (!tracee->fpu_dirty) {
		int err = tracee__clean_fpu(tracee);

		if (err)
			return err;
	}
	if (!tracee->mask_dirty) {
		/* Asynchronous signals wait in the kernel's queue until we are
		 * done; faults stay deliverable, so that a fault in our calls
		 * is seen, never a handler reset (force_sig() on a blocked
		 * signal does that). */
		mask = tracee->saved_mask | ~SYNCHRONOUS_SIGNALS;
		tracee->mask_dirty = true;
		if (ptrace(PTRACE_SETSIGMASK, tracee->tid, sizeof(uint64_t), &mask) < 0)
			return ptrace__error();
	}
	return 0;
}

/*
 * Calls fn(args) in the thread (nr < 0), or makes system call nr(args)
 * through libc's syscall(), on the current landing frame, and waits for
 * the return: a function's at the stub's rt_sigreturn (its value then in
 * rdi), a system call's at its own syscall-exit stop.  Signals that arrive
 * meanwhile are held back.
 */
static int tracee__call(struct tracee *tracee, struct inject_result *result, unsigned long fn,
			long nr, const unsigned long *args, size_t nargs, unsigned long *ret)
{
	struct user_regs_struct regs = tracee->saved;
	unsigned long argv[6] = {}, sp = tracee->frame, return_to;
	enum stop_kind kind;
	siginfo_t info;
	int signo, err;

	if (nargs > (nr >= 0 ? 5 : 6))
		return -EINVAL;
	return_to = tracee->stub ? tracee->stub : tracee->restore_rt;
	if (!sp || !return_to || (nr < 0 && !tracee->stub))
		return -EINVAL;
	if (nargs)
		memcpy(argv, args, nargs * sizeof(*args));
	if (nr >= 0) {
		/* syscall(nr, a0..a4); its sixth argument, 8(%rsp), is the
		 * frame's uc_flags, 0. */
		memmove(argv + 1, argv, 5 * sizeof(*argv));
		argv[0] = (unsigned long)nr;
		fn = tracee->syscall_fn;
	}
	regs.rip = fn;
	regs.rdi = argv[0];
	regs.rsi = argv[1];
	regs.rdx = argv[2];
	regs.rcx = argv[3];
	regs.r8 = argv[4];
	regs.r9 = argv[5];
	regs.rax = 0;	    /* no vector registers for variadic callees */
	regs.orig_rax = -1; /* not in a system call: no restart fix-ups on resume */
	regs.rsp = sp;	    /* sp % 16 == 8, as right after a call instruction */
	regs.eflags &= ~X86_EFLAGS_DF;
	err = tracee__write(tracee, sp, &return_to, sizeof(return_to));
	if (err)
		return err;
	if (ptrace(PTRACE_SETREGS, tracee->tid, 0, &regs) < 0)
		return ptrace__error();
	tracee->regs_dirty = true;
	err = tracee__prepare(tracee);
	if (err)
		return err;
	err = tracee__resume(tracee, PTRACE_SYSCALL);
	if (err)
		return err;
	for (;;) {
		err = tracee__wait(tracee, &kind, &signo);
		if (err)
			return err;
		if (kind == STOP_SYSCALL) {
			if (ptrace(PTRACE_GETREGS, tracee->tid, 0, &regs) < 0)
				return ptrace__error();
			if (nr >= 0 && (long)regs.orig_rax == nr && (long)regs.rax != -ENOSYS &&
			    regs.rip - tracee->syscall_fn < 64) {
				*ret = regs.rax;
				return 0;
			}
			if (tracee->stub && (long)regs.orig_rax == SYSCALL_RT_SIGRETURN &&
			    regs.rip == tracee->stub + STUB_TRAP_OFFSET) {
				/* A system call that really returned -ENOSYS. */
				*ret = nr >= 0 ? (unsigned long)-ENOSYS : regs.rdi;
				return 0;
			}
			if ((long)regs.orig_rax >= 0 &&
			    (long)regs.rax == -KERNEL_ERESTART_RESTARTBLOCK)
				tracee->restart_block_clobbered = true;
			err = tracee__resume(tracee, PTRACE_SYSCALL);
			if (err)
				return err;
			continue;
		}
		if (kind == STOP_SIGNAL) {
			if (ptrace(PTRACE_GETSIGINFO, tracee->tid, 0, &info) < 0)
				return ptrace__error();
			if (info.si_code > 0 && (SIGNAL_BIT(signo) & SYNCHRONOUS_SIGNALS)) {
				if (ptrace(PTRACE_GETREGS, tracee->tid, 0, &regs) < 0)
					return ptrace__error();
				inject_result__say(result,
						   "signal %d in the injected call at %#llx", signo,
						   regs.rip);
				return -EFAULT;
			}
			tracee__hold_signal(tracee, &info);
		}
		tracee__note_restart(tracee);
		/* Group-stops are resumed too: detaching re-enters the group
		 * stop, so the call can finish first. */
		err = tracee__resume(tracee, PTRACE_SYSCALL);
		if (err)
			return err;
	}
}

/* A call ran past the deadline: stop the thread wherever it is. */
static int tracee__interrupt(struct tracee *tracee)
{
	enum stop_kind kind;
	siginfo_t info;
	int signo, err;

	tracee->abandoned = true;
	tracee->deadline_ns = clock__monotonic_ns() + RECOVERY_MS * 1000000ULL;
	if (ptrace(PTRACE_INTERRUPT, tracee->tid, 0, 0) < 0)
		return ptrace__error();
	err = tracee__wait(tracee, &kind, &signo);
	if (err)
		return err;
	if (kind == STOP_SIGNAL && ptrace(PTRACE_GETSIGINFO, tracee->tid, 0, &info) == 0 &&
	    !(signo == SIGSEGV && info.si_code > 0))
		tracee__hold_signal(tracee, &info);
	tracee__note_restart(tracee);
	return 0;
}

static int tracee__let_finish(struct tracee *tracee, struct inject_result *result);

static int tracee__call_cut_off(struct tracee *tracee, struct inject_result *result,
				unsigned long fn, long nr, const unsigned long *args, size_t nargs,
				unsigned long *ret)
{
	int err;

	err = tracee__call(tracee, result, fn, nr, args, nargs, ret);
	if (err == -ETIMEDOUT && tracee->let_finish) {
		if (tracee__let_finish(tracee, result))
			tracee->stopped = false;
	} else if (err == -ETIMEDOUT) {
		inject_result__say(result,
				   "a call into the target did not return in time; it was cut off");
		if (tracee__interrupt(tracee))
			tracee->stopped = false;
	}
	return err;
}

/* Calls fn on the current landing frame. */
int tracee__call_checked(struct tracee *tracee, struct inject_result *result, unsigned long fn,
			 const unsigned long *args, size_t nargs, unsigned long *ret)
{
	return tracee__call_cut_off(tracee, result, fn, -1, args, nargs, ret);
}

/* Makes system call nr; *ret is its raw result (-errno on failure). */
int tracee__syscall_checked(struct tracee *tracee, struct inject_result *result, long nr,
			    const unsigned long *args, size_t nargs, unsigned long *ret)
{
	return tracee__call_cut_off(tracee, result, 0, nr, args, nargs, ret);
}

/* errno of the target thread after a failed libc call. */
int tracee__remote_errno(struct tracee *tracee)
{
	int value = 0;

	if (!tracee->errno_address ||
	    tracee__read(tracee, tracee->errno_address, &value, sizeof(value)) || value <= 0)
		return -EIO;
	return -value;
}

void tracee__read_string(struct tracee *tracee, unsigned long address, char *buf, size_t size)
{
	size_t i;

	buf[0] = '\0';
	if (!address || tracee__read(tracee, address, buf, size - 1))
		return;
	buf[size - 1] = '\0';
	for (i = 0; buf[i]; i++)
		if (buf[i] == '\n')
			buf[i] = ' ';
}

int tracee__save_fpu(struct tracee *tracee)
{
	struct iovec iov;

	tracee->fpu = malloc(XSTATE_BUFFER_SIZE);
	if (!tracee->fpu)
		return -ENOMEM;
	iov.iov_base = tracee->fpu;
	iov.iov_len = XSTATE_BUFFER_SIZE;
	if (ptrace(PTRACE_GETREGSET, tracee->tid, NT_X86_XSTATE, &iov) == 0) {
		tracee->fpu_type = NT_X86_XSTATE;
	} else {
		iov.iov_len = sizeof(struct user_fpregs_struct);
		if (ptrace(PTRACE_GETREGSET, tracee->tid, NT_PRFPREG, &iov) < 0)
			return ptrace__error();
		tracee->fpu_type = NT_PRFPREG;
	}
	tracee->fpu_size = iov.iov_len;
	return tracee->fpu_size >= sizeof(struct user_fpregs_struct) ? 0 : -EIO;
}

/*
 * The calls start from the ABI's state at a function entry: empty x87
 * stack, default control words, whatever the thread was computing with.
 */
int tracee__clean_fpu(struct tracee *tracee)
{
	struct user_fpregs_struct fx;
	struct iovec iov = {&fx, sizeof(fx)};

	memcpy(&fx, tracee->fpu, sizeof(fx));
	fx.cwd = 0x37f;
	fx.swd = 0;
	fx.ftw = 0;
	fx.mxcsr = 0x1f80;
	tracee->fpu_dirty = true;
	if (ptrace(PTRACE_SETREGSET, tracee->tid, NT_PRFPREG, &iov) < 0)
		return ptrace__error();
	return 0;
}

/* Re-queues a held signal for the thread, keeping its siginfo where allowed. */
static void tracee__requeue(struct tracee *tracee, const siginfo_t *info)
{
	if (info->si_code < 0 && info->si_code != SI_TKILL &&
	    syscall(SYS_rt_tgsigqueueinfo, tracee->pid, tracee->tid, info->si_signo, info) == 0)
		return;
	syscall(SYS_tgkill, tracee->pid, tracee->tid, info->si_signo);
}

/*
 * From a syscall stop, where the kernel's restart logic would not run after
 * us, to a stop inside signal handling where it does: an interrupt stop,
 * or, with a held signal, that signal's delivery-stop (re-sent now, so that
 * it can ride on the detach).  Meanwhile the thread goes on into its
 * landing, which is where it stays should we die on the way.
 */
static int tracee__leave_syscall_stop(struct tracee *tracee)
{
	struct user_regs_struct regs;
	enum stop_kind kind;
	siginfo_t info;
	int signo, err, want = 0;

	if (ptrace(PTRACE_GETREGS, tracee->tid, 0, &regs) < 0)
		return ptrace__error();
	if (tracee->stub && (long)regs.orig_rax == SYSCALL_RT_SIGRETURN &&
	    regs.rip == tracee->stub + STUB_TRAP_OFFSET) {
		/* Skip this rt_sigreturn; come back to it if we die. */
		regs.orig_rax = -1;
		regs.rip = tracee->stub + STUB_SIGRETURN_OFFSET;
		if (ptrace(PTRACE_SETREGS, tracee->tid, 0, &regs) < 0)
			return ptrace__error();
	}
	tracee->deadline_ns = clock__monotonic_ns() + RECOVERY_MS * 1000000ULL;
	if (tracee->held_count) {
		want = tracee->held[0].si_signo;
		if (syscall(SYS_tgkill, tracee->pid, tracee->tid, want) < 0)
			return -errno;
	} else if (ptrace(PTRACE_INTERRUPT, tracee->tid, 0, 0) < 0) {
		return ptrace__error();
	}
	err = tracee__resume(tracee, PTRACE_CONT);
	while (!err) {
		err = tracee__wait(tracee, &kind, &signo);
		if (err)
			break;
		if (kind == STOP_SIGNAL) {
			if (ptrace(PTRACE_GETSIGINFO, tracee->tid, 0, &info) < 0)
				return ptrace__error();
			if (want && signo == want && info.si_code == SI_TKILL &&
			    info.si_pid == getpid())
				return 0;
			tracee__hold_signal(tracee, &info);
		} else if (kind != STOP_SYSCALL && !want) {
			return 0;
		}
		err = tracee__resume(tracee, PTRACE_CONT);
	}
	return err;
}

/*
 * Puts everything back and lets the thread go.  A held signal rides on the
 * detach when we are in a signal-delivery-stop, so it is delivered with its
 * own siginfo at the same point the kernel would have; others are queued.
 * The registers go back last: until then the thread's next step is its
 * landing, which also puts back everything before them.
 */
/*
 * A call that must not be cut off ran past the deadline: stop the thread
 * only to hand back the signals held from it, then let it go where it is.
 * The call returns into the landing frame, which puts the thread's
 * registers, FPU state, mask and errno back, as when llmprof is killed.
 */
static int tracee__let_finish(struct tracee *tracee, struct inject_result *result)
{
	unsigned int i;
	int err;

	inject_result__say(result, "the target's dlopen did not return in time; it was "
				   "left to finish in the target, which stays as it is");
	err = tracee__interrupt(tracee);
	if (err)
		return err;
	for (i = 0; i < tracee->held_count; i++)
		tracee__requeue(tracee, &tracee->held[i]);
	tracee->held_count = 0;
	if (ptrace(PTRACE_DETACH, tracee->tid, 0, 0) < 0)
		return ptrace__error();
	tracee->seized = false;
	tracee->stopped = false;
	return 0;
}

void tracee__release(struct tracee *tracee, struct inject_result *result)
{
	unsigned long signal = 0;
	unsigned int i, first = 0;

	if (!tracee->seized)
		return;
	if (tracee->stopped && tracee->syscall_stop && tracee->regs_dirty &&
	    tracee__leave_syscall_stop(tracee))
		inject_result__say(result, "the thread did not stop after the calls");
	if (!tracee->stopped) {
		/* It never stopped, or it is gone: the kernel lets it go when
		 * this thread (the tracer) exits. */
		return;
	}
	if (tracee->errno_saved)
		tracee__write(tracee, tracee->errno_address, &tracee->saved_errno, sizeof(int));
	if (tracee->fpu_dirty) {
		struct iovec iov = {tracee->fpu, tracee->fpu_size};

		if (ptrace(PTRACE_SETREGSET, tracee->tid, tracee->fpu_type, &iov) < 0)
			inject_result__say(result, "could not restore the FPU state: %s",
					   strerror(errno));
	}
	if (tracee->mask_dirty &&
	    ptrace(PTRACE_SETSIGMASK, tracee->tid, sizeof(uint64_t), &tracee->saved_mask) < 0)
		inject_result__say(result, "could not restore the signal mask: %s",
				   strerror(errno));
	if (tracee->signal_stop && tracee->held_count &&
	    ptrace(PTRACE_SETSIGINFO, tracee->tid, 0, &tracee->held[0]) == 0) {
		signal = tracee->held[0].si_signo;
		first = 1;
	}
	for (i = first; i < tracee->held_count; i++)
		tracee__requeue(tracee, &tracee->held[i]);
	if (tracee->regs_dirty) {
		struct user_regs_struct regs = tracee->saved;

		tracee__resume_regs(tracee, &regs, false);
		if (ptrace(PTRACE_SETREGS, tracee->tid, 0, &regs) < 0)
			inject_result__say(result, "could not restore the registers: %s",
					   strerror(errno));
	}
	if (ptrace(PTRACE_DETACH, tracee->tid, 0, signal) < 0)
		inject_result__say(result, "could not detach: %s", strerror(errno));
	tracee->seized = false;
	tracee->stopped = false;
	if (result) {
		result->signals_held += tracee->held_count;
		if (tracee->held_lost)
			inject_result__say(result,
					   "%u signals arrived during the injection and were lost",
					   tracee->held_lost);
	}
}

/*
 * Seizes a thread and waits for it to stop; 0 when stopped, with its
 * registers saved.  A thread caught delivering a signal is let go with it
 * at once (-EAGAIN: try again): a signal held from the start would be lost
 * if we died before handing it back.
 */
int tracee__seize(struct tracee *tracee, unsigned long long deadline_ns)
{
	enum stop_kind kind;
	int signo, err;

	/* Never PTRACE_O_EXITKILL: the target outlives us. */
	if (ptrace(PTRACE_SEIZE, tracee->tid, 0, PTRACE_O_TRACESYSGOOD) < 0)
		return errno == EPERM ? -EPERM : ptrace__error();
	tracee->seized = true;
	tracee->seized_ns = clock__monotonic_ns();
	if (ptrace(PTRACE_INTERRUPT, tracee->tid, 0, 0) < 0)
		return ptrace__error();
	tracee->deadline_ns = tracee->seized_ns + STOP_WAIT_MS * 1000000ULL;
	if (tracee->deadline_ns > deadline_ns)
		tracee->deadline_ns = deadline_ns;
	err = tracee__wait(tracee, &kind, &signo);
	if (err)
		return err;
	if (kind == STOP_GROUP)
		return -EBUSY;
	if (kind == STOP_SIGNAL) {
		if (ptrace(PTRACE_DETACH, tracee->tid, 0, signo) < 0)
			return ptrace__error();
		tracee->seized = false;
		tracee->stopped = false;
		return -EAGAIN;
	}
	if (kind != STOP_INTERRUPT)
		return -EAGAIN;
	if (ptrace(PTRACE_GETREGS, tracee->tid, 0, &tracee->saved) < 0)
		return ptrace__error();
	return 0;
}

/*
 * Is the stopped thread somewhere dlopen can run from?  1 yes, 0 not now
 * (try another thread or later), or -errno to give up.
 */
int tracee__is_safe(struct tracee *tracee, const struct process_maps *maps,
		    struct inject_result *result)
{
	const struct user_regs_struct *regs = &tracee->saved;
	const struct maps_entry *code, *stack;
	char name[256];

	if (regs->cs != X86_USER64_CS) {
		inject_result__say(result, "thread %d is not running 64-bit code", tracee->tid);
		return -ENOTSUP;
	}
	code = target_maps__find(maps, regs->rip);
	maps_entry__name(code, name, sizeof(name));
	if ((long)regs->orig_rax >= 0) {
		if (syscall__may_hold_locks((long)regs->orig_rax) ||
		    library_name__is_loader(name) ||
		    target_stack__has_cuda_frame(tracee->mem_fd, maps, regs->rsp))
			return 0;
	} else if (code && code->path && library_name__is_unsafe_to_interrupt(name)) {
		return 0;
	}
	/* The first landing frame goes on the thread's own stack, below
	 * the red zone; the calls run on a private stack. */
	tracee->thread_frame = ((regs->rsp - 128 - LANDING_ROOM) & ~15UL) - 8;
	stack = target_maps__find(maps, regs->rsp);
	if (!stack || stack->perms[0] != 'r' || stack->perms[1] != 'w' ||
	    tracee->thread_frame < stack->start)
		return 0;
	return 1;
}

/*
 * Writes the memfd name, the start symbol and the argument at the top of
 * the private mapping; *path is room after them for "/proc/self/fd/N".
 */
int tracee__write_strings(struct tracee *tracee, const struct inject_request *request,
			  unsigned long *name, unsigned long *symbol, unsigned long *argument,
			  unsigned long *path)
{
	const char *memfd_name = request->memfd_name ? request->memfd_name : "llmprof-agent";
	const char *arg = request->argument ? request->argument : "";
	size_t name_len = strlen(memfd_name) + 1, symbol_len = strlen(request->start_symbol) + 1;
	size_t arg_len = strlen(arg) + 1;
	char *buf;
	int err;

	buf = malloc(name_len + symbol_len + arg_len);
	if (!buf)
		return -ENOMEM;
	memcpy(buf, memfd_name, name_len);
	memcpy(buf + name_len, request->start_symbol, symbol_len);
	memcpy(buf + name_len + symbol_len, arg, arg_len);
	err = tracee__write(tracee, tracee->strings, buf, name_len + symbol_len + arg_len);
	free(buf);
	*name = tracee->strings;
	*symbol = *name + name_len;
	*argument = *symbol + symbol_len;
	*path = *argument + arg_len;
	return err;
}

#endif /* __x86_64__ */
