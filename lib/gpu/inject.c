// SPDX-License-Identifier: GPL-2.0
/*
 * The ptrace injector (see inject.h).  A thread of the target that is safe
 * to borrow (quietly blocked in a system call, or computing outside libc,
 * the loader and CUDA) is seized and interrupted; functions of the
 * target's own libc are called in it (memfd_create, dlopen, dlsym, then
 * the start function) by pointing its registers at them, on a private
 * stack, with a return address of 0 whose fault is caught as a
 * signal-delivery-stop and never delivered.  Nothing is written into the
 * target's code.  Everything the calls disturb is put back: registers,
 * FPU/xstate, signal mask, errno, held signals, and the system call the
 * thread was in, which the kernel's own restart logic then resumes.
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

#include "gpu/inject.h"
#include "status.h"

#if defined(__x86_64__)

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
	unsigned long memfd_create; /* 0: syscall(SYS_memfd_create) instead */
	unsigned long syscall;
	unsigned long dlopen;
	unsigned long dlsym;
	unsigned long dlerror;
	unsigned long dlclose;
};

enum stop_kind {
	STOP_INTERRUPT, /* PTRACE_EVENT_STOP from PTRACE_INTERRUPT */
	STOP_GROUP,	/* group-stop (SIGSTOP and friends) */
	STOP_SIGNAL,	/* signal-delivery-stop */
};

struct tracee {
	pid_t pid;
	pid_t tid;
	int mem_fd;
	unsigned long long deadline_ns;
	unsigned long long seized_ns;
	bool seized;
	bool stopped;	  /* in a ptrace-stop we can restart it from */
	bool signal_stop; /* ... and that stop is a signal-delivery-stop */

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

	unsigned long thread_sp;    /* for calls on the thread's own stack */
	unsigned long private_base; /* remote mmap: guard, stack, strings */
	unsigned long private_sp;
	unsigned long strings;
	int remote_memfd;
	bool abandoned; /* a call was cut off by the deadline */
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
	int err;
};

static unsigned long long now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (unsigned long long)ts.tv_sec * 1000000000ULL + ts.tv_nsec;
}

static void sleep_us(unsigned int us)
{
	struct timespec ts = {.tv_sec = us / 1000000, .tv_nsec = (us % 1000000) * 1000L};

	while (nanosleep(&ts, &ts) < 0 && errno == EINTR)
		;
}

static void result__say(struct inject_result *result, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

static void result__say(struct inject_result *result, const char *fmt, ...)
{
	va_list ap;

	if (result->message[0])
		return; /* the first reason is the one that matters */
	va_start(ap, fmt);
	vsnprintf(result->message, sizeof(result->message), fmt, ap);
	va_end(ap);
}

/* Reads a small /proc file whole; NUL-terminated.  Bytes read or -errno. */
static ssize_t proc__read(const char *path, char **out)
{
	size_t size = 0, capacity = 16384;
	char *buf = malloc(capacity), *bigger;
	ssize_t n;
	int fd, err;

	if (!buf)
		return -ENOMEM;
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0) {
		err = errno == ENOENT ? -ESRCH : -errno;
		free(buf);
		return err;
	}
	for (;;) {
		if (capacity - size < 4096) {
			capacity *= 2;
			bigger = realloc(buf, capacity);
			if (!bigger) {
				err = -ENOMEM;
				goto cleanup;
			}
			buf = bigger;
		}
		n = read(fd, buf + size, capacity - size - 1);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0) {
			err = errno == ESRCH ? -ESRCH : -errno;
			goto cleanup;
		}
		if (n == 0)
			break;
		size += n;
	}
	close(fd);
	buf[size] = '\0';
	*out = buf;
	return size;
cleanup:
	close(fd);
	free(buf);
	return err;
}

static uint64_t status__hex(const char *text, const char *key)
{
	const char *line = strstr(text, key);

	return line ? strtoull(line + strlen(key), NULL, 16) : 0;
}

static int status__read(pid_t pid, pid_t tid, struct proc_status *status)
{
	char path[64], *text = NULL, *line;
	ssize_t n;

	if (tid)
		snprintf(path, sizeof(path), "/proc/%d/task/%d/status", pid, tid);
	else
		snprintf(path, sizeof(path), "/proc/%d/status", pid);
	n = proc__read(path, &text);
	if (n < 0)
		return n;
	memset(status, 0, sizeof(*status));
	line = strstr(text, "\nState:");
	status->state = line ? line[strspn(line + 7, " \t") + 7] : '?';
	line = strstr(text, "\nTracerPid:");
	status->tracer_pid = line ? atoi(line + 11) : 0;
	line = strstr(text, "\nSeccomp:");
	status->seccomp = line ? atoi(line + 9) : 0;
	line = strstr(text, "\nx86_Thread_features:");
	if (line) {
		char *end = strchr(line + 1, '\n');

		if (end)
			*end = '\0';
		status->shadow_stack = strstr(line, "shstk") != NULL;
		if (end)
			*end = '\n';
	}
	status->pending = status__hex(text, "\nSigPnd:");
	status->shared_pending = status__hex(text, "\nShdPnd:");
	status->blocked = status__hex(text, "\nSigBlk:");
	status->ignored = status__hex(text, "\nSigIgn:");
	status->caught = status__hex(text, "\nSigCgt:");
	free(text);
	return 0;
}

static const char *path__basename(const char *path)
{
	const char *slash = strrchr(path, '/');

	return slash ? slash + 1 : path;
}

static bool name__starts(const char *name, const char *prefix)
{
	return strncmp(name, prefix, strlen(prefix)) == 0;
}

static bool name__is_libc(const char *name)
{
	size_t len = strlen(name);

	return strcmp(name, "libc.so.6") == 0 ||
	       (name__starts(name, "libc-") && len > 3 && strcmp(name + len - 3, ".so") == 0);
}

static bool name__is_libdl(const char *name)
{
	return name__starts(name, "libdl.so") || name__starts(name, "libdl-");
}

static bool name__is_loader(const char *name)
{
	return name__starts(name, "ld-linux") || name__starts(name, "ld-2.") ||
	       name__starts(name, "ld64.so");
}

static bool name__is_cuda(const char *name)
{
	return name__starts(name, "libcuda") || name__starts(name, "libcupti") ||
	       name__starts(name, "libnvidia");
}

/*
 * Libraries a computing thread must not be stopped inside: it could hold
 * their internal locks (malloc arenas, the loader lock, the unwinder's, the
 * CUDA driver's) that dlopen or the agent take again.
 */
static bool name__is_unsafe_to_interrupt(const char *name)
{
	return name__is_libc(name) || name__is_loader(name) || name__is_libdl(name) ||
	       name__starts(name, "libpthread") || name__starts(name, "libgcc_s") ||
	       name__starts(name, "libstdc++") || name__is_cuda(name);
}

static void maps__free(struct process_maps *maps)
{
	size_t i;

	for (i = 0; i < maps->count; i++)
		free(maps->entries[i].path);
	free(maps->entries);
	maps->entries = NULL;
	maps->count = 0;
}

static int maps__load(pid_t pid, struct process_maps *maps)
{
	char path[64], *text = NULL, *line, *next;
	size_t capacity = 0;
	ssize_t n;
	int err = 0;

	maps->entries = NULL;
	maps->count = 0;
	snprintf(path, sizeof(path), "/proc/%d/maps", pid);
	n = proc__read(path, &text);
	if (n < 0)
		return n;
	for (line = text; *line; line = next) {
		struct maps_entry entry = {};
		int name_at = 0;
		char *name;

		next = strchr(line, '\n');
		if (next)
			*next++ = '\0';
		else
			next = line + strlen(line);
		if (sscanf(line, "%lx-%lx %4s %lx %*x:%*x %*u %n", &entry.start, &entry.end,
			   entry.perms, &entry.offset, &name_at) < 4 ||
		    !name_at)
			continue;
		name = line + name_at;
		if (*name) {
			entry.path = strdup(name);
			if (!entry.path) {
				err = -ENOMEM;
				goto cleanup;
			}
		}
		if (maps->count == capacity) {
			struct maps_entry *bigger;

			capacity = capacity ? capacity * 2 : 256;
			bigger = realloc(maps->entries, capacity * sizeof(*bigger));
			if (!bigger) {
				free(entry.path);
				err = -ENOMEM;
				goto cleanup;
			}
			maps->entries = bigger;
		}
		maps->entries[maps->count++] = entry;
	}
cleanup:
	free(text);
	if (err)
		maps__free(maps);
	return err;
}

static const struct maps_entry *maps__find(const struct process_maps *maps, unsigned long address)
{
	size_t low = 0, high = maps->count;

	while (low < high) {
		size_t mid = low + (high - low) / 2;
		const struct maps_entry *entry = &maps->entries[mid];

		if (address < entry->start)
			high = mid;
		else if (address >= entry->end)
			low = mid + 1;
		else
			return entry;
	}
	return NULL;
}

/* The file name of a mapping, without " (deleted)"; "" for anonymous. */
static void entry__name(const struct maps_entry *entry, char *name, size_t size)
{
	size_t len;

	snprintf(name, size, "%s", entry && entry->path ? path__basename(entry->path) : "");
	len = strlen(name);
	if (len > 10 && strcmp(name + len - 10, " (deleted)") == 0)
		name[len - 10] = '\0';
}

int inject__process_has_cuda(pid_t pid, bool *has_cuda, char *cupti_path, size_t cupti_path_size)
{
	struct process_maps maps;
	bool cupti_found = false;
	char name[256];
	size_t i;
	int err;

	if (pid <= 0 || !has_cuda)
		return -EINVAL;
	*has_cuda = false;
	if (cupti_path && cupti_path_size)
		cupti_path[0] = '\0';
	err = maps__load(pid, &maps);
	if (err)
		return err;
	for (i = 0; i < maps.count; i++) {
		const struct maps_entry *entry = &maps.entries[i];

		if (!entry->path || entry->path[0] != '/')
			continue;
		entry__name(entry, name, sizeof(name));
		if (name__starts(name, "libcudart") || name__starts(name, "libcuda.so"))
			*has_cuda = true;
		if (!cupti_found && name__starts(name, "libcupti") && strstr(name, ".so")) {
			cupti_found = true;
			if (cupti_path && cupti_path_size) {
				size_t len = strlen(entry->path);

				if (len > 10 && strcmp(entry->path + len - 10, " (deleted)") == 0)
					len -= 10;
				if (len >= cupti_path_size) {
					err = -ENAMETOOLONG;
					goto cleanup;
				}
				memcpy(cupti_path, entry->path, len);
				cupti_path[len] = '\0';
			}
		}
	}
cleanup:
	maps__free(&maps);
	return err;
}

static bool elf_version_ready(void)
{
	static bool ready;

	if (!ready)
		ready = elf_version(EV_CURRENT) != EV_NONE;
	return ready;
}

struct symbol_want {
	const char *name;
	unsigned long *value;
	bool hidden; /* what was found is a non-default version */
};

/*
 * Looks up defined functions in an ELF object's dynamic symbols, preferring
 * the default version (dlopen@@GLIBC_2.34 over dlopen@GLIBC_2.2.5).  IFUNCs
 * are not taken: calling one would run its resolver.  *load_vaddr gets the
 * first PT_LOAD's page-aligned address.
 */
static int elf__lookup(Elf *elf, struct symbol_want *wants, size_t count, unsigned long *load_vaddr)
{
	Elf_Scn *scn = NULL, *dynsym = NULL;
	Elf_Data *symbols, *versions = NULL;
	GElf_Shdr shdr, dynsym_shdr = {};
	size_t phnum, i, j, nsyms;
	bool have_load = false;
	GElf_Ehdr ehdr;

	if (elf_kind(elf) != ELF_K_ELF || gelf_getclass(elf) != ELFCLASS64 ||
	    !gelf_getehdr(elf, &ehdr) || ehdr.e_machine != EM_X86_64 || ehdr.e_type != ET_DYN)
		return -ENOEXEC;
	if (load_vaddr) {
		if (elf_getphdrnum(elf, &phnum))
			return -ENOEXEC;
		for (i = 0; i < phnum; i++) {
			GElf_Phdr phdr;

			if (!gelf_getphdr(elf, i, &phdr) || phdr.p_type != PT_LOAD)
				continue;
			/* The first PT_LOAD maps file offset 0 at the load base. */
			if ((phdr.p_offset & ~4095UL) != 0)
				return -ENOEXEC;
			*load_vaddr = phdr.p_vaddr & ~4095UL;
			have_load = true;
			break;
		}
		if (!have_load)
			return -ENOEXEC;
	}
	while ((scn = elf_nextscn(elf, scn))) {
		if (!gelf_getshdr(scn, &shdr))
			return -ENOEXEC;
		if (shdr.sh_type == SHT_DYNSYM) {
			dynsym = scn;
			dynsym_shdr = shdr;
		} else if (shdr.sh_type == SHT_GNU_versym) {
			versions = elf_getdata(scn, NULL);
		}
	}
	if (!dynsym || !dynsym_shdr.sh_entsize)
		return -ENOEXEC;
	symbols = elf_getdata(dynsym, NULL);
	if (!symbols)
		return -ENOEXEC;
	nsyms = dynsym_shdr.sh_size / dynsym_shdr.sh_entsize;
	if (versions && versions->d_size < nsyms * sizeof(GElf_Versym))
		versions = NULL;
	for (i = 0; i < nsyms; i++) {
		const char *name;
		GElf_Sym sym;
		bool hidden;

		if (!gelf_getsym(symbols, i, &sym) || GELF_ST_TYPE(sym.st_info) != STT_FUNC ||
		    sym.st_shndx == SHN_UNDEF || !sym.st_value)
			continue;
		name = elf_strptr(elf, dynsym_shdr.sh_link, sym.st_name);
		if (!name)
			continue;
		hidden = versions && (((GElf_Versym *)versions->d_buf)[i] & 0x8000);
		for (j = 0; j < count; j++) {
			if (strcmp(name, wants[j].name))
				continue;
			if (!*wants[j].value || (wants[j].hidden && !hidden)) {
				*wants[j].value = sym.st_value;
				wants[j].hidden = hidden;
			}
		}
	}
	return 0;
}

/* A PIE executable is ET_DYN too, but dlopen() refuses it. */
static bool image__is_executable(Elf *elf)
{
	size_t phnum, i;

	if (elf_getphdrnum(elf, &phnum))
		return true;
	for (i = 0; i < phnum; i++) {
		GElf_Phdr phdr;

		if (gelf_getphdr(elf, i, &phdr) && phdr.p_type == PT_INTERP)
			return true;
	}
	return false;
}

static int image__check(const struct inject_request *request, struct inject_result *result)
{
	unsigned long start = 0;
	struct symbol_want want = {request->start_symbol, &start};
	Elf *elf;
	int err;

	if (!elf_version_ready())
		return -ENOTSUP;
	if (request->image_size < sizeof(Elf64_Ehdr) || memcmp(request->image, ELFMAG, SELFMAG)) {
		result__say(result, "the image is not an ELF file");
		return -ENOEXEC;
	}
	/* libelf only reads the image, whatever its prototype says. */
	elf = elf_memory((char *)request->image, request->image_size);
	if (!elf)
		return -ENOEXEC;
	err = elf__lookup(elf, &want, 1, NULL);
	if (!err && image__is_executable(elf))
		err = -ENOEXEC;
	elf_end(elf);
	if (err) {
		result__say(result, "the image is not an x86-64 shared library");
		return err;
	}
	if (!start) {
		result__say(result, "the image exports no function %s", request->start_symbol);
		return -ENOENT;
	}
	return 0;
}

/* Opens a mapped file as the target sees it, even in another mount namespace. */
static int maps__open_file(pid_t pid, const struct maps_entry *entry)
{
	char path[PATH_MAX];
	int fd;

	snprintf(path, sizeof(path), "/proc/%d/map_files/%lx-%lx", pid, entry->start, entry->end);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd >= 0)
		return fd;
	snprintf(path, sizeof(path), "/proc/%d/root%s", pid, entry->path);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	return fd >= 0 ? fd : -errno;
}

/* Resolves wants in the library whose mapped name matches. */
static int maps__resolve(pid_t pid, const struct process_maps *maps,
			 bool (*match)(const char *name), struct symbol_want *wants, size_t count,
			 bool *found)
{
	const struct maps_entry *base = NULL;
	unsigned long load_vaddr = 0, bias;
	char name[256];
	size_t i;
	Elf *elf;
	int fd, err;

	*found = false;
	for (i = 0; i < maps->count && !base; i++) {
		const struct maps_entry *entry = &maps->entries[i];

		if (!entry->path || entry->path[0] != '/' || entry->offset != 0)
			continue;
		entry__name(entry, name, sizeof(name));
		if (match(name))
			base = entry;
	}
	if (!base)
		return 0;
	*found = true;
	if (!elf_version_ready())
		return -ENOTSUP;
	fd = maps__open_file(pid, base);
	if (fd < 0)
		return fd;
	elf = elf_begin(fd, ELF_C_READ_MMAP, NULL);
	if (!elf) {
		close(fd);
		return -ENOEXEC;
	}
	for (i = 0; i < count; i++)
		*wants[i].value = 0;
	err = elf__lookup(elf, wants, count, &load_vaddr);
	elf_end(elf);
	close(fd);
	if (err)
		return err;
	bias = base->start - load_vaddr;
	for (i = 0; i < count; i++) {
		const struct maps_entry *entry;

		if (!*wants[i].value)
			continue;
		*wants[i].value += bias;
		/* Only ever jump into executable text of that same file. */
		entry = maps__find(maps, *wants[i].value);
		if (!entry || entry->perms[2] != 'x' || !entry->path ||
		    strcmp(entry->path, base->path))
			return -ENOEXEC;
	}
	return 0;
}

static int functions__resolve(pid_t pid, const struct process_maps *maps,
			      struct target_functions *functions, struct inject_result *result)
{
	struct symbol_want libc_wants[] = {
	    {"__errno_location", &functions->errno_location},
	    {"mmap", &functions->mmap},
	    {"mprotect", &functions->mprotect},
	    {"munmap", &functions->munmap},
	    {"close", &functions->close},
	    {"memfd_create", &functions->memfd_create},
	    {"syscall", &functions->syscall},
	    {"dlopen", &functions->dlopen},
	    {"dlsym", &functions->dlsym},
	    {"dlerror", &functions->dlerror},
	    {"dlclose", &functions->dlclose},
	};
	bool found;
	int err;

	memset(functions, 0, sizeof(*functions));
	err = maps__resolve(pid, maps, name__is_libc, libc_wants,
			    sizeof(libc_wants) / sizeof(libc_wants[0]), &found);
	if (err) {
		result__say(result, "cannot read the target's libc: %s", strerror(-err));
		return err;
	}
	if (!found) {
		result__say(result, "the target maps no glibc libc.so.6");
		return -ENOTSUP;
	}
	if (!functions->dlopen) {
		/* glibc before 2.34 keeps dlopen in libdl. */
		struct symbol_want dl_wants[] = {
		    {"dlopen", &functions->dlopen},
		    {"dlsym", &functions->dlsym},
		    {"dlerror", &functions->dlerror},
		    {"dlclose", &functions->dlclose},
		};

		err = maps__resolve(pid, maps, name__is_libdl, dl_wants, 4, &found);
		if (err)
			return err;
	}
	if (!functions->errno_location || !functions->mmap || !functions->mprotect ||
	    !functions->munmap || !functions->close ||
	    (!functions->memfd_create && !functions->syscall) || !functions->dlopen ||
	    !functions->dlsym || !functions->dlerror || !functions->dlclose) {
		result__say(
		    result,
		    "the target's libc lacks dlopen (glibc before 2.34 without libdl mapped?)");
		return -ENOTSUP;
	}
	return 0;
}

/* System calls a thread can be blocked in without holding a libc lock. */
static bool syscall__is_quiet_wait(long nr)
{
	switch (nr) {
	case SYS_read:
	case SYS_pread64:
	case SYS_readv:
	case SYS_preadv:
	case SYS_preadv2:
	case SYS_recvfrom:
	case SYS_recvmsg:
	case SYS_recvmmsg:
	case SYS_poll:
	case SYS_ppoll:
	case SYS_select:
	case SYS_pselect6:
	case SYS_epoll_wait:
	case SYS_epoll_pwait:
	case SYS_epoll_pwait2:
	case SYS_nanosleep:
	case SYS_clock_nanosleep:
	case SYS_pause:
	case SYS_rt_sigsuspend:
	case SYS_rt_sigtimedwait:
	case SYS_wait4:
	case SYS_waitid:
	case SYS_accept:
	case SYS_accept4:
	case SYS_msgrcv:
	case SYS_semtimedop:
	case SYS_io_getevents:
		return true;
	default:
		return false;
	}
}

/* System calls libc makes while holding its locks (malloc, stdio). */
static bool syscall__may_hold_locks(long nr)
{
	switch (nr) {
	case SYS_mmap:
	case SYS_munmap:
	case SYS_mremap:
	case SYS_mprotect:
	case SYS_brk:
	case SYS_madvise:
	case SYS_write:
	case SYS_writev:
	case SYS_pwrite64:
	case SYS_openat:
	case SYS_open:
	case SYS_lseek:
	case SYS_fstat:
	case SYS_newfstatat:
		return true;
	default:
		return false;
	}
}

/*
 * Does a word near the top of the stack point into CUDA's code?  Then the
 * thread is probably inside the driver (a blocked ioctl or poll of its own)
 * and may hold locks the agent's CUDA calls would wait for.  A data word
 * that happens to look like one only costs the thread its rank.
 */
static bool stack__has_cuda_frame(int mem_fd, const struct process_maps *maps, unsigned long sp)
{
	unsigned long words[STACK_SCAN_BYTES / sizeof(unsigned long)];
	char name[256];
	ssize_t n;
	size_t i;

	n = pread(mem_fd, words, sizeof(words), (off_t)sp);
	for (i = 0; n > 0 && i < (size_t)n / sizeof(words[0]); i++) {
		const struct maps_entry *entry = maps__find(maps, words[i]);

		if (!entry || entry->perms[2] != 'x' || !entry->path)
			continue;
		entry__name(entry, name, sizeof(name));
		if (name__is_cuda(name))
			return true;
	}
	return false;
}

struct candidate {
	pid_t tid;
	int score;
};

static int candidate__compare(const void *a, const void *b)
{
	const struct candidate *x = a, *y = b;

	if (x->score != y->score)
		return y->score - x->score;
	return x->tid - y->tid;
}

/*
 * Scores the target's threads from /proc without stopping any: a thread
 * quietly blocked in a known wait (nanosleep, read, poll...) first, then
 * one in futex, then any other sleeper, then running threads; the main
 * thread breaks ties; a thread with CUDA code near the top of its stack
 * (blocked inside the driver, perhaps holding its locks) comes last.
 * Threads in D state or with a tracer are skipped; -EBUSY when the process
 * is stopped by job control.
 */
static int candidates__list(pid_t pid, const struct process_maps *maps, int mem_fd,
			    struct candidate **out, size_t *count)
{
	struct candidate *list = NULL;
	size_t capacity = 0, n = 0;
	char path[64];
	struct dirent *dent;
	DIR *dir;
	int err = 0;

	snprintf(path, sizeof(path), "/proc/%d/task", pid);
	dir = opendir(path);
	if (!dir)
		return errno == ENOENT ? -ESRCH : -errno;
	while ((dent = readdir(dir))) {
		struct proc_status status;
		pid_t tid = atoi(dent->d_name);
		char *syscall_text = NULL, name[256];
		long nr = -2;
		unsigned long sp = 0, pc = 0;
		int score;

		if (tid <= 0 || status__read(pid, tid, &status))
			continue;
		if (status.state == 'T') {
			err = -EBUSY; /* stopped by job control since we looked */
			goto cleanup;
		}
		if (status.tracer_pid || status.shadow_stack ||
		    (status.blocked & SIGNAL_BIT(SIGSEGV)))
			continue;
		if (status.state != 'S' && status.state != 'R')
			continue;
		snprintf(path, sizeof(path), "/proc/%d/task/%d/syscall", pid, tid);
		if (proc__read(path, &syscall_text) > 0) {
			if (strncmp(syscall_text, "running", 7))
				sscanf(syscall_text, "%ld %*s %*s %*s %*s %*s %*s %lx %lx", &nr,
				       &sp, &pc);
			free(syscall_text);
		}
		if (status.state == 'R' || nr < 0) {
			score = 10;
		} else {
			entry__name(maps__find(maps, pc), name, sizeof(name));
			if (name__is_loader(name) || syscall__may_hold_locks(nr))
				score = 1;
			else if (syscall__is_quiet_wait(nr))
				score = SCORE_QUIET_WAIT;
			else if (nr == SYS_futex)
				score = 50;
			else
				score = 30;
			if (stack__has_cuda_frame(mem_fd, maps, sp))
				score = 5;
		}
		if (tid == pid)
			score += 5;
		if (n == capacity) {
			struct candidate *bigger;

			capacity = capacity ? capacity * 2 : 16;
			bigger = realloc(list, capacity * sizeof(*bigger));
			if (!bigger) {
				err = -ENOMEM;
				goto cleanup;
			}
			list = bigger;
		}
		list[n].tid = tid;
		list[n].score = score;
		n++;
	}
	qsort(list, n, sizeof(*list), candidate__compare);
cleanup:
	closedir(dir);
	if (err) {
		free(list);
		return err;
	}
	*out = list;
	*count = n;
	return 0;
}

static int tracee__read(struct tracee *tracee, unsigned long address, void *buf, size_t size)
{
	ssize_t n = pread(tracee->mem_fd, buf, size, (off_t)address);

	if (n < 0)
		return -errno;
	return (size_t)n == size ? 0 : -EIO;
}

static int tracee__write(struct tracee *tracee, unsigned long address, const void *buf, size_t size)
{
	ssize_t n = pwrite(tracee->mem_fd, buf, size, (off_t)address);

	if (n < 0)
		return -errno;
	return (size_t)n == size ? 0 : -EIO;
}

static int ptrace__error(void)
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
			*signo = WSTOPSIG(status);
			if ((status >> 16) == PTRACE_EVENT_STOP) {
				*kind = *signo == SIGTRAP ? STOP_INTERRUPT : STOP_GROUP;
			} else if ((status >> 16) == 0) {
				*kind = STOP_SIGNAL;
				tracee->signal_stop = true;
			} else {
				*kind = STOP_INTERRUPT; /* no PTRACE_O_* options are set */
			}
			return 0;
		}
		if (now_ns() >= tracee->deadline_ns)
			return -ETIMEDOUT;
		sleep_us(delay_us);
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

static int tracee__resume(struct tracee *tracee)
{
	if (ptrace(PTRACE_CONT, tracee->tid, 0, 0) < 0)
		return ptrace__error();
	tracee->stopped = false;
	tracee->signal_stop = false;
	return 0;
}

/*
 * Calls fn(args) in the thread with the stack pointer sp, and waits for it
 * to return to address 0.  Signals that arrive meanwhile are held back.
 */
static int tracee__call(struct tracee *tracee, struct inject_result *result, unsigned long fn,
			unsigned long sp, const unsigned long *args, size_t nargs,
			unsigned long *ret)
{
	struct user_regs_struct regs = tracee->saved;
	unsigned long argv[6] = {}, zero = 0;
	enum stop_kind kind;
	siginfo_t info;
	int signo, err;

	if (nargs)
		memcpy(argv, args, nargs * sizeof(*args));
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
	err = tracee__write(tracee, sp, &zero, sizeof(zero));
	if (err)
		return err;
	if (ptrace(PTRACE_SETREGS, tracee->tid, 0, &regs) < 0)
		return ptrace__error();
	tracee->regs_dirty = true;
	err = tracee__resume(tracee);
	if (err)
		return err;
	for (;;) {
		err = tracee__wait(tracee, &kind, &signo);
		if (err)
			return err;
		if (kind == STOP_SIGNAL) {
			if (ptrace(PTRACE_GETSIGINFO, tracee->tid, 0, &info) < 0)
				return ptrace__error();
			if (ptrace(PTRACE_GETREGS, tracee->tid, 0, &regs) < 0)
				return ptrace__error();
			if (signo == SIGSEGV && info.si_code > 0 && regs.rip == 0 &&
			    regs.rsp == sp + 8) {
				*ret = regs.rax;
				return 0;
			}
			if (info.si_code > 0 && (SIGNAL_BIT(signo) & SYNCHRONOUS_SIGNALS)) {
				result__say(result, "signal %d in the injected call at %#llx",
					    signo, regs.rip);
				return -EFAULT;
			}
			tracee__hold_signal(tracee, &info);
		}
		tracee__note_restart(tracee);
		/* Group-stops are resumed too: detaching re-enters the group
		 * stop, so the call can finish first. */
		err = tracee__resume(tracee);
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
	tracee->deadline_ns = now_ns() + RECOVERY_MS * 1000000ULL;
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

/* Calls fn on the private stack (or the thread's own, before it exists). */
static int tracee__call_checked(struct tracee *tracee, struct inject_result *result,
				unsigned long fn, bool own_stack, const unsigned long *args,
				size_t nargs, unsigned long *ret)
{
	unsigned long sp = own_stack ? tracee->thread_sp : tracee->private_sp;
	int err;

	err = tracee__call(tracee, result, fn, sp, args, nargs, ret);
	if (err == -ETIMEDOUT) {
		result__say(result,
			    "a call into the target did not return in time; it was cut off");
		if (tracee__interrupt(tracee))
			tracee->stopped = false;
	}
	return err;
}

/* errno of the target thread after a failed libc call. */
static int tracee__remote_errno(struct tracee *tracee)
{
	int value = 0;

	if (!tracee->errno_address ||
	    tracee__read(tracee, tracee->errno_address, &value, sizeof(value)) || value <= 0)
		return -EIO;
	return -value;
}

static void tracee__read_string(struct tracee *tracee, unsigned long address, char *buf,
				size_t size)
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

static int tracee__save_fpu(struct tracee *tracee)
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
static int tracee__clean_fpu(struct tracee *tracee)
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

static bool tracee__is_syscall_insn(struct tracee *tracee, unsigned long address)
{
	unsigned char insn[2];

	return tracee__read(tracee, address, insn, 2) == 0 && insn[0] == 0x0f && insn[1] == 0x05;
}

/*
 * The registers to put back.  Left as they were, an interrupted restartable
 * call (orig_rax >= 0, rax -ERESTARTSYS/-ERESTARTNOINTR/-ERESTARTNOHAND/
 * -ERESTART_RESTARTBLOCK) is restarted by the kernel itself when the thread
 * leaves this stop: rip back over the syscall instruction and rax =
 * orig_rax (restart_syscall for RESTARTBLOCK), or -EINTR if a re-delivered
 * signal's handler lacks SA_RESTART, exactly as without us.  Two cases need
 * us: a RESTARTBLOCK whose restart_block our calls overwrote, and -EINTR,
 * which calls like epoll_wait return for the interrupt itself; both are
 * restarted from the start by rewinding rip by hand.
 */
static void tracee__final_regs(struct tracee *tracee, struct user_regs_struct *regs)
{
	long nr = (long)regs->orig_rax, ret = (long)regs->rax;
	bool rewind = false;

	if (nr < 0)
		return;
	if (ret == -KERNEL_ERESTART_RESTARTBLOCK && tracee->restart_block_clobbered) {
		rewind = true;
	} else if (ret == -EINTR && !tracee->held_count) {
		struct proc_status thread, process;

		/* Unless a handler is about to run, for a signal that came
		 * meanwhile: then -EINTR is the right answer. */
		if (!status__read(tracee->pid, tracee->tid, &thread) &&
		    !status__read(tracee->pid, 0, &process) &&
		    !((thread.pending | process.shared_pending) & ~tracee->saved_mask &
		      process.caught))
			rewind = true;
	}
	if (rewind && tracee__is_syscall_insn(tracee, regs->rip - 2)) {
		regs->rip -= 2;
		regs->rax = regs->orig_rax; /* no error code: the kernel leaves it alone */
	}
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
 * Puts everything back and lets the thread go.  A held signal rides on the
 * detach when we are in a signal-delivery-stop, so it is delivered with its
 * own siginfo at the same point the kernel would have; others are queued.
 */
static void tracee__release(struct tracee *tracee, struct inject_result *result)
{
	unsigned long signal = 0;
	unsigned int i, first = 0;

	if (!tracee->seized)
		return;
	if (!tracee->stopped) {
		/* It never stopped, or it is gone: the kernel lets it go when
		 * this thread (the tracer) exits. */
		return;
	}
	if (tracee->errno_saved)
		tracee__write(tracee, tracee->errno_address, &tracee->saved_errno, sizeof(int));
	if (tracee->mask_dirty &&
	    ptrace(PTRACE_SETSIGMASK, tracee->tid, sizeof(uint64_t), &tracee->saved_mask) < 0)
		result__say(result, "could not restore the signal mask: %s", strerror(errno));
	if (tracee->regs_dirty) {
		struct user_regs_struct regs = tracee->saved;

		tracee__final_regs(tracee, &regs);
		if (ptrace(PTRACE_SETREGS, tracee->tid, 0, &regs) < 0)
			result__say(result, "could not restore the registers: %s", strerror(errno));
	}
	if (tracee->fpu_dirty) {
		struct iovec iov = {tracee->fpu, tracee->fpu_size};

		if (ptrace(PTRACE_SETREGSET, tracee->tid, tracee->fpu_type, &iov) < 0)
			result__say(result, "could not restore the FPU state: %s", strerror(errno));
	}
	if (tracee->signal_stop && tracee->held_count &&
	    ptrace(PTRACE_SETSIGINFO, tracee->tid, 0, &tracee->held[0]) == 0) {
		signal = tracee->held[0].si_signo;
		first = 1;
	}
	for (i = first; i < tracee->held_count; i++)
		tracee__requeue(tracee, &tracee->held[i]);
	if (ptrace(PTRACE_DETACH, tracee->tid, 0, signal) < 0)
		result__say(result, "could not detach: %s", strerror(errno));
	tracee->seized = false;
	tracee->stopped = false;
	if (result) {
		result->signals_held += tracee->held_count;
		if (tracee->held_lost)
			result__say(result, "%u signals arrived during the injection and were lost",
				    tracee->held_lost);
	}
}

/*
 * Seizes a thread and waits for it to stop; 0 when stopped, with its
 * registers saved.  A signal-delivery-stop serves as well as the interrupt:
 * that signal is held and re-delivered on detach.
 */
static int tracee__seize(struct tracee *tracee, unsigned long long deadline_ns)
{
	enum stop_kind kind;
	siginfo_t info;
	int signo, err;

	if (ptrace(PTRACE_SEIZE, tracee->tid, 0, 0) < 0)
		return errno == EPERM ? -EPERM : ptrace__error();
	tracee->seized = true;
	tracee->seized_ns = now_ns();
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
		if (ptrace(PTRACE_GETSIGINFO, tracee->tid, 0, &info) < 0)
			return ptrace__error();
		tracee__hold_signal(tracee, &info);
	}
	if (ptrace(PTRACE_GETREGS, tracee->tid, 0, &tracee->saved) < 0)
		return ptrace__error();
	return 0;
}

/*
 * Is the stopped thread somewhere dlopen can run from?  1 yes, 0 not now
 * (try another thread or later), or -errno to give up.
 */
static int tracee__is_safe(struct tracee *tracee, const struct process_maps *maps,
			   struct inject_result *result)
{
	const struct user_regs_struct *regs = &tracee->saved;
	const struct maps_entry *code, *stack;
	char name[256];

	if (regs->cs != X86_USER64_CS) {
		result__say(result, "thread %d is not running 64-bit code", tracee->tid);
		return -ENOTSUP;
	}
	code = maps__find(maps, regs->rip);
	entry__name(code, name, sizeof(name));
	if ((long)regs->orig_rax >= 0) {
		if (syscall__may_hold_locks((long)regs->orig_rax) || name__is_loader(name) ||
		    stack__has_cuda_frame(tracee->mem_fd, maps, regs->rsp))
			return 0;
	} else if (code && code->path && name__is_unsafe_to_interrupt(name)) {
		return 0;
	}
	/* The few calls made on the thread's own stack need 1 KiB below
	 * the red zone; everything else runs on a private stack. */
	tracee->thread_sp = ((regs->rsp - 128 - 256) & ~15UL) - 8;
	stack = maps__find(maps, regs->rsp);
	if (!stack || stack->perms[0] != 'r' || stack->perms[1] != 'w' ||
	    tracee->thread_sp - 1024 < stack->start)
		return 0;
	return 1;
}

/*
 * Writes the memfd name, the start symbol and the argument at the top of
 * the private mapping; *path is room after them for "/proc/self/fd/N".
 */
static int tracee__write_strings(struct tracee *tracee, const struct inject_request *request,
				 unsigned long *name, unsigned long *symbol,
				 unsigned long *argument, unsigned long *path)
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

/* Copies the image into the memfd the target just made, from here. */
static int memfd__fill(pid_t pid, int remote_fd, const struct inject_request *request,
		       struct inject_result *result)
{
	const char *memfd_name = request->memfd_name ? request->memfd_name : "llmprof-agent";
	char path[64], link[256], want[256];
	const char *data = request->image;
	size_t done = 0;
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
		result__say(result, "descriptor %d in the target is %s, not the memfd", remote_fd,
			    link);
		return -ESTALE;
	}
	fd = open(path, O_WRONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
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

/* The calls themselves, on a stopped, safe thread. */
static int injection__calls(struct injection *injection, struct tracee *tracee)
{
	const struct target_functions *fn = &injection->functions;
	const struct inject_request *request = injection->request;
	struct inject_result *result = injection->result;
	unsigned long ret, handle, start, name, symbol, argument, path, args[6];
	char text[200];
	int err;

	err = tracee__save_fpu(tracee);
	if (err)
		return err;
	err = tracee__clean_fpu(tracee);
	if (err)
		return err;

	/* Asynchronous signals wait in the kernel's queue until we are done;
	 * faults stay deliverable, so that our return trap never resets a
	 * handler (force_sig() on a blocked signal does).  While ppoll(),
	 * pselect() or sigsuspend() have a temporary mask in force, this reads
	 * the thread's real one, and setting a mask drops the temporary one:
	 * the restarted call puts it back itself. */
	if (ptrace(PTRACE_GETSIGMASK, tracee->tid, sizeof(uint64_t), &tracee->saved_mask) < 0)
		return ptrace__error();
	if (tracee->saved_mask & SIGNAL_BIT(SIGSEGV)) {
		result__say(result, "thread %d blocks SIGSEGV", tracee->tid);
		return -ENOTSUP;
	}
	{
		uint64_t mask = tracee->saved_mask | ~SYNCHRONOUS_SIGNALS;

		tracee->mask_dirty = true;
		if (ptrace(PTRACE_SETSIGMASK, tracee->tid, sizeof(uint64_t), &mask) < 0)
			return ptrace__error();
	}

	/* errno is the thread's own; our calls change it. */
	err = tracee__call_checked(tracee, result, fn->errno_location, true, NULL, 0, &ret);
	if (err)
		return err;
	tracee->errno_address = ret;
	err = tracee__read(tracee, ret, &tracee->saved_errno, sizeof(int));
	if (err)
		return err;
	tracee->errno_saved = true;

	/* A private stack with a guard page below it; the strings at its top. */
	args[0] = 0;
	args[1] = PRIVATE_GUARD_SIZE + PRIVATE_STACK_SIZE;
	args[2] = PROT_READ | PROT_WRITE;
	args[3] = MAP_PRIVATE | MAP_ANONYMOUS | MAP_STACK | MAP_NORESERVE;
	args[4] = (unsigned long)-1;
	args[5] = 0;
	err = tracee__call_checked(tracee, result, fn->mmap, true, args, 6, &ret);
	if (err)
		return err;
	if (ret >= (unsigned long)-4095) {
		result__say(result, "mmap in the target failed");
		return tracee__remote_errno(tracee);
	}
	tracee->private_base = ret;
	tracee->strings = ret + PRIVATE_GUARD_SIZE + PRIVATE_STACK_SIZE - STRINGS_AREA_SIZE;
	tracee->private_sp = (tracee->strings & ~15UL) - 64 - 8;
	args[0] = tracee->private_base;
	args[1] = PRIVATE_GUARD_SIZE;
	args[2] = PROT_NONE;
	err = tracee__call_checked(tracee, result, fn->mprotect, false, args, 3, &ret);
	if (err)
		return err;
	err = tracee__write_strings(tracee, request, &name, &symbol, &argument, &path);
	if (err)
		return err;

	args[0] = name;
	args[1] = MFD_CLOEXEC;
	if (fn->memfd_create) {
		err = tracee__call_checked(tracee, result, fn->memfd_create, false, args, 2, &ret);
	} else {
		args[2] = args[1];
		args[1] = args[0];
		args[0] = SYS_memfd_create;
		err = tracee__call_checked(tracee, result, fn->syscall, false, args, 3, &ret);
	}
	if (err)
		return err;
	if ((int)ret < 0) {
		result__say(result, "memfd_create in the target failed");
		return tracee__remote_errno(tracee);
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
	err = tracee__call_checked(tracee, result, fn->dlopen, false, args, 2, &handle);
	if (err)
		return err;
	args[0] = tracee->remote_memfd;
	if (!tracee__call_checked(tracee, result, fn->close, false, args, 1, &ret))
		tracee->remote_memfd = -1;
	if (!handle) {
		if (!tracee__call_checked(tracee, result, fn->dlerror, false, NULL, 0, &ret)) {
			tracee__read_string(tracee, ret, text, sizeof(text));
			result__say(result, "dlopen in the target failed: %s", text);
		}
		return -ELIBBAD;
	}

	args[0] = handle;
	args[1] = symbol;
	err = tracee__call_checked(tracee, result, fn->dlsym, false, args, 2, &start);
	if (err)
		return err;
	if (!start) {
		result__say(result, "dlsym(%s) in the target failed", request->start_symbol);
		args[0] = handle;
		tracee__call_checked(tracee, result, fn->dlclose, false, args, 1, &ret);
		return -ENOENT;
	}

	args[0] = argument;
	err = tracee__call_checked(tracee, result, start, false, args, 1, &ret);
	if (err)
		return err;
	result->start_result = (int)ret;
	return 0;
}

/* Undoes what the calls left in the target: the memfd and private stack. */
static void injection__tidy(struct injection *injection, struct tracee *tracee)
{
	const struct target_functions *fn = &injection->functions;
	unsigned long args[2], ret;

	if (!tracee->stopped)
		return;
	/* The tidying gets its own time, even when the calls used up theirs. */
	if (tracee->deadline_ns < now_ns() + RECOVERY_MS * 1000000ULL)
		tracee->deadline_ns = now_ns() + RECOVERY_MS * 1000000ULL;
	/* A cut-off call may still own frames on the private stack (a thread
	 * it started could be told about them): leave it mapped then. */
	if (tracee->abandoned) {
		if (tracee->private_base)
			result__say(injection->result,
				    "a 1 MiB stack stays mapped in the target at %#lx",
				    tracee->private_base);
	}
	if (tracee->remote_memfd >= 0) {
		args[0] = tracee->remote_memfd;
		if (!tracee__call_checked(tracee, injection->result, fn->close,
					  tracee->abandoned || !tracee->private_base, args, 1,
					  &ret))
			tracee->remote_memfd = -1;
	}
	if (tracee->private_base && !tracee->abandoned && tracee->stopped) {
		args[0] = tracee->private_base;
		args[1] = PRIVATE_GUARD_SIZE + PRIVATE_STACK_SIZE;
		if (!tracee__call_checked(tracee, injection->result, fn->munmap, true, args, 2,
					  &ret))
			tracee->private_base = 0;
	}
}

static int injection__on_thread(struct injection *injection, struct tracee *tracee)
{
	const struct inject_request *request = injection->request;
	int err;

	if (request->hold_stopped_ms > 0)
		sleep_us(request->hold_stopped_ms * 1000U);
	err = injection__calls(injection, tracee);
	if (tracee->stopped)
		injection__tidy(injection, tracee);
	return err;
}

static int injection__run(struct injection *injection)
{
	const struct inject_request *request = injection->request;
	struct inject_result *result = injection->result;
	unsigned long long deadline_ns, quiet_until_ns, start_ns = now_ns();
	struct proc_status status;
	struct candidate *list = NULL;
	struct tracee tracee;
	size_t count = 0, i;
	char path[64];
	int mem_fd = -1, err, timeout_ms;

	timeout_ms = request->timeout_ms > 0 ? request->timeout_ms : INJECT_DEFAULT_TIMEOUT_MS;
	deadline_ns = start_ns + (unsigned long long)timeout_ms * 1000000ULL;
	quiet_until_ns = start_ns + QUIET_WINDOW_MS * 1000000ULL;

	err = image__check(request, result);
	if (err)
		return err;
	err = status__read(injection->pid, 0, &status);
	if (err)
		return err;
	if (status.tracer_pid) {
		result__say(result, "process %d is already traced by %d", injection->pid,
			    status.tracer_pid);
		return -EBUSY;
	}
	if (status.state == 'T' || status.state == 't') {
		result__say(result, "process %d is stopped", injection->pid);
		return -EBUSY;
	}
	if (status.state == 'X')
		return -ESRCH;
	if (status.state == 'Z') {
		result__say(result, "the main thread of process %d has exited", injection->pid);
		return -ENOTSUP;
	}
	if (status.seccomp == 1) {
		result__say(result, "process %d runs in seccomp strict mode", injection->pid);
		return -ENOTSUP;
	}
	if (status.ignored & SIGNAL_BIT(SIGSEGV)) {
		result__say(result, "process %d ignores SIGSEGV", injection->pid);
		return -ENOTSUP;
	}
	err = maps__load(injection->pid, &injection->maps);
	if (err)
		return err;
	if (maps__find(&injection->maps, 0)) {
		result__say(result, "process %d maps page 0, where calls return", injection->pid);
		return -ENOTSUP;
	}
	err = functions__resolve(injection->pid, &injection->maps, &injection->functions, result);
	if (err)
		return err;
	snprintf(path, sizeof(path), "/proc/%d/mem", injection->pid);
	mem_fd = open(path, O_RDWR | O_CLOEXEC);
	if (mem_fd < 0)
		return errno == ENOENT ? -ESRCH : -errno;

	err = -EAGAIN;
	while (err == -EAGAIN && now_ns() < deadline_ns) {
		free(list);
		list = NULL;
		err = candidates__list(injection->pid, &injection->maps, mem_fd, &list, &count);
		if (err == -EBUSY)
			result__say(result, "process %d is stopped", injection->pid);
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
			if (list[i].score < SCORE_QUIET_WAIT && now_ns() < quiet_until_ns)
				break;

			memset(&tracee, 0, sizeof(tracee));
			tracee.pid = injection->pid;
			tracee.tid = list[i].tid;
			tracee.mem_fd = mem_fd;
			tracee.remote_memfd = -1;
			result->attempts++;
			err = tracee__seize(&tracee, deadline_ns);
			if (err == -EBUSY) {
				result__say(result, "process %d is stopped", injection->pid);
				tracee__release(&tracee, result);
				break;
			}
			if (err) {
				if (err == -ETIMEDOUT)
					result__say(result, "thread %d did not stop", tracee.tid);
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
			result->stopped_ns = now_ns() - tracee.seized_ns;
			free(tracee.fpu);
			goto cleanup;
		}
		if (err == -EAGAIN)
			sleep_us(now_ns() < quiet_until_ns ? 1000 : 2000);
	}
	if (err == -EAGAIN)
		result__say(result, "no thread of process %d was in a safe state", injection->pid);
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
	unsigned long long start_ns = now_ns();
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
	maps__free(&injection.maps);
	result->total_ns = now_ns() - start_ns;
	if (injection.err)
		report__debug("inject: process %d: %s%s%s", pid, strerror(-injection.err),
			      result->message[0] ? ": " : "", result->message);
	return injection.err;
}

#else /* !__x86_64__ */

int inject__process_has_cuda(pid_t pid, bool *has_cuda, char *cupti_path, size_t cupti_path_size)
{
	return -ENOTSUP;
}

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
