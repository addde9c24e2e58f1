// SPDX-License-Identifier: GPL-2.0
/*
 * The GPU memory probes' userspace half: finds the CUDA libraries the
 * processes profiled map (now, and later through the dynamic loader's
 * probe), resolves the allocation calls in each file with libelf, attaches
 * an entry and a return probe to each, once per file, and keeps every call
 * the BPF side records, with its process.  The accounting is in
 * gpu_memory_account.c.
 */
#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "array.h"
#include "gpu/gpu_memory_internal.h"
#include "gpu/library_probe.h"
#include "sampler.h"
#include "status.h"

#include "gpu_memory.skel.h"

#define LOADER_SYMBOL "_dl_debug_state"
#define GPU_MEMORY_STACK_COPY 4096
#define DEFAULT_LOADER "/lib64/ld-linux-x86-64.so.2"

const struct gpu_memory_call gpu_memory_calls[] = {
    {"cuMemAlloc_v2", "cuMemAlloc", LIBRARY_DRIVER, GPU_MEMORY_ALLOC, SPACE_DEVICE},
    {"cuMemAllocAsync", "cuMemAllocAsync", LIBRARY_DRIVER, GPU_MEMORY_ALLOC, SPACE_DEVICE},
    {"cuMemAllocManaged", "cuMemAllocManaged", LIBRARY_DRIVER, GPU_MEMORY_ALLOC, SPACE_MANAGED},
    {"cuMemAllocPitch_v2", "cuMemAllocPitch", LIBRARY_DRIVER, GPU_MEMORY_ALLOC_PITCH, SPACE_DEVICE},
    {"cuMemFree_v2", "cuMemFree", LIBRARY_DRIVER, GPU_MEMORY_FREE, SPACE_DEVICE},
    {"cuMemFreeAsync", "cuMemFreeAsync", LIBRARY_DRIVER, GPU_MEMORY_FREE, SPACE_DEVICE},
    {"cuMemAllocHost_v2", "cuMemAllocHost", LIBRARY_DRIVER, GPU_MEMORY_ALLOC, SPACE_HOST},
    {"cuMemHostAlloc", "cuMemHostAlloc", LIBRARY_DRIVER, GPU_MEMORY_ALLOC, SPACE_HOST},
    {"cuMemFreeHost", "cuMemFreeHost", LIBRARY_DRIVER, GPU_MEMORY_FREE, SPACE_HOST},
    {"cuMemCreate", "cuMemCreate", LIBRARY_DRIVER, GPU_MEMORY_CREATE, SPACE_PHYSICAL},
    {"cuMemRelease", "cuMemRelease", LIBRARY_DRIVER, GPU_MEMORY_FREE, SPACE_PHYSICAL},
    {"cuMemMap", "cuMemMap", LIBRARY_DRIVER, GPU_MEMORY_MAP, SPACE_NONE},
    {"cuMemUnmap", "cuMemUnmap", LIBRARY_DRIVER, GPU_MEMORY_UNMAP, SPACE_NONE},
    {"cudaMalloc", "cudaMalloc", LIBRARY_RUNTIME, GPU_MEMORY_ALLOC, SPACE_DEVICE},
    {"cudaMallocAsync", "cudaMallocAsync", LIBRARY_RUNTIME, GPU_MEMORY_ALLOC, SPACE_DEVICE},
    {"cudaMallocManaged", "cudaMallocManaged", LIBRARY_RUNTIME, GPU_MEMORY_ALLOC, SPACE_MANAGED},
    {"cudaMallocPitch", "cudaMallocPitch", LIBRARY_RUNTIME, GPU_MEMORY_ALLOC_PITCH, SPACE_DEVICE},
    {"cudaFree", "cudaFree", LIBRARY_RUNTIME, GPU_MEMORY_FREE, SPACE_DEVICE},
    {"cudaFreeAsync", "cudaFreeAsync", LIBRARY_RUNTIME, GPU_MEMORY_FREE, SPACE_DEVICE},
    {"cudaMallocHost", "cudaMallocHost", LIBRARY_RUNTIME, GPU_MEMORY_ALLOC, SPACE_HOST},
    {"cudaHostAlloc", "cudaHostAlloc", LIBRARY_RUNTIME, GPU_MEMORY_ALLOC, SPACE_HOST},
    {"cudaFreeHost", "cudaFreeHost", LIBRARY_RUNTIME, GPU_MEMORY_FREE, SPACE_HOST},
    {"cudaSetDevice", "cudaSetDevice", LIBRARY_RUNTIME, GPU_MEMORY_SET_DEVICE, SPACE_NONE},
};
const size_t gpu_memory_nr_calls = sizeof(gpu_memory_calls) / sizeof(gpu_memory_calls[0]);

/* A CUDA library the target maps, and the probes on it. */
struct library {
	char path[PATH_MAX]; /* as the target's maps name it */
	dev_t dev;
	ino_t ino;
	enum gpu_memory_library kind;
	struct bpf_link **links;
	size_t nr_links;
	int multi_links[2]; /* entry and return: multi-uprobe descriptors */
	size_t nr_multi_links;
	unsigned int nr_functions;
};

static int record_call(void *ctx, const struct sample_event *event, uint32_t thread,
		       uint32_t stack);

int gpu_memory__open(struct gpu_memory **out, struct session *session, pid_t pid, bool stop_on_load)
{
	struct capture_settings settings;
	struct gpu_memory *m = calloc(1, sizeof(*m));
	int err;

	if (!m)
		return -ENOMEM;
	m->session = session;
	m->pid = pid;
	m->stop_on_load = stop_on_load;
	m->only_pid = session__single_process(session) ? pid : -1;
	if (stop_on_load)
		session__add_load_stopper(session);
	m->skel = gpu_memory_bpf__open();
	if (!m->skel) {
		err = -errno;
		goto fail;
	}
	session__capture_settings(session, &settings);
	m->skel->rodata->collect_kernel = settings.collect_kernel;
	m->skel->rodata->wakeup_bytes = settings.wakeup_bytes;
	m->skel->rodata->unwind_in_bpf = settings.unwind_in_bpf;
	/* Allocations come in bursts of thousands: a smaller copy of the stack
	 * (the frames near the call; frame pointers complete the rest) keeps
	 * each record's cost down. */
	m->skel->rodata->stack_copy_bytes = settings.stack_copy_bytes < GPU_MEMORY_STACK_COPY
						? settings.stack_copy_bytes
						: GPU_MEMORY_STACK_COPY;
	m->skel->rodata->stop_on_load = stop_on_load;
	/* One link per library and program where the kernel has them: ending
	 * the profile then takes a few grace periods, not one per probe. */
	m->multi = library_probe__multi_supported();
	if (m->multi) {
		bpf_program__set_expected_attach_type(
		    m->skel->progs.gpu_memory_enter,
		    (enum bpf_attach_type)LIBRARY_PROBE_UPROBE_MULTI);
		bpf_program__set_expected_attach_type(
		    m->skel->progs.gpu_memory_return,
		    (enum bpf_attach_type)LIBRARY_PROBE_UPROBE_MULTI);
	}
	err = session__share_maps(session, m->skel->obj);
	if (!err)
		err = gpu_memory_bpf__load(m->skel);
	if (!err)
		err = session__set_record_handler(session, SAMPLE_KIND_GPU_MEMORY, record_call, m);
	if (err)
		goto fail;
	*out = m;
	return 0;
fail:
	gpu_memory__close(m);
	return err;
}

struct function_match {
	enum gpu_memory_library kind;
};

static int memory_call_index(const char *name, void *ctx)
{
	const struct function_match *match = ctx;

	if (name[0] != 'c')
		return -1;
	for (size_t k = 0; k < gpu_memory_nr_calls; k++)
		if (gpu_memory_calls[k].library == match->kind &&
		    !strcmp(name, gpu_memory_calls[k].symbol))
			return k;
	return -1;
}

/*
 * With children or several PIDs, every probe is on a library file for every
 * process (pid -1), filtered in BPF by the target set: one attach per file
 * however many processes of the selection map it, and a process forked or
 * exec'd later is probed from its first call, with nothing to attach for it
 * and no race with its first allocations.  The price: a process outside the
 * set that maps the same file takes the traps too, and is filtered out.  A
 * selection of one process has its probes filtered to it in the kernel.
 */
static int attach_probe(struct library *l, const struct bpf_program *program, pid_t pid,
			const char *path, size_t offset, __u64 cookie, bool retprobe)
{
	LIBBPF_OPTS(bpf_uprobe_opts, options, .bpf_cookie = cookie, .retprobe = retprobe);
	struct bpf_link *link;

	link = bpf_program__attach_uprobe_opts(program, pid, path, offset, &options);
	if (!link)
		return -errno;
	l->links[l->nr_links++] = link;
	return 0;
}

/* A new entry in a list of files, known by device and inode. */
static struct library *add_file(struct library **list, size_t *nr, size_t *cap, const char *mapped,
				const struct stat *st, size_t nr_links)
{
	struct library *l;

	if (array__grow((void **)list, cap, *nr + 1, sizeof(**list)))
		return NULL;
	l = &(*list)[*nr];
	memset(l, 0, sizeof(*l));
	snprintf(l->path, sizeof(l->path), "%s", mapped);
	l->dev = st->st_dev;
	l->ino = st->st_ino;
	l->links = calloc(nr_links, sizeof(*l->links));
	if (!l->links)
		return NULL;
	(*nr)++;
	return l;
}

static bool known_file(const struct library *list, size_t nr, const struct stat *st)
{
	for (size_t i = 0; i < nr; i++)
		if (list[i].dev == st->st_dev && list[i].ino == st->st_ino)
			return true;
	return false;
}

/* Every function on one entry link and one return link. */
static int probe_library_multi(struct gpu_memory *m, struct library *l, const char *path,
			       const size_t *offsets)
{
	size_t entry[sizeof(gpu_memory_calls) / sizeof(gpu_memory_calls[0])];
	size_t ret[sizeof(gpu_memory_calls) / sizeof(gpu_memory_calls[0])];
	uint64_t entry_cookies[sizeof(entry) / sizeof(entry[0])];
	uint64_t ret_cookies[sizeof(entry) / sizeof(entry[0])];
	uint32_t nr_entry = 0, nr_ret = 0;
	int fd;

	for (size_t k = 0; k < gpu_memory_nr_calls; k++) {
		const struct gpu_memory_call *call = &gpu_memory_calls[k];

		if (!offsets[k])
			continue;
		entry[nr_entry] = offsets[k];
		entry_cookies[nr_entry++] = GPU_MEMORY_COOKIE(call->shape, k);
		if (call->shape != GPU_MEMORY_SET_DEVICE) {
			ret[nr_ret] = offsets[k];
			ret_cookies[nr_ret++] = GPU_MEMORY_COOKIE(call->shape, k);
		}
	}
	for (int which = 0; which < 2; which++) {
		const struct bpf_program *program =
		    which ? m->skel->progs.gpu_memory_return : m->skel->progs.gpu_memory_enter;

		if (!(which ? nr_ret : nr_entry))
			continue;
		fd = library_probe__attach_multi(
		    bpf_program__fd(program), path, which ? ret : entry,
		    which ? ret_cookies : entry_cookies, which ? nr_ret : nr_entry, which,
		    m->only_pid > 0 ? m->only_pid : 0);
		if (fd < 0) {
			report__warn("cannot probe the memory calls in %s: %s", l->path,
				     strerror(-fd));
			return fd;
		}
		l->multi_links[l->nr_multi_links++] = fd;
	}
	l->nr_functions = nr_entry;
	report__debug("GPU memory: %u functions probed in %s", l->nr_functions, l->path);
	return 0;
}

static int probe_library(struct gpu_memory *m, pid_t pid, const char *mapped,
			 enum gpu_memory_library kind, const struct stat *st)
{
	size_t offsets[sizeof(gpu_memory_calls) / sizeof(gpu_memory_calls[0])] = {0};
	char path[PATH_MAX + 64];
	struct library *l;
	int err;

	/* Through the process's root: its mount namespace may differ. */
	snprintf(path, sizeof(path), "/proc/%d/root%s", pid, mapped);
	l = add_file(&m->libraries, &m->nr_libraries, &m->cap_libraries, mapped, st,
		     2 * gpu_memory_nr_calls);
	if (!l)
		return -ENOMEM;
	l->kind = kind;
	err = library_probe__function_offsets(path, false, memory_call_index,
					      &(struct function_match){kind}, offsets);
	if (err) {
		report__warn("no CUDA memory functions found in %s: %s", mapped, strerror(-err));
		return 0;
	}
	if (m->multi)
		return probe_library_multi(m, l, path, offsets);
	for (size_t k = 0; k < gpu_memory_nr_calls; k++) {
		const struct gpu_memory_call *call = &gpu_memory_calls[k];
		__u64 cookie = GPU_MEMORY_COOKIE(call->shape, k);

		if (!offsets[k])
			continue;
		err = attach_probe(l, m->skel->progs.gpu_memory_enter, m->only_pid, path,
				   offsets[k], cookie, false);
		if (!err && call->shape != GPU_MEMORY_SET_DEVICE)
			err = attach_probe(l, m->skel->progs.gpu_memory_return, m->only_pid, path,
					   offsets[k], cookie, true);
		if (err) {
			report__warn("cannot probe %s in %s: %s", call->symbol, mapped,
				     strerror(-err));
			return err;
		}
		l->nr_functions++;
	}
	report__debug("GPU memory: %u functions probed in %s", l->nr_functions, mapped);
	return 0;
}

/* The dynamic loader's _dl_debug_state in a loader file not probed yet:
 * every target process it loads libraries for tells us so. */
static int probe_loader(struct gpu_memory *m, const char *path, const char *mapped,
			const struct stat *st)
{
	LIBBPF_OPTS(bpf_uprobe_opts, options, .func_name = LOADER_SYMBOL);
	struct library *l;
	int err;

	l = add_file(&m->loaders, &m->nr_loaders, &m->cap_loaders, mapped, st, 1);
	if (!l)
		return -ENOMEM;
	l->links[0] = bpf_program__attach_uprobe_opts(m->skel->progs.gpu_memory_loader, m->only_pid,
						      path, 0, &options);
	if (!l->links[0]) {
		err = -errno;
		report__warn("cannot probe the dynamic loader %s (%s): CUDA libraries it loads "
			     "from now on are not seen",
			     mapped, strerror(-err));
		return 0;
	}
	l->nr_links = 1;
	return 0;
}

static bool library_kind(const char *path, enum gpu_memory_library *kind)
{
	const char *base = strrchr(path, '/');

	base = base ? base + 1 : path;
	if (!strncmp(base, "libcuda.so", 10)) {
		*kind = LIBRARY_DRIVER;
		return true;
	}
	if (!strncmp(base, "libcudart.so", 12)) {
		*kind = LIBRARY_RUNTIME;
		return true;
	}
	return false;
}

static bool is_loader(const char *path)
{
	const char *base = strrchr(path, '/');

	return base && !strncmp(base + 1, "ld-linux", 8);
}

/* Probes every CUDA library and dynamic loader in a process's maps not
 * probed yet. */
static int scan_maps(struct gpu_memory *m, pid_t pid)
{
	char maps_path[64], line[PATH_MAX + 128];
	FILE *maps;
	int err = 0;

	snprintf(maps_path, sizeof(maps_path), "/proc/%d/maps", pid);
	maps = fopen(maps_path, "re");
	if (!maps)
		return -errno;
	while (!err && fgets(line, sizeof(line), maps)) {
		char *path = strchr(line, '/'), full[PATH_MAX + 64];
		enum gpu_memory_library kind;
		bool loader, library;
		struct stat st;

		if (!path)
			continue;
		path[strcspn(path, "\n")] = '\0';
		loader = is_loader(path);
		library = library_kind(path, &kind);
		if (!loader && !library)
			continue;
		snprintf(full, sizeof(full), "/proc/%d/root%s", pid, path);
		if (stat(full, &st))
			continue;
		if (loader && !known_file(m->loaders, m->nr_loaders, &st))
			err = probe_loader(m, full, path, &st);
		if (library && !known_file(m->libraries, m->nr_libraries, &st))
			err = probe_library(m, pid, path, kind, &st);
	}
	fclose(maps);
	return err;
}

static int record_call(void *ctx, const struct sample_event *e, uint32_t thread, uint32_t stack)
{
	struct gpu_memory *m = ctx;
	uint64_t cookie = e->detail[GPU_MEMORY_DETAIL_CALL];
	struct memory_event *event;
	int err;

	if (GPU_MEMORY_COOKIE_SHAPE(cookie) == GPU_MEMORY_LOADER) {
		/* A library was mapped: probe it before the process runs on. */
		err = scan_maps(m, e->pid);
		if (err && err != -ENOENT && !m->loader_error) {
			report__warn("cannot probe the CUDA libraries process %d loaded: %s",
				     e->pid, strerror(-err));
			m->loader_error = err;
		}
		session__refresh_modules(m->session);
		if (m->stop_on_load)
			session__load_handled(m->session, e->pid);
		return 0;
	}
	if ((size_t)GPU_MEMORY_COOKIE_CALL(cookie) >= gpu_memory_nr_calls)
		return 0;
	err =
	    array__grow((void **)&m->events, &m->cap_events, m->nr_events + 1, sizeof(*m->events));
	if (err)
		return err;
	event = &m->events[m->nr_events++];
	event->time_ns = e->time_ns;
	event->start_ns = e->detail[GPU_MEMORY_DETAIL_START_NS];
	event->size = e->detail[GPU_MEMORY_DETAIL_SIZE];
	event->address = e->detail[GPU_MEMORY_DETAIL_ADDRESS];
	event->handle = e->detail[GPU_MEMORY_DETAIL_HANDLE];
	event->pid = e->pid;
	event->result = (int64_t)e->detail[GPU_MEMORY_DETAIL_RESULT];
	event->device = (int32_t)e->detail[GPU_MEMORY_DETAIL_DEVICE];
	event->call = GPU_MEMORY_COOKIE_CALL(cookie);
	event->thread = thread;
	event->stack = stack;
	event->end = NO_END;
	event->frames = -1;
	return 0;
}

/* NVML's nvmlProcessInfo_t (v2 and v3 share the layout). */
struct nvml_process {
	unsigned int pid;
	unsigned long long used_bytes;
	unsigned int gpu_instance, compute_instance;
};

static int add_before(struct gpu_memory *m, pid_t pid, int32_t device, uint64_t bytes)
{
	for (size_t i = 0; i < m->nr_before; i++) {
		if (m->before[i].pid == pid && m->before[i].device == device) {
			m->before[i].bytes += bytes;
			return 0;
		}
	}
	if (array__grow((void **)&m->before, &m->cap_before, m->nr_before + 1, sizeof(*m->before)))
		return -ENOMEM;
	m->before[m->nr_before++] = (struct memory_before){pid, device, bytes};
	return 0;
}

/* What NVML says each process of the selection holds on each device now,
 * for "[before attach]".  false where NVML is not installed or says
 * nothing. */
static bool read_before_attach(struct gpu_memory *m, const pid_t *pids, size_t nr_pids)
{
	int (*init)(void), (*shutdown)(void), (*count)(unsigned int *);
	int (*handle_of)(unsigned int, void **);
	int (*processes)(void *, unsigned int *, struct nvml_process *);
	void *nvml = dlopen("libnvidia-ml.so.1", RTLD_NOW | RTLD_LOCAL);
	unsigned int nr_devices = 0;
	bool known = false;

	if (!nvml)
		return false;
	init = (int (*)(void))dlsym(nvml, "nvmlInit_v2");
	shutdown = (int (*)(void))dlsym(nvml, "nvmlShutdown");
	count = (int (*)(unsigned int *))dlsym(nvml, "nvmlDeviceGetCount_v2");
	handle_of = (int (*)(unsigned int, void **))dlsym(nvml, "nvmlDeviceGetHandleByIndex_v2");
	processes = (int (*)(void *, unsigned int *, struct nvml_process *))dlsym(
	    nvml, "nvmlDeviceGetComputeRunningProcesses_v3");
	if (!init || !shutdown || !count || !handle_of || !processes || init()) {
		dlclose(nvml);
		return false;
	}
	if (!count(&nr_devices)) {
		for (unsigned int d = 0; d < nr_devices && d < GPU_MEMORY_MAX_DEVICES; d++) {
			struct nvml_process list[256];
			unsigned int n = 256;
			void *device;

			if (handle_of(d, &device) || processes(device, &n, list))
				continue;
			known = true;
			for (unsigned int i = 0; i < n && i < 256; i++)
				for (size_t k = 0; k < nr_pids; k++)
					if (list[i].pid == (unsigned int)pids[k] &&
					    list[i].used_bytes != ~0ULL && list[i].used_bytes)
						add_before(m, pids[k], d, list[i].used_bytes);
		}
	}
	shutdown();
	dlclose(nvml);
	return known;
}

#define MAX_SCANNED 4096

int gpu_memory__attach(struct gpu_memory *m, bool attach_mode)
{
	pid_t *pids = malloc(MAX_SCANNED * sizeof(*pids));
	char loader[PATH_MAX + 64];
	struct stat st;
	size_t nr;
	int err = 0;

	if (!pids)
		return -ENOMEM;
	m->attach_mode = attach_mode;
	/* The selection as it is now; processes that join it later are
	 * probed by the files already probed, or at their loader's call. */
	nr = session__processes(m->session, pids, MAX_SCANNED);
	if (attach_mode)
		m->before_known = read_before_attach(m, pids, nr);
	for (size_t i = 0; i < nr && !err; i++) {
		err = scan_maps(m, pids[i]);
		/* One that exited meanwhile has nothing to probe. */
		if (err == -ENOENT || err == -ESRCH)
			err = 0;
	}
	free(pids);
	if (err)
		return err;
	/* record: the command has not been exec'd; its loader will be the
	 * system's. */
	if (!m->nr_loaders && !stat(DEFAULT_LOADER, &st)) {
		snprintf(loader, sizeof(loader), "%s", DEFAULT_LOADER);
		err = probe_loader(m, loader, DEFAULT_LOADER, &st);
	}
	return err;
}

void gpu_memory__detach(struct gpu_memory *m)
{
	struct timespec start, end;
	struct bpf_link **links = NULL;
	int *fds = NULL;
	size_t nr = 0, cap = 0, nr_fds = 0, cap_fds = 0;

	if (!m)
		return;
	clock_gettime(CLOCK_MONOTONIC, &start);
	for (size_t i = 0; i < m->nr_libraries; i++) {
		struct library *l = &m->libraries[i];

		for (size_t k = 0; k < l->nr_multi_links; k++) {
			if (array__grow((void **)&fds, &cap_fds, nr_fds + 1, sizeof(*fds)))
				close(l->multi_links[k]);
			else
				fds[nr_fds++] = l->multi_links[k];
		}
		l->nr_multi_links = 0;
	}
	library_probe__close_links(fds, nr_fds);
	free(fds);
	for (size_t i = 0; i < m->nr_libraries + m->nr_loaders; i++) {
		struct library *l =
		    i < m->nr_libraries ? &m->libraries[i] : &m->loaders[i - m->nr_libraries];

		if (!array__grow((void **)&links, &cap, nr + l->nr_links + 1, sizeof(*links))) {
			memcpy(links + nr, l->links, l->nr_links * sizeof(*links));
			nr += l->nr_links;
		} else {
			for (size_t k = 0; k < l->nr_links; k++)
				bpf_link__destroy(l->links[k]);
		}
		l->nr_links = 0;
	}
	library_probe__destroy_links(links, nr);
	clock_gettime(CLOCK_MONOTONIC, &end);
	if (nr + nr_fds)
		report__debug("GPU memory: %zu links removed in %.0f ms", nr + nr_fds,
			      (end.tv_sec - start.tv_sec) * 1e3 +
				  (end.tv_nsec - start.tv_nsec) / 1e6);
	free(links);
	/* The target may be stopped on a load no one answers now. */
	if (m->stop_on_load)
		kill(m->pid, SIGCONT);
}

static void read_lost(struct gpu_memory *m)
{
	int nr_cpus = libbpf_num_possible_cpus();
	uint64_t *values = calloc(nr_cpus > 0 ? nr_cpus : 1, sizeof(*values));
	__u32 key = COUNTER_LOST_GPU_MEMORY;

	if (!values)
		return;
	if (!bpf_map_lookup_elem(bpf_map__fd(m->skel->maps.counters), &key, values))
		for (int cpu = 0; cpu < nr_cpus; cpu++)
			m->lost += values[cpu];
	free(values);
}

int gpu_memory__finish(struct gpu_memory *m, struct session *session,
		       const struct profile *cpu_profile)
{
	uint32_t frames[1024];
	int err;

	read_lost(m);
	m->frames_profile = (struct profile *)cpu_profile;
	m->start_ns = cpu_profile->start_ns;
	m->duration_ns = cpu_profile->duration_ns;
	for (size_t i = 0; i < m->nr_events; i++) {
		struct memory_event *e = &m->events[i];
		size_t depth = 0;

		/* Calls on one stack resolve once. */
		for (size_t k = i; k-- > 0 && i - k < 64;) {
			if (m->events[k].stack == e->stack && m->events[k].thread == e->thread) {
				e->frames = m->events[k].frames;
				e->nr_frames = m->events[k].nr_frames;
				break;
			}
		}
		if (e->frames >= 0)
			continue;
		err = session__stack_frames(session, e->thread, e->stack, frames,
					    sizeof(frames) / sizeof(frames[0]), &depth);
		if (err)
			return err;
		err = array__grow((void **)&m->frames, &m->cap_frames, m->nr_frames + depth,
				  sizeof(*m->frames));
		if (err)
			return err;
		memcpy(m->frames + m->nr_frames, frames, depth * sizeof(*frames));
		e->frames = m->nr_frames;
		e->nr_frames = depth;
		m->nr_frames += depth;
	}
	err = gpu_memory__account(m);
	if (!err)
		m->finished = true;
	return err;
}

void gpu_memory__close(struct gpu_memory *m)
{
	if (!m)
		return;
	gpu_memory__detach(m);
	for (size_t i = 0; i < m->nr_libraries; i++)
		free(m->libraries[i].links);
	for (size_t i = 0; i < m->nr_loaders; i++)
		free(m->loaders[i].links);
	free(m->libraries);
	free(m->loaders);
	free(m->before);
	gpu_memory_bpf__destroy(m->skel);
	free(m->events);
	free(m->frames);
	free(m);
}
