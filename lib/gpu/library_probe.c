// SPDX-License-Identifier: GPL-2.0
/* What the library probe families share; see library_probe.h. */
#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include <errno.h>
#include <fcntl.h>
#include <gelf.h>
#include <limits.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "array.h"
#include "base/clock.h"
#include "base/procfs.h"
#include "gpu/library_probe.h"
#include "inject/inject.h"
#include "sampling/session.h"
#include "status.h"

int library_probe__function_offsets(const char *path, bool dynsym_only,
				    int (*index_of)(const char *name, void *ctx), void *ctx,
				    size_t *offsets)
{
	Elf_Scn *section = NULL;
	int fd, err = -ENOENT;
	Elf *elf;

	elf_version(EV_CURRENT);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	elf = elf_begin(fd, ELF_C_READ_MMAP, NULL);
	if (!elf) {
		close(fd);
		return -EINVAL;
	}
	while ((section = elf_nextscn(elf, section))) {
		GElf_Shdr header;
		Elf_Data *data;

		if (!gelf_getshdr(section, &header) ||
		    (header.sh_type != SHT_DYNSYM && (dynsym_only || header.sh_type != SHT_SYMTAB)))
			continue;
		data = elf_getdata(section, NULL);
		for (size_t i = 0;
		     data && header.sh_entsize && i < header.sh_size / header.sh_entsize; i++) {
			GElf_Sym symbol;
			GElf_Shdr home;
			const char *name;
			int k;

			if (!gelf_getsym(data, i, &symbol) ||
			    GELF_ST_TYPE(symbol.st_info) != STT_FUNC ||
			    symbol.st_shndx == SHN_UNDEF)
				continue;
			name = elf_strptr(elf, header.sh_link, symbol.st_name);
			k = name ? index_of(name, ctx) : -1;
			if (k < 0 || offsets[k] ||
			    !gelf_getshdr(elf_getscn(elf, symbol.st_shndx), &home))
				continue;
			offsets[k] = symbol.st_value - home.sh_addr + home.sh_offset;
			err = 0;
		}
	}
	elf_end(elf);
	close(fd);
	return err;
}

static void *destroy_link(void *link)
{
	bpf_link__destroy(link);
	return NULL;
}

void library_probe__destroy_links(struct bpf_link **links, size_t nr)
{
	pthread_t *threads = calloc(nr ? nr : 1, sizeof(*threads));
	bool *started = calloc(nr ? nr : 1, sizeof(*started));

	for (size_t k = 0; k < nr; k++) {
		if (threads && started)
			started[k] = !pthread_create(&threads[k], NULL, destroy_link, links[k]);
		if (!started || !started[k])
			bpf_link__destroy(links[k]);
	}
	for (size_t k = 0; started && k < nr; k++)
		if (started[k])
			pthread_join(threads[k], NULL);
	free(threads);
	free(started);
}

/* union bpf_attr's link_create with its uprobe_multi member, which the
 * system's headers may predate. */
struct link_create_uprobe_multi {
	uint32_t prog_fd, target_fd, attach_type, flags;
	uint64_t path, offsets, ref_ctr_offsets, cookies;
	uint32_t count, multi_flags, pid;
	uint32_t pad;
};
#define UPROBE_MULTI_RETURN 1

int library_probe__attach_multi(int prog_fd, const char *path, const size_t *offsets,
				const uint64_t *cookies, uint32_t count, bool retprobe, pid_t pid)
{
	struct link_create_uprobe_multi attr;
	unsigned long long *addresses = calloc(count ? count : 1, sizeof(*addresses));
	int fd, err;

	if (!addresses)
		return -ENOMEM;
	for (uint32_t k = 0; k < count; k++)
		addresses[k] = offsets[k];
	memset(&attr, 0, sizeof(attr));
	attr.prog_fd = prog_fd;
	attr.attach_type = LIBRARY_PROBE_UPROBE_MULTI;
	attr.path = (uintptr_t)path;
	attr.offsets = (uintptr_t)addresses;
	attr.cookies = (uintptr_t)cookies;
	attr.count = count;
	attr.multi_flags = retprobe ? UPROBE_MULTI_RETURN : 0;
	attr.pid = pid;
	fd = syscall(__NR_bpf, BPF_LINK_CREATE, &attr, sizeof(attr));
	err = -errno;
	free(addresses);
	return fd < 0 ? err : fd;
}

bool library_probe__multi_supported(void)
{
	static int supported = -1;
	struct bpf_insn program[] = {
	    {.code = BPF_ALU64 | BPF_MOV | BPF_K, .dst_reg = BPF_REG_0, .imm = 0},
	    {.code = BPF_JMP | BPF_EXIT},
	};
	LIBBPF_OPTS(bpf_prog_load_opts, options,
		    .expected_attach_type = (enum bpf_attach_type)LIBRARY_PROBE_UPROBE_MULTI);
	size_t offset = 0;
	int prog_fd, fd;

	if (supported >= 0)
		return supported;
	prog_fd = bpf_prog_load(BPF_PROG_TYPE_KPROBE, NULL, "GPL", program, 2, &options);
	if (prog_fd < 0) {
		supported = 0;
		return false;
	}
	/* A kernel that knows the attach type fails on "/" as a file. */
	fd = library_probe__attach_multi(prog_fd, "/", &offset, NULL, 1, false, 0);
	supported = fd == -EBADF;
	if (fd >= 0)
		close(fd);
	close(prog_fd);
	return supported;
}

static void *close_link(void *fd)
{
	close((int)(intptr_t)fd);
	return NULL;
}

void library_probe__close_links(const int *fds, size_t nr)
{
	pthread_t threads[64];
	bool started[64] = {false};

	for (size_t k = 0; k < nr; k++) {
		if (k < 64)
			started[k] = !pthread_create(&threads[k], NULL, close_link,
						     (void *)(intptr_t)fds[k]);
		if (k >= 64 || !started[k])
			close(fds[k]);
	}
	for (size_t k = 0; k < nr && k < 64; k++)
		if (started[k])
			pthread_join(threads[k], NULL);
}

void library_probe__describe_stack(const struct profile *p, const uint32_t *frames,
				   size_t nr_frames, char *buf, size_t size)
{
	size_t len = 0, shown = 0;

	buf[0] = '\0';
	for (size_t k = nr_frames; k-- > 0 && shown < LIBRARY_PROBE_STACK_FRAMES;) {
		const struct frame *f = &p->frames[frames[k]];

		if (f->kind == FRAME_PROCESS || f->kind == FRAME_THREAD)
			break;
		len += snprintf(buf + len, len < size ? size - len : 0, "%s%s", shown ? " < " : "",
				f->name);
		shown++;
	}
	if (!shown)
		snprintf(buf, size, "[no stack]");
}

#define DEFAULT_LOADER "/lib64/ld-linux-x86-64.so.2"
#define LOADER_SYMBOL "_dl_debug_state"
#define MAX_SCANNED 4096

void library_probe__init(struct library_probe *lp, struct session *session, pid_t pid,
			 bool stop_on_load)
{
	lp->session = session;
	lp->pid = pid;
	lp->stop_on_load = stop_on_load;
	/*
	 * With children or several PIDs, every probe is on a library file for
	 * every process (pid -1), filtered in BPF by the target set: one
	 * attach per file however many processes of the selection map it, and
	 * a process forked or exec'd later is probed from its first call, with
	 * nothing to attach for it and no race with its first calls.  The
	 * price: a process outside the set that maps the same file takes the
	 * traps too, and is filtered out.
	 */
	lp->only_pid = session__single_process(session) ? pid : -1;
	if (stop_on_load)
		session__add_load_stopper(session);
}

static bool known_file(const struct library_probe_file *list, size_t nr, const struct stat *st)
{
	for (size_t i = 0; i < nr; i++)
		if (list[i].dev == st->st_dev && list[i].ino == st->st_ino)
			return true;
	return false;
}

static int add_file(struct library_probe_file **list, size_t *nr, size_t *cap,
		    const struct stat *st)
{
	if (array__grow((void **)list, cap, *nr + 1, sizeof(**list)))
		return -ENOMEM;
	(*list)[(*nr)++] = (struct library_probe_file){st->st_dev, st->st_ino};
	return 0;
}

int library_probe__attach_uprobe(struct library_probe *lp, const struct bpf_program *program,
				 const char *path, size_t offset, uint64_t cookie, bool retprobe)
{
	LIBBPF_OPTS(bpf_uprobe_opts, options, .bpf_cookie = cookie, .retprobe = retprobe);
	struct bpf_link *link;

	if (array__grow((void **)&lp->links, &lp->cap_links, lp->nr_links + 1, sizeof(*lp->links)))
		return -ENOMEM;
	link = bpf_program__attach_uprobe_opts(program, lp->only_pid, path, offset, &options);
	if (!link)
		return -errno;
	lp->links[lp->nr_links++] = link;
	return 0;
}

struct located {
	uint64_t address;
	bool (*is_library)(const char *mapped, void *ctx);
	void *ctx;
	struct procfs_mapping mapping;
	char path[PATH_MAX];
};

static int locate_mapping(const struct procfs_mapping *m, void *ctx)
{
	struct located *l = ctx;

	if (l->address < m->start || l->address >= m->end || m->perms[2] != 'x' ||
	    m->path[0] != '/' || m->deleted || !l->is_library(m->path, l->ctx))
		return 0;
	l->mapping = *m;
	snprintf(l->path, sizeof(l->path), "%s", m->path);
	return 1;
}

int library_probe__locate(pid_t pid, uint64_t address,
			  bool (*is_library)(const char *mapped, void *ctx), void *ctx, char *path,
			  size_t size, struct library_probe_file *file, size_t *offset)
{
	struct located l = {.address = address, .is_library = is_library, .ctx = ctx};
	char maps_path[64];
	struct stat st;
	int found;

	snprintf(maps_path, sizeof(maps_path), "/proc/%d/maps", pid);
	found = procfs__for_each_mapping(maps_path, locate_mapping, &l);
	if (found <= 0)
		return found < 0 ? found : -ENOENT;
	/* Through the process's root: its mount namespace may differ. */
	snprintf(path, size, "/proc/%d/root%s", pid, l.path);
	if (stat(path, &st))
		return -errno;
	*file = (struct library_probe_file){st.st_dev, st.st_ino};
	*offset = address - l.mapping.start + l.mapping.offset;
	return 0;
}

int library_probe__add_link_fd(struct library_probe *lp, int fd)
{
	if (array__grow((void **)&lp->link_fds, &lp->cap_link_fds, lp->nr_link_fds + 1,
			sizeof(*lp->link_fds))) {
		close(fd);
		return -ENOMEM;
	}
	lp->link_fds[lp->nr_link_fds++] = fd;
	return 0;
}

/* The dynamic loader's _dl_debug_state in a loader file not probed yet:
 * every target process it loads libraries for tells us so. */
static int probe_loader(struct library_probe *lp, const char *path, const char *mapped,
			const struct stat *st)
{
	LIBBPF_OPTS(bpf_uprobe_opts, options, .func_name = LOADER_SYMBOL);
	struct bpf_link *link;
	int err;

	err = add_file(&lp->loaders, &lp->nr_loaders, &lp->cap_loaders, st);
	if (!err)
		err = array__grow((void **)&lp->links, &lp->cap_links, lp->nr_links + 1,
				  sizeof(*lp->links));
	if (err)
		return err;
	link = bpf_program__attach_uprobe_opts(lp->loader_program, lp->only_pid, path, 0, &options);
	if (!link) {
		status__warn("cannot probe the dynamic loader %s (%s): %s it loads from now on "
			     "are not seen",
			     mapped, strerror(errno), lp->what);
		return 0;
	}
	lp->links[lp->nr_links++] = link;
	return 0;
}

/* Probes every library of the family and every dynamic loader in a
 * process's maps not probed yet. */
static int scan_maps(struct library_probe *lp, pid_t pid)
{
	char maps_path[64];
	struct procfs_maps maps;
	struct procfs_mapping m;
	int err;

	snprintf(maps_path, sizeof(maps_path), "/proc/%d/maps", pid);
	err = procfs_maps__open(&maps, maps_path);
	while (!err && (err = procfs_maps__next(&maps, &m)) > 0) {
		char *path = m.path, full[PATH_MAX + 64];
		bool loader, library;
		struct stat st;

		err = 0;
		if (path[0] != '/')
			continue;
		loader = library_name__is_loader(strrchr(path, '/') + 1);
		library = lp->is_library(path, lp->ctx);
		if (!loader && !library)
			continue;
		/* Through the process's root: its mount namespace may differ. */
		snprintf(full, sizeof(full), "/proc/%d/root%s", pid, path);
		if (stat(full, &st))
			continue;
		if (loader && !known_file(lp->loaders, lp->nr_loaders, &st))
			err = probe_loader(lp, full, path, &st);
		if (!err && library && !known_file(lp->libraries, lp->nr_libraries, &st)) {
			err = add_file(&lp->libraries, &lp->nr_libraries, &lp->cap_libraries, &st);
			if (!err)
				err = lp->probe_library(lp->ctx, full, path);
		}
	}
	procfs_maps__close(&maps);
	return err;
}

int library_probe__scan(struct library_probe *lp)
{
	pid_t *pids = malloc(MAX_SCANNED * sizeof(*pids));
	struct stat st;
	size_t nr;
	int err = 0;

	if (!pids)
		return -ENOMEM;
	/* The selection as it is now; processes that join it later are
	 * probed by the files already probed, or at their loader's call. */
	nr = session__processes(lp->session, pids, MAX_SCANNED);
	for (size_t i = 0; i < nr && !err; i++) {
		err = scan_maps(lp, pids[i]);
		/* One that exited meanwhile has nothing to probe. */
		if (err == -ENOENT || err == -ESRCH)
			err = 0;
	}
	free(pids);
	if (!err && !lp->nr_loaders && !stat(DEFAULT_LOADER, &st))
		err = probe_loader(lp, DEFAULT_LOADER, DEFAULT_LOADER, &st);
	return err;
}

/* Depth of the descendants looked at: a launcher, its workers, theirs. */
#define MAX_GENERATIONS 4

static bool maps_library(pid_t pid, bool (*is_library)(const char *path, void *ctx), void *ctx)
{
	char path[64], line[PATH_MAX + 128];
	bool found = false;
	FILE *maps;

	snprintf(path, sizeof(path), "/proc/%d/maps", pid);
	maps = fopen(path, "re");
	if (!maps)
		return false;
	while (!found && fgets(line, sizeof(line), maps)) {
		char *file = strchr(line, '/');

		if (!file)
			continue;
		file[strcspn(file, "\n")] = '\0';
		found = is_library(file, ctx);
	}
	fclose(maps);
	return found;
}

static bool descendant_maps(pid_t pid, int generations,
			    bool (*is_library)(const char *path, void *ctx), void *ctx)
{
	char path[64], line[4096];
	bool found = false;
	FILE *children;

	/* The children of the main thread: those of other threads are rare
	 * in the jobs profiled (launchers fork from their main thread). */
	snprintf(path, sizeof(path), "/proc/%d/task/%d/children", pid, pid);
	children = fopen(path, "re");
	if (!children)
		return false;
	while (!found && fgets(line, sizeof(line), children)) {
		char *saved;

		for (char *token = strtok_r(line, " \n", &saved); token && !found;
		     token = strtok_r(NULL, " \n", &saved)) {
			pid_t child = atoi(token);

			found = maps_library(child, is_library, ctx) ||
				(generations > 1 &&
				 descendant_maps(child, generations - 1, is_library, ctx));
		}
	}
	fclose(children);
	return found;
}

bool library_probe__mapped(pid_t pid, bool children,
			   bool (*is_library)(const char *path, void *ctx), void *ctx)
{
	return maps_library(pid, is_library, ctx) ||
	       (children && descendant_maps(pid, MAX_GENERATIONS, is_library, ctx));
}

int library_probe__on_load(struct library_probe *lp, pid_t pid)
{
	/* A library was mapped: probe it before the process runs on.  Its
	 * maps are read once for the probes, the symbols and the tables. */
	bool held = !procfs__hold_maps(pid);
	int err = scan_maps(lp, pid);

	if (err && err != -ENOENT && !lp->loader_error) {
		status__warn("cannot probe %s process %d loaded: %s", lp->what, pid,
			     strerror(-err));
		lp->loader_error = err;
	}
	session__refresh_modules(lp->session, pid);
	if (held)
		procfs__release_maps();
	if (lp->stop_on_load)
		session__load_handled(lp->session, pid);
	return 0;
}

void library_probe__detach(struct library_probe *lp)
{
	uint64_t start;
	size_t nr = lp->nr_links + lp->nr_link_fds;

	if (!lp->session)
		return;
	start = clock__monotonic_ns();
	library_probe__close_links(lp->link_fds, lp->nr_link_fds);
	lp->nr_link_fds = 0;
	library_probe__destroy_links(lp->links, lp->nr_links);
	lp->nr_links = 0;
	if (nr)
		status__debug("%s: %zu links removed in %.0f ms", lp->what, nr,
			      (clock__monotonic_ns() - start) / 1e6);
	lp->lost = session__counter(lp->session, lp->lost_counter);
	/* The target may be stopped on a load no one answers now. */
	if (lp->stop_on_load)
		kill(lp->pid, SIGCONT);
}

void library_probe__free(struct library_probe *lp)
{
	library_probe__detach(lp);
	free(lp->links);
	free(lp->link_fds);
	free(lp->libraries);
	free(lp->loaders);
}

int library_probe_stacks__resolve(struct library_probe_stacks *s, const struct session *session,
				  uint32_t thread, uint32_t stack, int64_t *first,
				  uint32_t *nr_frames)
{
	size_t recent = sizeof(s->recent) / sizeof(s->recent[0]), depth = 0, slot;
	uint32_t frames[1024];
	int err;

	/* Calls on one stack resolve once. */
	for (size_t k = 0; k < s->nr_recent && k < recent; k++) {
		if (s->recent[k].thread == thread && s->recent[k].stack == stack) {
			*first = s->recent[k].first;
			*nr_frames = s->recent[k].nr_frames;
			return 0;
		}
	}
	err = session__stack_frames(session, thread, stack, frames,
				    sizeof(frames) / sizeof(frames[0]), &depth);
	if (!err)
		err = array__grow((void **)&s->frames, &s->cap_frames, s->nr_frames + depth,
				  sizeof(*s->frames));
	if (err)
		return err;
	memcpy(s->frames + s->nr_frames, frames, depth * sizeof(*frames));
	*first = s->nr_frames;
	*nr_frames = depth;
	s->nr_frames += depth;
	slot = s->nr_recent++ % recent;
	s->recent[slot].thread = thread;
	s->recent[slot].stack = stack;
	s->recent[slot].first = *first;
	s->recent[slot].nr_frames = depth;
	return 0;
}

void library_probe_stacks__free(struct library_probe_stacks *s)
{
	free(s->frames);
	s->frames = NULL;
	s->nr_frames = s->cap_frames = 0;
}
