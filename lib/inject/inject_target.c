// SPDX-License-Identifier: GPL-2.0
/*
 * The injector's look at the target before anything is stopped: its
 * /proc status and maps, the functions of its own libc (from the ELF file
 * it mapped), the image we are asked to load, and which of its threads is
 * safest to borrow.  Nothing here writes to the target.
 */
#include <dirent.h>
#include <elf.h>
#include <errno.h>
#include <fcntl.h>
#include <gelf.h>
#include <sys/stat.h>
#include <libelf.h>
#include <limits.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "base/procfs.h"
#include "inject/inject.h"
#include "inject/inject_internal.h"

#if defined(__x86_64__)

void inject__sleep_us(unsigned int us)
{
	struct timespec ts = {.tv_sec = us / 1000000, .tv_nsec = (us % 1000000) * 1000L};

	while (nanosleep(&ts, &ts) < 0 && errno == EINTR)
		;
}

void inject_result__say(struct inject_result *result, const char *fmt, ...)
{
	va_list ap;

	if (result->message[0])
		return; /* the first reason is the one that matters */
	va_start(ap, fmt);
	vsnprintf(result->message, sizeof(result->message), fmt, ap);
	va_end(ap);
}

/* Reads a small /proc file whole; NUL-terminated.  Bytes read or -errno. */
ssize_t inject_proc__read(const char *path, char **out)
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

int target_status__read(pid_t pid, pid_t tid, struct proc_status *status)
{
	char path[64], *text = NULL, *line;
	ssize_t n;

	if (tid)
		snprintf(path, sizeof(path), "/proc/%d/task/%d/status", pid, tid);
	else
		snprintf(path, sizeof(path), "/proc/%d/status", pid);
	n = inject_proc__read(path, &text);
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

bool library_name__is_loader(const char *name)
{
	return name__starts(name, "ld-linux") || name__starts(name, "ld-2.") ||
	       name__starts(name, "ld64.so");
}

bool library_name__is_cuda(const char *name)
{
	return name__starts(name, "libcuda") || name__starts(name, "libcupti") ||
	       name__starts(name, "libnvidia");
}

/*
 * Libraries a computing thread must not be stopped inside: it could hold
 * their internal locks (malloc arenas, the loader lock, the unwinder's, the
 * CUDA driver's) that dlopen or the agent take again.  The allocators that
 * replace malloc (jemalloc, tcmalloc, mimalloc: common under PyTorch and
 * inference servers) hold arena locks as glibc's does.
 */
bool library_name__is_unsafe_to_interrupt(const char *name)
{
	return name__is_libc(name) || library_name__is_loader(name) || name__is_libdl(name) ||
	       name__starts(name, "libpthread") || name__starts(name, "libgcc_s") ||
	       name__starts(name, "libstdc++") || library_name__is_cuda(name) ||
	       name__starts(name, "libjemalloc") || name__starts(name, "libtcmalloc") ||
	       name__starts(name, "libmimalloc");
}

void target_maps__free(struct process_maps *maps)
{
	size_t i;

	for (i = 0; i < maps->count; i++)
		free(maps->entries[i].path);
	free(maps->entries);
	maps->entries = NULL;
	maps->count = 0;
}

int target_maps__load(pid_t pid, struct process_maps *maps)
{
	char path[64], *text = NULL, *line, *next;
	size_t capacity = 0;
	ssize_t n;
	int err = 0;

	maps->entries = NULL;
	maps->count = 0;
	snprintf(path, sizeof(path), "/proc/%d/maps", pid);
	n = inject_proc__read(path, &text);
	if (n < 0)
		return n;
	for (line = text; *line; line = next) {
		struct maps_entry entry = {};
		struct procfs_mapping m;
		char *name;

		next = strchr(line, '\n');
		if (next)
			*next++ = '\0';
		else
			next = line + strlen(line);
		if (procfs__parse_mapping(line, &m))
			continue;
		entry.start = m.start;
		entry.end = m.end;
		entry.offset = m.offset;
		memcpy(entry.perms, m.perms, sizeof(m.perms));
		name = m.path;
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
		target_maps__free(maps);
	return err;
}

const struct maps_entry *target_maps__find(const struct process_maps *maps, unsigned long address)
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
void maps_entry__name(const struct maps_entry *entry, char *name, size_t size)
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
	err = target_maps__load(pid, &maps);
	if (err)
		return err;
	for (i = 0; i < maps.count; i++) {
		const struct maps_entry *entry = &maps.entries[i];

		if (!entry->path || entry->path[0] != '/')
			continue;
		maps_entry__name(entry, name, sizeof(name));
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
	target_maps__free(&maps);
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

int inject_image__check(const struct inject_request *request, struct inject_result *result,
			unsigned long *start_offset)
{
	unsigned long start = 0;
	struct symbol_want want = {request->start_symbol, &start};
	Elf *elf;
	int err;

	if (!elf_version_ready())
		return -ENOTSUP;
	if (request->image_size < sizeof(Elf64_Ehdr) || memcmp(request->image, ELFMAG, SELFMAG)) {
		inject_result__say(result, "the image is not an ELF file");
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
		inject_result__say(result, "the image is not an x86-64 shared library");
		return err;
	}
	if (!start) {
		inject_result__say(result, "the image exports no function %s",
				   request->start_symbol);
		return -ENOENT;
	}
	*start_offset = start;
	return 0;
}

/* Does the file open on fd hold exactly the image's bytes? */
static bool file__equals(int fd, const void *image, size_t size)
{
	char buf[65536];
	size_t done = 0;
	struct stat st;

	if (fstat(fd, &st) || (size_t)st.st_size != size)
		return false;
	while (done < size) {
		ssize_t n = pread(fd, buf, size - done < sizeof(buf) ? size - done : sizeof(buf),
				  (off_t)done);

		if (n <= 0 || memcmp(buf, (const char *)image + done, (size_t)n))
			return false;
		done += (size_t)n;
	}
	return true;
}

static int maps__open_file(pid_t pid, const struct maps_entry *entry);

int inject_image__find_loaded(pid_t pid, const struct process_maps *maps,
			      const struct inject_request *request, unsigned long *bias,
			      unsigned long *inode)
{
	const char *memfd_name = request->memfd_name ? request->memfd_name : "llmprof-agent";
	char want[256];
	size_t i;

	snprintf(want, sizeof(want), "/memfd:%s (deleted)", memfd_name);
	/* The newest copy last: an older llmprof's copy differs in its bytes. */
	for (i = maps->count; i-- > 0;) {
		const struct maps_entry *entry = &maps->entries[i];
		struct stat st;
		bool same;
		int fd;

		if (!entry->path || entry->offset || strcmp(entry->path, want))
			continue;
		fd = maps__open_file(pid, entry);
		if (fd < 0)
			continue;
		same = file__equals(fd, request->image, request->image_size) && !fstat(fd, &st);
		close(fd);
		if (!same)
			continue;
		/* A shared object's first segment maps offset 0 at vaddr 0. */
		*bias = entry->start;
		*inode = (unsigned long)st.st_ino;
		return 0;
	}
	return -ENOENT;
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

/*
 * Finds glibc's __restore_rt (mov $15,%rax; syscall), the signal return
 * trampoline, in the executable segments: it is no dynamic symbol.  Its
 * address without the load bias, or 0.
 */
static unsigned long elf__find_restore_rt(Elf *elf)
{
	static const unsigned char code[] = {0x48, 0xc7, 0xc0, 0x0f, 0x00, 0x00, 0x00, 0x0f, 0x05};
	size_t phnum, i, file_size;
	const char *file = elf_rawfile(elf, &file_size);

	if (!file || elf_getphdrnum(elf, &phnum))
		return 0;
	for (i = 0; i < phnum; i++) {
		const char *hit;
		GElf_Phdr phdr;

		if (!gelf_getphdr(elf, i, &phdr) || phdr.p_type != PT_LOAD ||
		    !(phdr.p_flags & PF_X) || phdr.p_offset > file_size ||
		    phdr.p_filesz > file_size - phdr.p_offset)
			continue;
		hit = memmem(file + phdr.p_offset, phdr.p_filesz, code, sizeof(code));
		if (hit)
			return phdr.p_vaddr + (unsigned long)(hit - (file + phdr.p_offset));
	}
	return 0;
}

/* Resolves wants in the library whose mapped name matches (and, with
 * restore_rt, finds that too). */
static int maps__resolve(pid_t pid, const struct process_maps *maps,
			 bool (*match)(const char *name), struct symbol_want *wants, size_t count,
			 bool *found, unsigned long *restore_rt)
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
		maps_entry__name(entry, name, sizeof(name));
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
	if (!err && restore_rt)
		*restore_rt = elf__find_restore_rt(elf);
	elf_end(elf);
	close(fd);
	if (err)
		return err;
	bias = base->start - load_vaddr;
	if (restore_rt && *restore_rt) {
		const struct maps_entry *entry = target_maps__find(maps, *restore_rt + bias);

		*restore_rt = entry && entry->perms[2] == 'x' && entry->path &&
				      !strcmp(entry->path, base->path)
				  ? *restore_rt + bias
				  : 0;
	}
	for (i = 0; i < count; i++) {
		const struct maps_entry *entry;

		if (!*wants[i].value)
			continue;
		*wants[i].value += bias;
		/* Only ever jump into executable text of that same file. */
		entry = target_maps__find(maps, *wants[i].value);
		if (!entry || entry->perms[2] != 'x' || !entry->path ||
		    strcmp(entry->path, base->path))
			return -ENOEXEC;
	}
	return 0;
}

int target_functions__resolve(pid_t pid, const struct process_maps *maps,
			      struct target_functions *functions, struct inject_result *result)
{
	struct symbol_want libc_wants[] = {
	    {"__errno_location", &functions->errno_location},
	    {"mmap", &functions->mmap},
	    {"mprotect", &functions->mprotect},
	    {"munmap", &functions->munmap},
	    {"close", &functions->close},
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
			    sizeof(libc_wants) / sizeof(libc_wants[0]), &found,
			    &functions->restore_rt);
	if (err) {
		inject_result__say(result, "cannot read the target's libc: %s", strerror(-err));
		return err;
	}
	if (!found) {
		inject_result__say(result, "the target maps no glibc libc.so.6");
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

		err = maps__resolve(pid, maps, name__is_libdl, dl_wants, 4, &found, NULL);
		if (err)
			return err;
	}
	if (!functions->errno_location || !functions->mmap || !functions->mprotect ||
	    !functions->munmap || !functions->close || !functions->syscall || !functions->dlopen ||
	    !functions->dlsym || !functions->dlerror || !functions->dlclose) {
		inject_result__say(
		    result,
		    "the target's libc lacks dlopen (glibc before 2.34 without libdl mapped?)");
		return -ENOTSUP;
	}
	if (!functions->restore_rt) {
		inject_result__say(result, "no signal return trampoline in the target's libc");
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
bool syscall__may_hold_locks(long nr)
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
bool target_stack__has_cuda_frame(int mem_fd, const struct process_maps *maps, unsigned long sp)
{
	unsigned long words[STACK_SCAN_BYTES / sizeof(unsigned long)];
	char name[256];
	ssize_t n;
	size_t i;

	n = pread(mem_fd, words, sizeof(words), (off_t)sp);
	for (i = 0; n > 0 && i < (size_t)n / sizeof(words[0]); i++) {
		const struct maps_entry *entry = target_maps__find(maps, words[i]);

		if (!entry || entry->perms[2] != 'x' || !entry->path)
			continue;
		maps_entry__name(entry, name, sizeof(name));
		if (library_name__is_cuda(name))
			return true;
	}
	return false;
}

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
int target_candidates__list(pid_t pid, const struct process_maps *maps, int mem_fd,
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

		if (tid <= 0 || target_status__read(pid, tid, &status))
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
		if (inject_proc__read(path, &syscall_text) > 0) {
			if (strncmp(syscall_text, "running", 7))
				sscanf(syscall_text, "%ld %*s %*s %*s %*s %*s %*s %lx %lx", &nr,
				       &sp, &pc);
			free(syscall_text);
		}
		if (status.state == 'R' || nr < 0) {
			score = 10;
		} else {
			maps_entry__name(target_maps__find(maps, pc), name, sizeof(name));
			if (library_name__is_loader(name) || syscall__may_hold_locks(nr))
				score = 1;
			else if (syscall__is_quiet_wait(nr))
				score = SCORE_QUIET_WAIT;
			else if (nr == SYS_futex)
				score = 50;
			else
				score = 30;
			if (target_stack__has_cuda_frame(mem_fd, maps, sp))
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

#else /* !__x86_64__ */

int inject__process_has_cuda(pid_t pid, bool *has_cuda, char *cupti_path, size_t cupti_path_size)
{
	return -ENOTSUP;
}

#endif /* __x86_64__ */
