// SPDX-License-Identifier: GPL-2.0
/*
 * The ptrace injector (see inject.h).  A thread of the target that is safe
 * to borrow (quietly blocked in a system call, or computing outside libc,
 * the loader and CUDA) is seized and interrupted; functions of the
 * target's own libc are called in it (memfd_create, dlopen, dlsym, then
 * the start function) by pointing its registers at them, on a private
 * stack, each returning into a small stub of ours that we catch at a
 * syscall stop.  Nothing is written into the target's code.  Everything the
 * calls disturb is put back: registers, FPU/xstate, signal mask, errno,
 * held signals, and the system call the thread was in, which the kernel's
 * own restart logic then resumes.  Should llmprof die at any point, the
 * thread puts itself back through an rt_sigreturn frame (tracee_landing.c).
 */
#include <dirent.h>
#include <dlfcn.h>
#include <elf.h>
#include <errno.h>
#include <fcntl.h>
#include <gelf.h>
#include <libelf.h>
#include <limits.h>
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/ptrace.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <sys/user.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "base/clock.h"
#include "inject/inject.h"
#include "inject/inject_internal.h"
#include "status.h"

#if defined(__x86_64__)

/* Copies the image into the memfd the target just made, from here. */
static int memfd__fill(pid_t pid, int remote_fd, const struct inject_request *request,
		       struct inject_result *result)
{
	const char *memfd_name = request->memfd_name ? request->memfd_name : "llmprof-agent";
	char path[64], link[256], want[256];
	const char *data = request->image;
	size_t done = 0;
	struct stat st;
	ssize_t n;
	int fd, err = 0;

	snprintf(path, sizeof(path), "/proc/%d/fd/%d", pid, remote_fd);
	/* Make sure the descriptor is still the memfd we made. */
	n = readlink(path, link, sizeof(link) - 1);
	if (n < 0)
		return -errno;
	link[n] = '\0';
	snprintf(want, sizeof(want), "/memfd:%s (deleted)", memfd_name);
	if (strcmp(link, want)) {
		inject_result__say(result, "descriptor %d in the target is %s, not the memfd",
				   remote_fd, link);
		return -ESTALE;
	}
	fd = open(path, O_WRONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	if (!fstat(fd, &st))
		result->image_inode = (unsigned long)st.st_ino;
	while (done < request->image_size) {
		n = write(fd, data + done, request->image_size - done);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0) {
			err = n < 0 ? -errno : -EIO;
			goto cleanup;
		}
		done += n;
	}
cleanup:
	close(fd);
	return err;
}

/*
 * The stub that catches a function's return: it puts the thread's errno
 * back (at first into a scratch word: errno's address is the first thing
 * we ask for) and lands, which, with us alive, is where we stop it.
 */
static int stub__write(struct tracee *tracee, unsigned long page, unsigned long errno_address,
		       int errno_value)
{
	unsigned char code[STUB_TRAP_OFFSET] = {
	    0x48,	 0x89, 0xc7,		 /* mov %rax,%rdi: the return value, for us */
	    0x48,	 0xb8,			 /* movabs $errno_address,%rax */
	    [13] = 0xc7, 0x00,			 /* movl $errno_value,(%rax) */
	    [19] = 0xb8, 0x0f, 0x00, 0x00, 0x00, /* mov $15,%eax: rt_sigreturn */
	    0x0f,	 0x05,			 /* syscall: the trap, or the landing */
	};

	memcpy(code + 5, &errno_address, 8);
	memcpy(code + 15, &errno_value, 4);
	return tracee__write(tracee, page, code, sizeof(code));
}

/*
 * The private area, made with the thread's own stack as the landing: a
 * guard page, the stack with the strings and the second landing frame at
 * its top, and the stub page, made executable before any function call.
 */
static int injection__private_area(struct injection *injection, struct tracee *tracee)
{
	struct inject_result *result = injection->result;
	unsigned long ret, args[6], stub_page, frame;
	int err;

	args[0] = 0;
	args[1] = PRIVATE_GUARD_SIZE + PRIVATE_STACK_SIZE + STUB_PAGE_SIZE;
	args[2] = PROT_READ | PROT_WRITE;
	args[3] = MAP_PRIVATE | MAP_ANONYMOUS | MAP_STACK | MAP_NORESERVE;
	args[4] = (unsigned long)-1;
	err = tracee__syscall_checked(tracee, result, SYS_mmap, args, 5, &ret);
	if (err)
		return err;
	if (ret >= (unsigned long)-4095) {
		inject_result__say(result, "mmap in the target failed");
		return (long)ret;
	}
	tracee->private_base = ret;
	tracee->strings = ret + PRIVATE_GUARD_SIZE + PRIVATE_STACK_SIZE - STRINGS_AREA_SIZE;
	frame = ((tracee->strings - landing__size(tracee)) & ~15UL) - 8;
	stub_page = ret + PRIVATE_GUARD_SIZE + PRIVATE_STACK_SIZE;
	err = tracee__write_landing(tracee, frame);
	if (!err)
		err = stub__write(tracee, stub_page, stub_page - sizeof(long), 0);
	if (err)
		return err;
	tracee->private_frame = frame;
	tracee->frame = frame;
	args[0] = stub_page;
	args[1] = STUB_PAGE_SIZE;
	args[2] = PROT_READ | PROT_EXEC;
	err = tracee__syscall_checked(tracee, result, SYS_mprotect, args, 3, &ret);
	if (err)
		return err;
	if (ret) {
		inject_result__say(result, "the target may not map executable memory");
		return (long)ret;
	}
	tracee->stub = stub_page;
	args[0] = tracee->private_base;
	args[1] = PRIVATE_GUARD_SIZE;
	args[2] = PROT_NONE;
	return tracee__syscall_checked(tracee, result, SYS_mprotect, args, 3, &ret);
}

/* Readies a stopped thread for the calls: its FPU state and signal mask
 * saved, the landing frame written, the private area made. */
static int injection__borrow_thread(struct injection *injection, struct tracee *tracee)
{
	const struct target_functions *fn = &injection->functions;
	struct inject_result *result = injection->result;
	int err;

	err = tracee__save_fpu(tracee);
	if (err)
		return err;
	/* While ppoll(), pselect() or sigsuspend() have a temporary mask in
	 * force, this reads the thread's real one, and setting a mask drops
	 * the temporary one: the restarted call puts it back itself. */
	if (ptrace(PTRACE_GETSIGMASK, tracee->tid, sizeof(uint64_t), &tracee->saved_mask) < 0)
		return ptrace__error();
	if (tracee->saved_mask & SIGNAL_BIT(SIGSEGV)) {
		inject_result__say(result, "thread %d blocks SIGSEGV", tracee->tid);
		return -ENOTSUP;
	}
	if (landing__size(tracee) > LANDING_ROOM) {
		inject_result__say(result, "thread %d has %zu bytes of FPU state", tracee->tid,
				   tracee->fpu_size);
		return -ENOTSUP;
	}
	tracee->syscall_fn = fn->syscall;
	tracee->restore_rt = fn->restore_rt;
	/* Nothing of the thread changes before this frame is in place. */
	err = tracee__write_landing(tracee, tracee->thread_frame);
	if (err)
		return err;
	tracee->frame = tracee->thread_frame;
	return injection__private_area(injection, tracee);
}

/* errno is the thread's own; our calls change it. */
static int injection__save_errno(struct injection *injection, struct tracee *tracee)
{
	unsigned long ret;
	int err;

	err = tracee__call_checked(tracee, injection->result, injection->functions.errno_location,
				   NULL, 0, &ret);
	if (err)
		return err;
	tracee->errno_address = ret;
	err = tracee__read(tracee, ret, &tracee->saved_errno, sizeof(int));
	if (err)
		return err;
	tracee->errno_saved = true;
	/* From now on the stub also puts errno back (the page is ours, and
	 * /proc/PID/mem writes through its read-only protection). */
	return stub__write(tracee, tracee->stub, tracee->errno_address, tracee->saved_errno);
}

/* The image into a memfd of the target, dlopen()ed there from
 * /proc/self/fd: its start function's address in *start. */
static int injection__load_image(struct injection *injection, struct tracee *tracee,
				 unsigned long name, unsigned long path, unsigned long symbol,
				 unsigned long *start)
{
	const struct target_functions *fn = &injection->functions;
	const struct inject_request *request = injection->request;
	struct inject_result *result = injection->result;
	unsigned long ret, handle, args[6];
	char text[200];
	int err;

	args[0] = name;
	args[1] = MFD_CLOEXEC;
	err = tracee__syscall_checked(tracee, result, SYS_memfd_create, args, 2, &ret);
	if (err)
		return err;
	if ((long)ret < 0) {
		inject_result__say(result, "memfd_create in the target failed");
		return (long)ret;
	}
	tracee->remote_memfd = (int)ret;
	err = memfd__fill(injection->pid, tracee->remote_memfd, request, result);
	if (err)
		return err;

	snprintf(text, sizeof(text), "/proc/self/fd/%d", tracee->remote_memfd);
	err = tracee__write(tracee, path, text, strlen(text) + 1);
	if (err)
		return err;
	args[0] = path;
	args[1] = RTLD_NOW | RTLD_LOCAL;
	/* dlopen, dlerror, dlsym and dlclose hold the loader lock: cut off,
	 * they would leave it held for good. */
	tracee->let_finish = true;
	err = tracee__call_checked(tracee, result, fn->dlopen, args, 2, &handle);
	if (err)
		return err;
	args[0] = tracee->remote_memfd;
	if (!tracee__syscall_checked(tracee, result, SYS_close, args, 1, &ret))
		tracee->remote_memfd = -1;
	if (!handle) {
		if (!tracee__call_checked(tracee, result, fn->dlerror, NULL, 0, &ret)) {
			tracee__read_string(tracee, ret, text, sizeof(text));
			inject_result__say(result, "dlopen in the target failed: %s", text);
		}
		return -ELIBBAD;
	}

	args[0] = handle;
	args[1] = symbol;
	err = tracee__call_checked(tracee, result, fn->dlsym, args, 2, start);
	if (err)
		return err;
	if (!*start) {
		inject_result__say(result, "dlsym(%s) in the target failed", request->start_symbol);
		args[0] = handle;
		tracee__call_checked(tracee, result, fn->dlclose, args, 1, &ret);
		return -ENOENT;
	}
	return 0;
}

/* The calls themselves, on a stopped, safe thread. */
static int injection__calls(struct injection *injection, struct tracee *tracee)
{
	struct inject_result *result = injection->result;
	unsigned long ret, start, name, symbol, argument, path, args[1];
	int err;

	err = injection__borrow_thread(injection, tracee);
	if (!err)
		err = injection__save_errno(injection, tracee);
	if (!err)
		err = tracee__write_strings(tracee, injection->request, &name, &symbol, &argument,
					    &path);
	if (err)
		return err;
	if (injection->loaded_start) {
		/* The image is loaded already: only its start function runs. */
		result->reused = true;
		start = injection->loaded_start;
	} else {
		err = injection__load_image(injection, tracee, name, path, symbol, &start);
		if (err)
			return err;
	}

	/* The start function is the agent's own: it starts a thread and
	 * takes no loader lock, so a stuck one is cut off. */
	tracee->let_finish = false;
	args[0] = argument;
	err = tracee__call_checked(tracee, result, start, args, 1, &ret);
	if (err)
		return err;
	result->start_result = (int)ret;
	return 0;
}

/* Undoes what the calls left in the target: the memfd and private area. */
static void injection__tidy(struct injection *injection, struct tracee *tracee)
{
	unsigned long args[2], ret;

	if (!tracee->stopped || !tracee->frame)
		return;
	tracee->let_finish = false;
	/* The tidying gets its own time, even when the calls used up theirs. */
	if (tracee->deadline_ns < clock__monotonic_ns() + RECOVERY_MS * 1000000ULL)
		tracee->deadline_ns = clock__monotonic_ns() + RECOVERY_MS * 1000000ULL;
	/* From here the calls land through the thread's own stack and libc:
	 * the private area goes away under them. */
	if (tracee__write_landing(tracee, tracee->thread_frame))
		return;
	tracee->frame = tracee->thread_frame;
	tracee->stub = 0;
	/* A cut-off call may still own frames on the private stack (a thread
	 * it started could be told about them): leave it mapped then. */
	if (tracee->abandoned) {
		if (tracee->private_base)
			inject_result__say(injection->result,
					   "a 1 MiB stack stays mapped in the target at %#lx",
					   tracee->private_base);
	}
	if (tracee->remote_memfd >= 0) {
		args[0] = tracee->remote_memfd;
		if (!tracee__syscall_checked(tracee, injection->result, SYS_close, args, 1, &ret))
			tracee->remote_memfd = -1;
	}
	if (tracee->private_base && !tracee->abandoned && tracee->stopped) {
		args[0] = tracee->private_base;
		args[1] = PRIVATE_GUARD_SIZE + PRIVATE_STACK_SIZE + STUB_PAGE_SIZE;
		if (!tracee__syscall_checked(tracee, injection->result, SYS_munmap, args, 2, &ret))
			tracee->private_base = 0;
	}
}

static int injection__on_thread(struct injection *injection, struct tracee *tracee)
{
	const struct inject_request *request = injection->request;
	int err;

	if (request->hold_stopped_ms > 0)
		inject__sleep_us(request->hold_stopped_ms * 1000U);
	err = injection__calls(injection, tracee);
	if (tracee->stopped)
		injection__tidy(injection, tracee);
	return err;
}

/*
 * What is learnt before a thread is stopped: whether the image and the
 * process can take the injection at all (not traced, stopped, exiting, in
 * seccomp strict mode or ignoring SIGSEGV; page 0 unmapped), its maps, the
 * functions to call, and an image already loaded for reuse.  0 or -errno,
 * the reason in the result.
 */
static int injection__prepare(struct injection *injection, struct proc_status *status)
{
	const struct inject_request *request = injection->request;
	struct inject_result *result = injection->result;
	int err;

	err = inject_image__check(request, result, &injection->start_offset);
	if (err)
		return err;
	err = target_status__read(injection->pid, 0, status);
	if (err)
		return err;
	if (status->tracer_pid) {
		inject_result__say(result, "process %d is already traced by %d", injection->pid,
				   status->tracer_pid);
		return -EBUSY;
	}
	if (status->state == 'T' || status->state == 't') {
		inject_result__say(result, "process %d is stopped", injection->pid);
		return -EBUSY;
	}
	if (status->state == 'X')
		return -ESRCH;
	if (status->state == 'Z') {
		inject_result__say(result, "the main thread of process %d has exited",
				   injection->pid);
		return -ENOTSUP;
	}
	if (status->seccomp == 1) {
		inject_result__say(result, "process %d runs in seccomp strict mode",
				   injection->pid);
		return -ENOTSUP;
	}
	if (status->ignored & SIGNAL_BIT(SIGSEGV)) {
		inject_result__say(result, "process %d ignores SIGSEGV", injection->pid);
		return -ENOTSUP;
	}
	err = target_maps__load(injection->pid, &injection->maps);
	if (err)
		return err;
	if (target_maps__find(&injection->maps, 0)) {
		inject_result__say(result, "process %d maps page 0, where calls return",
				   injection->pid);
		return -ENOTSUP;
	}
	err = target_functions__resolve(injection->pid, &injection->maps, &injection->functions,
					result);
	if (err)
		return err;
	if (request->reuse_loaded) {
		unsigned long bias, inode;

		if (!inject_image__find_loaded(injection->pid, &injection->maps, request, &bias,
					       &inode)) {
			injection->loaded_start = bias + injection->start_offset;
			result->image_inode = inode;
		}
	}
	return 0;
}

static int injection__run(struct injection *injection)
{
	const struct inject_request *request = injection->request;
	struct inject_result *result = injection->result;
	unsigned long long deadline_ns, quiet_until_ns, start_ns = clock__monotonic_ns();
	struct proc_status status;
	struct candidate *list = NULL;
	struct tracee tracee;
	size_t count = 0, i;
	char path[64];
	int mem_fd = -1, err, timeout_ms;

	timeout_ms = request->timeout_ms > 0 ? request->timeout_ms : INJECT_DEFAULT_TIMEOUT_MS;
	deadline_ns = start_ns + (unsigned long long)timeout_ms * 1000000ULL;
	quiet_until_ns = start_ns + QUIET_WINDOW_MS * 1000000ULL;

	err = injection__prepare(injection, &status);
	if (err)
		return err;
	snprintf(path, sizeof(path), "/proc/%d/mem", injection->pid);
	mem_fd = open(path, O_RDWR | O_CLOEXEC);
	if (mem_fd < 0)
		return errno == ENOENT ? -ESRCH : -errno;

	err = -EAGAIN;
	while (err == -EAGAIN && clock__monotonic_ns() < deadline_ns) {
		free(list);
		list = NULL;
		err = target_candidates__list(injection->pid, &injection->maps, mem_fd, &list,
					      &count);
		if (err == -EBUSY)
			inject_result__say(result, "process %d is stopped", injection->pid);
		if (err)
			break;
		if (!count && kill(injection->pid, 0) < 0) {
			err = -ESRCH;
			break;
		}
		err = -EAGAIN;
		for (i = 0; i < count && i < MAX_CANDIDATES_PER_ROUND && err == -EAGAIN; i++) {
			int safe;

			/* Threads wake and sleep: at first, only take one caught
			 * in a quiet wait, and look again soon. */
			if (list[i].score < SCORE_QUIET_WAIT &&
			    clock__monotonic_ns() < quiet_until_ns)
				break;

			memset(&tracee, 0, sizeof(tracee));
			tracee.pid = injection->pid;
			tracee.tid = list[i].tid;
			tracee.mem_fd = mem_fd;
			tracee.remote_memfd = -1;
			result->attempts++;
			err = tracee__seize(&tracee, deadline_ns);
			if (err == -EBUSY) {
				inject_result__say(result, "process %d is stopped", injection->pid);
				tracee__release(&tracee, result);
				break;
			}
			if (err) {
				if (err == -ETIMEDOUT)
					inject_result__say(result, "thread %d did not stop",
							   tracee.tid);
				tracee__release(&tracee, result);
				/* One thread exiting is no reason to stop trying. */
				if (err == -ETIMEDOUT ||
				    (err == -ESRCH && kill(injection->pid, 0) == 0))
					err = -EAGAIN;
				continue;
			}
			safe = tracee__is_safe(&tracee, &injection->maps, result);
			if (safe <= 0) {
				tracee__release(&tracee, result);
				err = safe < 0 ? safe : -EAGAIN;
				continue;
			}
			if (status.seccomp == 2) {
				err = seccomp_filter__allows_injection(injection->pid, tracee.tid,
								       result);
				if (err) {
					tracee__release(&tracee, result);
					free(tracee.fpu);
					goto cleanup;
				}
			}
			result->tid = tracee.tid;
			result->interrupted_syscall = (long)tracee.saved.orig_rax;
			result->interrupted_return =
			    (long)tracee.saved.orig_rax >= 0 ? (long)tracee.saved.rax : 0;
			/* A test's hold does not count against the calls' time. */
			tracee.deadline_ns =
			    deadline_ns + (request->hold_stopped_ms > 0
					       ? request->hold_stopped_ms * 1000000ULL
					       : 0);
			err = injection__on_thread(injection, &tracee);
			tracee__release(&tracee, result);
			result->stopped_ns = clock__monotonic_ns() - tracee.seized_ns;
			free(tracee.fpu);
			goto cleanup;
		}
		if (err == -EAGAIN)
			inject__sleep_us(clock__monotonic_ns() < quiet_until_ns ? 1000 : 2000);
	}
	if (err == -EAGAIN)
		inject_result__say(result, "no thread of process %d was in a safe state",
				   injection->pid);
cleanup:
	free(list);
	if (mem_fd >= 0)
		close(mem_fd);
	return err;
}

/*
 * The ptrace work runs in a thread of its own: if a thread we seized never
 * stops (stuck in D state), it cannot be detached, but the kernel lets it go
 * when its tracer exits, which this thread then does.
 */
static void *injection__thread(void *arg)
{
	struct injection *injection = arg;

	prctl(PR_SET_TIMERSLACK, 1UL, 0, 0, 0); /* short, exact polling sleeps */
	injection->err = injection__run(injection);
	return NULL;
}

int inject__run(pid_t pid, const struct inject_request *request, struct inject_result *result)
{
	struct inject_result local_result;
	struct injection injection = {};
	unsigned long long start_ns = clock__monotonic_ns();
	pthread_t thread;
	int err;

	if (!result)
		result = &local_result;
	memset(result, 0, sizeof(*result));
	result->interrupted_syscall = -1;
	if (pid <= 0 || !request || !request->image || !request->start_symbol ||
	    !request->start_symbol[0])
		return -EINVAL;
	if (request->argument && strlen(request->argument) >= INJECT_MAX_ARGUMENT)
		return -E2BIG;
	if (request->memfd_name && strlen(request->memfd_name) > 200)
		return -EINVAL;
	if (strlen(request->start_symbol) > 1000)
		return -EINVAL;
	injection.pid = pid;
	injection.request = request;
	injection.result = result;
	err = pthread_create(&thread, NULL, injection__thread, &injection);
	if (err)
		return -err;
	pthread_join(thread, NULL);
	target_maps__free(&injection.maps);
	result->total_ns = clock__monotonic_ns() - start_ns;
	if (injection.err)
		status__debug("inject: process %d: %s%s%s", pid, strerror(-injection.err),
			      result->message[0] ? ": " : "", result->message);
	return injection.err;
}

#else /* !__x86_64__ */

int inject__run(pid_t pid, const struct inject_request *request, struct inject_result *result)
{
	return -ENOTSUP;
}

#endif /* __x86_64__ */

int inject__library(pid_t pid, const void *image, size_t size, const char *start_symbol,
		    const char *argument, int *start_result)
{
	struct inject_request request = {
	    .image = image,
	    .image_size = size,
	    .start_symbol = start_symbol,
	    .argument = argument,
	};
	struct inject_result result;
	int err;

	err = inject__run(pid, &request, &result);
	if (!err && start_result)
		*start_result = result.start_result;
	return err;
}
