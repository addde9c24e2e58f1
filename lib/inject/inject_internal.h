/* SPDX-License-Identifier: GPL-2.0 */
/*
 * What the injector's parts share (x86-64 only): inject_target.c reads the
 * target from /proc and its ELF files before anything is stopped, tracee.c
 * holds the ptrace primitives on one borrowed thread, tracee_landing.c
 * builds the signal frame that puts that thread back by itself should
 * llmprof die, and inject.c is the plan that strings them together.
 */
#ifndef LLMPROF_INJECT_INTERNAL_H
#define LLMPROF_INJECT_INTERNAL_H

#if defined(__x86_64__)

#include <signal.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>
#include <sys/user.h>

#include "inject/inject.h"

/* The kernel's internal restart codes, seen by a tracer in rax. */
#define KERNEL_ERESTARTSYS 512
#define KERNEL_ERESTARTNOINTR 513
#define KERNEL_ERESTARTNOHAND 514
#define KERNEL_ERESTART_RESTARTBLOCK 516

#define X86_EFLAGS_DF 0x400UL
#define X86_USER64_CS 0x33

#define XSTATE_BUFFER_SIZE (64 * 1024)
#define PRIVATE_STACK_SIZE (1024 * 1024)
#define PRIVATE_GUARD_SIZE 4096
#define STRINGS_AREA_SIZE (INJECT_MAX_ARGUMENT + 2048)
#define MAX_HELD_SIGNALS 64
#define MAX_CANDIDATES_PER_ROUND 4
#define STOP_WAIT_MS 1000
#define RECOVERY_MS 1000
#define SCORE_QUIET_WAIT 100
#define QUIET_WINDOW_MS 20
#define STACK_SCAN_BYTES 512
/* Room below the red zone of the borrowed thread's stack for the landing
 * frame: the frame itself and the largest XSAVE area (AMX: 11 KiB). */
#define LANDING_ROOM (16 * 1024)
#define STUB_PAGE_SIZE 4096
/* The stub: mov %rax,%rdi; movabs $errno_address,%rax; movl $errno,(%rax);
 * mov $15,%eax; syscall (rt_sigreturn). */
#define STUB_SIGRETURN_OFFSET 3
#define STUB_TRAP_OFFSET 26
#define SYSCALL_RT_SIGRETURN 15

#define SIGNAL_BIT(sig) (1ULL << ((sig)-1))
/* Faults that must reach the thread at once: never blocked during the calls. */
#define SYNCHRONOUS_SIGNALS                                                                        \
	(SIGNAL_BIT(SIGSEGV) | SIGNAL_BIT(SIGBUS) | SIGNAL_BIT(SIGILL) | SIGNAL_BIT(SIGFPE) |      \
	 SIGNAL_BIT(SIGTRAP) | SIGNAL_BIT(SIGSYS))

struct maps_entry {
	unsigned long start;
	unsigned long end;
	unsigned long offset;
	char perms[5];
	char *path; /* NULL for anonymous memory */
};

struct process_maps {
	struct maps_entry *entries;
	size_t count;
};

/* What /proc/PID/status and /proc/PID/task/TID/status say. */
struct proc_status {
	char state;
	int tracer_pid;
	int seccomp;
	bool shadow_stack;
	uint64_t pending;	 /* SigPnd */
	uint64_t shared_pending; /* ShdPnd */
	uint64_t blocked;	 /* SigBlk */
	uint64_t ignored;	 /* SigIgn */
	uint64_t caught;	 /* SigCgt */
};

/* The target's functions, resolved from its own mapped libc (and libdl). */
struct target_functions {
	unsigned long errno_location;
	unsigned long mmap;
	unsigned long mprotect;
	unsigned long munmap;
	unsigned long close;
	unsigned long syscall;
	/* glibc's __restore_rt (mov $15,%rax; syscall), found by its bytes. */
	unsigned long restore_rt;
	unsigned long dlopen;
	unsigned long dlsym;
	unsigned long dlerror;
	unsigned long dlclose;
};

enum stop_kind {
	STOP_INTERRUPT, /* PTRACE_EVENT_STOP from PTRACE_INTERRUPT */
	STOP_GROUP,	/* group-stop (SIGSTOP and friends) */
	STOP_SIGNAL,	/* signal-delivery-stop */
	STOP_SYSCALL,	/* syscall-entry or -exit stop (PTRACE_O_TRACESYSGOOD) */
};

struct tracee {
	pid_t pid;
	pid_t tid;
	int mem_fd;
	unsigned long long deadline_ns;
	unsigned long long seized_ns;
	bool seized;
	bool stopped;	   /* in a ptrace-stop we can restart it from */
	bool signal_stop;  /* ... and that stop is a signal-delivery-stop */
	bool syscall_stop; /* ... or a syscall stop */

	struct user_regs_struct saved;
	bool regs_dirty;
	unsigned char *fpu; /* saved NT_X86_XSTATE, or NT_PRFPREG */
	size_t fpu_size;
	int fpu_type;
	bool fpu_dirty;
	uint64_t saved_mask;
	bool mask_dirty;
	unsigned long errno_address;
	int saved_errno;
	bool errno_saved;

	/*
	 * Every call returns into code that, run without us, puts the thread
	 * back: an rt_sigreturn through a frame right above the return
	 * address holding the saved registers, FPU state and signal mask.
	 * syscall_fn and restore_rt are the target's libc; stub is ours.
	 */
	unsigned long syscall_fn;
	unsigned long restore_rt;
	unsigned long thread_frame;  /* landing frame on the thread's own stack */
	unsigned long private_frame; /* ... and on the private stack */
	unsigned long frame;	     /* the one calls use now: their stack pointer */
	unsigned long stub;	     /* the stub page's code, once executable */
	unsigned long private_base;  /* remote mmap: guard, stack, strings, stub */
	unsigned long strings;
	int remote_memfd;
	bool abandoned; /* a call was cut off by the deadline */
	/* The call under way may hold the loader lock (dlopen, dlsym,
	 * dlclose): past the deadline it is left to finish on its own and
	 * return into the landing frame, never cut off. */
	bool let_finish;
	bool restart_block_clobbered;

	siginfo_t held[MAX_HELD_SIGNALS];
	unsigned int held_count;
	unsigned int held_lost;
};

struct injection {
	pid_t pid;
	const struct inject_request *request;
	struct inject_result *result;
	struct process_maps maps;
	struct target_functions functions;
	unsigned long start_offset; /* the start symbol's value in the image */
	unsigned long loaded_start; /* its address in a copy already loaded, or 0 */
	int err;
};

struct candidate {
	pid_t tid;
	int score;
};

void inject__sleep_us(unsigned int us);
ssize_t inject_proc__read(const char *path, char **out);
int target_status__read(pid_t pid, pid_t tid, struct proc_status *status);
bool library_name__is_cuda(const char *name);
bool library_name__is_unsafe_to_interrupt(const char *name);
void target_maps__free(struct process_maps *maps);
int target_maps__load(pid_t pid, struct process_maps *maps);
const struct maps_entry *target_maps__find(const struct process_maps *maps, unsigned long address);
void maps_entry__name(const struct maps_entry *entry, char *name, size_t size);
int inject_image__check(const struct inject_request *request, struct inject_result *result,
			unsigned long *start_offset);
/* A copy of the request's image the target maps already: the load bias of
 * its first mapping and its inode, or -ENOENT. */
int inject_image__find_loaded(pid_t pid, const struct process_maps *maps,
			      const struct inject_request *request, unsigned long *bias,
			      unsigned long *inode);
int target_functions__resolve(pid_t pid, const struct process_maps *maps,
			      struct target_functions *functions, struct inject_result *result);
bool syscall__may_hold_locks(long nr);
bool target_stack__has_cuda_frame(int mem_fd, const struct process_maps *maps, unsigned long sp);
int target_candidates__list(pid_t pid, const struct process_maps *maps, int mem_fd,
			    struct candidate **out, size_t *count);
void inject_result__say(struct inject_result *result, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

int ptrace__error(void);
int tracee__read(struct tracee *tracee, unsigned long address, void *buf, size_t size);
int tracee__write(struct tracee *tracee, unsigned long address, const void *buf, size_t size);
int tracee__call_checked(struct tracee *tracee, struct inject_result *result, unsigned long fn,
			 const unsigned long *args, size_t nargs, unsigned long *ret);
int tracee__syscall_checked(struct tracee *tracee, struct inject_result *result, long nr,
			    const unsigned long *args, size_t nargs, unsigned long *ret);
size_t landing__size(const struct tracee *tracee);
int tracee__write_landing(struct tracee *tracee, unsigned long frame);
void tracee__resume_regs(struct tracee *tracee, struct user_regs_struct *regs, bool landing);
int tracee__remote_errno(struct tracee *tracee);
void tracee__read_string(struct tracee *tracee, unsigned long address, char *buf, size_t size);
int tracee__save_fpu(struct tracee *tracee);
int tracee__clean_fpu(struct tracee *tracee);
void tracee__release(struct tracee *tracee, struct inject_result *result);
int tracee__seize(struct tracee *tracee, unsigned long long deadline_ns);
/* 0 when the seccomp filter of the stopped thread tid lets the injection's
 * system calls through (or cannot be read); -ENOTSUP with the reason in
 * result when it would kill the target or refuse a call it needs. */
int seccomp_filter__allows_injection(pid_t pid, pid_t tid, struct inject_result *result);
int tracee__is_safe(struct tracee *tracee, const struct process_maps *maps,
		    struct inject_result *result);
int tracee__write_strings(struct tracee *tracee, const struct inject_request *request,
			  unsigned long *name, unsigned long *symbol, unsigned long *argument,
			  unsigned long *path);

#endif /* __x86_64__ */

#endif /* LLMPROF_INJECT_INTERNAL_H */
