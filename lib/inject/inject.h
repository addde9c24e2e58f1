/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Loading a shared library into a running process and calling one function
 * in it, through ptrace (x86-64, glibc targets): how `llmprof attach` puts
 * the CUPTI agent into a live job.  One thread is held for a few
 * milliseconds; its registers, FPU state, signal mask, errno and
 * interrupted system call are put back exactly before it is let go.
 */
#ifndef LLMPROF_INJECT_H
#define LLMPROF_INJECT_H

#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

#define INJECT_DEFAULT_TIMEOUT_MS 5000
#define INJECT_MAX_ARGUMENT 4096

/*
 * Reads /proc/PID/maps.  *has_cuda is true when a CUDA runtime (libcudart*)
 * or driver (libcuda.so*) is mapped.  cupti_path (may be NULL) receives the
 * first libcupti.so* the process maps, as a path in the target's own mount
 * namespace, or "" when it maps none.  0 or -errno (-ESRCH: no such
 * process, -ENAMETOOLONG: cupti_path too small).
 */
int inject__process_has_cuda(pid_t pid, bool *has_cuda, char *cupti_path, size_t cupti_path_size);

struct inject_request {
	const void *image; /* an ELF x86-64 shared object, in memory */
	size_t image_size;
	/* int start_symbol(const char *argument), exported by the image.  It
	 * runs on a private stack with asynchronous signals blocked (threads
	 * it creates inherit that mask) and must return promptly. */
	const char *start_symbol;
	/* At most INJECT_MAX_ARGUMENT bytes; valid only during the call, so
	 * the start function copies what it keeps.  NULL passes "". */
	const char *argument;
	const char *memfd_name; /* shown in the target's maps; NULL: "llmprof-agent" */
	/* When the target already maps a copy of this very image (a
	 * /memfd:NAME mapping with the same bytes), call its start function
	 * there and load nothing: one copy however often llmprof attaches. */
	bool reuse_loaded;
	int timeout_ms;	     /* the whole injection; 0: INJECT_DEFAULT_TIMEOUT_MS */
	int hold_stopped_ms; /* tests: keep the thread stopped this long first */
};

struct inject_result {
	int start_result;	       /* what the start function returned */
	pid_t tid;		       /* the thread that ran the calls, 0 if none */
	long interrupted_syscall;      /* its system call when stopped, or -1 */
	long interrupted_return;       /* the kernel's return value then (-ERESTART...) */
	unsigned int attempts;	       /* threads seized before one was safe to use */
	unsigned int signals_held;     /* signals that arrived and were re-delivered */
	unsigned long long total_ns;   /* the whole call */
	unsigned long long stopped_ns; /* the chosen thread's stop, seize to detach */
	/* Why it failed, when there is more to say than the errno (dlerror()
	 * text, the unsafe state the target is left in). */
	char message[256];
	/* The inode of the image's memory file in the target (the maps column),
	 * which tells its mapping from other copies; reused: it was there. */
	unsigned long image_inode;
	bool reused;
};

/*
 * Puts the image into process pid with memfd_create() and the target's own
 * dlopen("/proc/self/fd/N", RTLD_NOW | RTLD_LOCAL), then calls the start
 * symbol with the argument.  The library stays loaded and shows in the
 * target's maps as "/memfd:NAME (deleted)"; each call loads a new copy.
 * Nothing is injected when the checks before the first remote call fail.
 * result may be NULL.  0 or -errno:
 *   -ENOEXEC: the image is not an x86-64 shared library;
 *   -ENOENT: it exports no such start symbol;
 *   -ESRCH: the target is gone, or died during the injection;
 *   -EPERM: not allowed to trace it;
 *   -EBUSY: already traced, or stopped by job control;
 *   -EAGAIN: no thread was in a safe state before the deadline;
 *   -ENOTSUP: a target this injector refuses (32-bit, no glibc libc.so.6,
 *	no dlopen in it, shadow stacks, seccomp strict mode or a filter that
 *	would kill it on (or refuse) a call the injection makes, SIGSEGV
 *	blocked or ignored, page 0 mapped);
 *   -ELIBBAD: its dlopen() failed (result->message has dlerror());
 *   -EFAULT: the injected code faulted;
 *   -ETIMEDOUT: a call did not return in time and was cut off (a dlopen,
 *	which holds the loader lock, is left to finish in the target instead).
 * Every failure after the target was stopped restores it and lets it go.
 * The one window this cannot cover: if the calling process is killed (and
 * the kernel detaches the thread) while the calls are under way, about a
 * millisecond per injection, the thread runs on with borrowed registers and
 * faults at address 0.  While the thread is merely held stopped, before the
 * first call, killing the caller is harmless.
 */
int inject__run(pid_t pid, const struct inject_request *request, struct inject_result *result);

/* inject__run() with the default options. */
int inject__library(pid_t pid, const void *image, size_t size, const char *start_symbol,
		    const char *argument, int *start_result);

/* Whether a file name (no directory) is a dynamic loader's: the injector
 * keeps away from the loader's locks, the library probes watch its loads. */
bool library_name__is_loader(const char *name);

#endif /* LLMPROF_INJECT_H */
