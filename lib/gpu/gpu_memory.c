// SPDX-License-Identifier: GPL-2.0
/*
 * The GPU memory probes' userspace half: finds the CUDA libraries the
 * processes profiled map (now, and later through the dynamic loader's
 * probe), resolves the allocation calls in each file with libelf, attaches
 * an entry and a return probe to each, once per file, and to the address
 * cuGetProcAddress hands out for one where that is another function, and
 * keeps every call the BPF side records, with its process.  The accounting
 * is in gpu_memory_account.c.
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
#include "sampling/bpf_cost.h"
#include "sampling/probe_family.h"
#include "sampler.h"
#include "status.h"

#include "gpu_memory.skel.h"

#define GPU_MEMORY_STACK_COPY 4096
#define MAX_SCANNED 4096

const struct gpu_memory_call gpu_memory_calls[] = {
    {"cuMemAlloc_v2", "cuMemAlloc", LIBRARY_DRIVER, GPU_MEMORY_ALLOC, SPACE_DEVICE},
    {"cuMemAllocAsync", "cuMemAllocAsync", LIBRARY_DRIVER, GPU_MEMORY_ALLOC, SPACE_DEVICE},
    {"cuMemAllocManaged", "cuMemAllocManaged", LIBRARY_DRIVER, GPU_MEMORY_ALLOC, SPACE_MANAGED},
    {"cuMemAllocPitch_v2", "cuMemAllocPitch", LIBRARY_DRIVER, GPU_MEMORY_ALLOC_PITCH, SPACE_DEVICE},
    {"cuMemFree_v2", "cuMemFree", LIBRARY_DRIVER, GPU_MEMORY_FREE, SPACE_DEVICE},
    {"cuMemFreeAsync", "cuMemFreeAsync", LIBRARY_DRIVER, GPU_MEMORY_FREE, SPACE_DEVICE},
    /* What cuGetProcAddress gives a caller on the per-thread default
     * stream (cudaGetDriverEntryPoint* from a program built with
     * --default-stream per-thread): functions of their own. */
    {"cuMemAllocAsync_ptsz", "cuMemAllocAsync", LIBRARY_DRIVER, GPU_MEMORY_ALLOC, SPACE_DEVICE},
    {"cuMemFreeAsync_ptsz", "cuMemFreeAsync", LIBRARY_DRIVER, GPU_MEMORY_FREE, SPACE_DEVICE},
    {"cuMemAllocHost_v2", "cuMemAllocHost", LIBRARY_DRIVER, GPU_MEMORY_ALLOC, SPACE_HOST},
    {"cuMemHostAlloc", "cuMemHostAlloc", LIBRARY_DRIVER, GPU_MEMORY_ALLOC, SPACE_HOST},
    {"cuMemFreeHost", "cuMemFreeHost", LIBRARY_DRIVER, GPU_MEMORY_FREE, SPACE_HOST},
    {"cuMemCreate", "cuMemCreate", LIBRARY_DRIVER, GPU_MEMORY_CREATE, SPACE_PHYSICAL},
    {"cuMemRelease", "cuMemRelease", LIBRARY_DRIVER, GPU_MEMORY_FREE, SPACE_PHYSICAL},
    {"cuMemMap", "cuMemMap", LIBRARY_DRIVER, GPU_MEMORY_MAP, SPACE_NONE},
    {"cuMemUnmap", "cuMemUnmap", LIBRARY_DRIVER, GPU_MEMORY_UNMAP, SPACE_NONE},
    /* The driver's functions by name (NCCL, cudaGetDriverEntryPoint*):
     * what they hand out for the calls above may be internal functions. */
    {"cuGetProcAddress_v2", "cuGetProcAddress", LIBRARY_DRIVER, GPU_MEMORY_ENTRY_POINT, SPACE_NONE},
    {"cuGetProcAddress", "cuGetProcAddress", LIBRARY_DRIVER, GPU_MEMORY_ENTRY_POINT, SPACE_NONE},
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

static int record_call(void *ctx, const struct sample_event *event, uint32_t thread,
		       uint32_t stack);
static bool is_cuda_library(const char *mapped, void *ctx);
static int probe_library(void *ctx, const char *path, const char *mapped);

/* The driver's calls by the name cuGetProcAddress takes, for its probes:
 * the first row of a name stands for it (cuMemAllocAsync, whichever
 * function the driver hands out). */
static int entry_names__fill(struct gpu_memory *m)
{
	int fd = bpf_map__fd(m->skel->maps.gpu_memory_entry_names);

	for (size_t k = 0; k < gpu_memory_nr_calls; k++) {
		const struct gpu_memory_call *call = &gpu_memory_calls[k];
		char key[GPU_MEMORY_ENTRY_NAME_BYTES] = {0};
		__u64 cookie = GPU_MEMORY_COOKIE(GPU_MEMORY_ENTRY_POINT, k);

		if (call->library != LIBRARY_DRIVER || call->shape == GPU_MEMORY_ENTRY_POINT)
			continue;
		snprintf(key, sizeof(key), "%s", call->name);
		if (bpf_map_update_elem(fd, key, &cookie, BPF_NOEXIST) && errno != EEXIST)
			return -errno;
	}
	return 0;
}

static int probed__add(struct gpu_memory *m, const struct library_probe_file *file, size_t offset)
{
	if (array__grow((void **)&m->probed, &m->cap_probed, m->nr_probed + 1, sizeof(*m->probed)))
		return -ENOMEM;
	m->probed[m->nr_probed++] = (struct probed_function){*file, offset};
	return 0;
}

static bool probed__has(const struct gpu_memory *m, const struct library_probe_file *file,
			size_t offset)
{
	for (size_t i = 0; i < m->nr_probed; i++)
		if (m->probed[i].file.dev == file->dev && m->probed[i].file.ino == file->ino &&
		    m->probed[i].offset == offset)
			return true;
	return false;
}

int gpu_memory__open(struct gpu_memory **out, struct session *session, pid_t pid, bool stop_on_load)
{
	struct capture_settings settings;
	struct gpu_memory *m = calloc(1, sizeof(*m));
	uint64_t load_started;
	int err;

	if (!m)
		return -ENOMEM;
	m->session = session;
	m->probe = (struct library_probe){
	    .what = "the CUDA libraries",
	    .is_library = is_cuda_library,
	    .probe_library = probe_library,
	    .ctx = m,
	    .lost_counter = COUNTER_LOST_GPU_MEMORY,
	};
	library_probe__init(&m->probe, session, pid, stop_on_load);
	m->skel = gpu_memory_bpf__open();
	if (!m->skel) {
		err = -errno;
		goto fail;
	}
	session__capture_settings(session, &settings);
	/* Allocations come in bursts of thousands: a smaller copy of the stack
	 * keeps each record's cost down. */
	SESSION_SET_CAPTURE_RODATA(m->skel->rodata, &settings, GPU_MEMORY_STACK_COPY);
	m->skel->rodata->stop_on_load = stop_on_load;
	m->probe.loader_program = m->skel->progs.gpu_memory_loader;
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
	load_started = bpf_cost__now();
	if (!err)
		err = gpu_memory_bpf__load(m->skel);
	if (!err)
		bpf_cost__loaded("gpu_memory", m->skel->obj, load_started);
	if (!err)
		err = entry_names__fill(m);
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

/* Every function on one entry link and one return link. */
static int probe_library_multi(struct gpu_memory *m, const char *path, const char *mapped,
			       const size_t *offsets)
{
	size_t entry[sizeof(gpu_memory_calls) / sizeof(gpu_memory_calls[0])];
	size_t ret[sizeof(gpu_memory_calls) / sizeof(gpu_memory_calls[0])];
	uint64_t entry_cookies[sizeof(entry) / sizeof(entry[0])];
	uint64_t ret_cookies[sizeof(entry) / sizeof(entry[0])];
	uint32_t nr_entry = 0, nr_ret = 0;
	int fd, err;

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
		    m->probe.only_pid > 0 ? m->probe.only_pid : 0);
		if (fd < 0) {
			status__warn("cannot probe the memory calls in %s: %s", mapped,
				     strerror(-fd));
			return fd;
		}
		err = library_probe__add_link_fd(&m->probe, fd);
		if (err)
			return err;
	}
	status__debug("GPU memory: %u functions probed in %s", nr_entry, mapped);
	return 0;
}

/* An entry and a return probe (only the entry one: entry_only) on one
 * function of a library file. */
static int probe_function(struct gpu_memory *m, const char *path, size_t offset, uint64_t cookie,
			  bool entry_only)
{
	for (int which = 0; which < (entry_only ? 1 : 2); which++) {
		const struct bpf_program *program =
		    which ? m->skel->progs.gpu_memory_return : m->skel->progs.gpu_memory_enter;
		int fd, err;

		if (m->multi) {
			fd = library_probe__attach_multi(
			    bpf_program__fd(program), path, &offset, &cookie, 1, which,
			    m->probe.only_pid > 0 ? m->probe.only_pid : 0);
			err = fd < 0 ? fd : library_probe__add_link_fd(&m->probe, fd);
		} else {
			err = library_probe__attach_uprobe(&m->probe, program, path, offset, cookie,
							   which);
		}
		if (err)
			return err;
	}
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

static bool is_cuda_library(const char *mapped, void *ctx)
{
	enum gpu_memory_library kind;

	(void)ctx;
	return library_kind(mapped, &kind);
}

static bool is_driver_library(const char *mapped, void *ctx)
{
	enum gpu_memory_library kind;

	(void)ctx;
	return library_kind(mapped, &kind) && kind == LIBRARY_DRIVER;
}

/*
 * cuGetProcAddress handed out address for call k in process pid: where no
 * probe of ours is, the call is probed there as at its exported function.
 * An address in no executable mapping of the driver is left alone.  The
 * process, stopped for this in record mode, goes on either way.  0 or
 * -ENOMEM.
 */
static int probe_entry_point(struct gpu_memory *m, pid_t pid, size_t k, uint64_t address)
{
	const struct gpu_memory_call *call = &gpu_memory_calls[k];
	struct library_probe_file file;
	char path[PATH_MAX + 64];
	size_t offset;
	int err;

	err = library_probe__locate(pid, address, is_driver_library, NULL, path, sizeof(path),
				    &file, &offset);
	if (err) {
		status__debug("GPU memory: %s handed out at 0x%llx in process %d, in no code of "
			      "the CUDA driver: not probed (%s)",
			      call->name, (unsigned long long)address, pid, strerror(-err));
		err = 0;
	} else if (!probed__has(m, &file, offset)) {
		err = probe_function(m, path, offset, GPU_MEMORY_COOKIE(call->shape, k), false);
		if (!err)
			err = probed__add(m, &file, offset);
		if (err && err != -ENOMEM)
			status__debug("GPU memory: cannot probe %s at %s+0x%zx: %s", call->name,
				      strrchr(path, '/') + 1, offset, strerror(-err));
		else if (!err)
			status__debug("GPU memory: %s handed out at %s+0x%zx, not its exported "
				      "function: probed there",
				      call->name, strrchr(path, '/') + 1, offset);
	}
	if (m->probe.stop_on_load)
		kill(pid, SIGCONT);
	return err == -ENOMEM ? err : 0;
}

/* An entry and a return probe on each allocation call of a CUDA library. */
static int probe_library(void *ctx, const char *path, const char *mapped)
{
	size_t offsets[sizeof(gpu_memory_calls) / sizeof(gpu_memory_calls[0])] = {0};
	struct gpu_memory *m = ctx;
	struct function_match match;
	unsigned int nr_functions = 0;
	struct stat st;
	bool known;
	int err;

	library_kind(mapped, &match.kind);
	err = library_probe__function_offsets(path, false, memory_call_index, &match, offsets);
	if (err) {
		status__warn("no CUDA memory functions found in %s: %s", mapped, strerror(-err));
		return 0;
	}
	/* What is probed here, for the addresses cuGetProcAddress hands out. */
	known = !stat(path, &st);
	for (size_t k = 0; known && k < gpu_memory_nr_calls; k++) {
		err = offsets[k]
			  ? probed__add(m, &(struct library_probe_file){st.st_dev, st.st_ino},
					offsets[k])
			  : 0;
		if (err)
			return err;
	}
	if (m->multi)
		return probe_library_multi(m, path, mapped, offsets);
	for (size_t k = 0; k < gpu_memory_nr_calls; k++) {
		const struct gpu_memory_call *call = &gpu_memory_calls[k];
		__u64 cookie = GPU_MEMORY_COOKIE(call->shape, k);

		if (!offsets[k])
			continue;
		err = probe_function(m, path, offsets[k], cookie,
				     call->shape == GPU_MEMORY_SET_DEVICE);
		if (err) {
			status__warn("cannot probe %s in %s: %s", call->symbol, mapped,
				     strerror(-err));
			return err;
		}
		nr_functions++;
	}
	status__debug("GPU memory: %u functions probed in %s", nr_functions, mapped);
	return 0;
}

static int record_call(void *ctx, const struct sample_event *e, uint32_t thread, uint32_t stack)
{
	struct gpu_memory *m = ctx;
	uint64_t cookie = e->detail[GPU_MEMORY_DETAIL_CALL];
	struct memory_event *event;
	int err;

	if (GPU_MEMORY_COOKIE_SHAPE(cookie) == GPU_MEMORY_LOADER)
		return library_probe__on_load(&m->probe, e->pid);
	if (GPU_MEMORY_COOKIE_SHAPE(cookie) == GPU_MEMORY_ENTRY_POINT) {
		if ((size_t)GPU_MEMORY_COOKIE_CALL(cookie) < gpu_memory_nr_calls)
			return probe_entry_point(m, e->pid, GPU_MEMORY_COOKIE_CALL(cookie),
						 e->detail[GPU_MEMORY_DETAIL_ENTRY_ADDRESS]);
		if (m->probe.stop_on_load)
			kill(e->pid, SIGCONT);
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

int gpu_memory__attach(struct gpu_memory *m, bool attach_mode)
{
	m->attach_mode = attach_mode;
	if (attach_mode) {
		pid_t *pids = malloc(MAX_SCANNED * sizeof(*pids));

		if (!pids)
			return -ENOMEM;
		m->before_known =
		    read_before_attach(m, pids, session__processes(m->session, pids, MAX_SCANNED));
		free(pids);
	}
	return library_probe__scan(&m->probe);
}

void gpu_memory__detach(struct gpu_memory *m)
{
	if (m)
		library_probe__detach(&m->probe);
}

int gpu_memory__finish(struct gpu_memory *m, struct session *session,
		       const struct profile *cpu_profile)
{
	int err;

	m->frames_profile = cpu_profile;
	m->start_ns = cpu_profile->start_ns;
	m->duration_ns = cpu_profile->duration_ns;
	for (size_t i = 0; i < m->nr_events; i++) {
		struct memory_event *e = &m->events[i];

		err = library_probe_stacks__resolve(&m->stacks, session, e->thread, e->stack,
						    &e->frames, &e->nr_frames);
		if (err)
			return err;
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
	library_probe__free(&m->probe);
	free(m->probed);
	free(m->before);
	gpu_memory_bpf__destroy(m->skel);
	free(m->events);
	library_probe_stacks__free(&m->stacks);
	free(m);
}

/* The probe family's row (lib/sampling/probe_family.h). */
static bool memory_wanted(const struct probe_family_env *env)
{
	return env->options->gpu_memory;
}

static int memory_open(void **state, const struct probe_family_env *env)
{
	int err =
	    gpu_memory__open((struct gpu_memory **)state, env->session, env->pid, env->record);

	if (err)
		status__error("cannot load the GPU memory probes: %s", status__bpf_error(err));
	return err;
}

static int memory_attach(void **state, const struct probe_family_env *env)
{
	int err = gpu_memory__attach(*state, !env->record);

	if (err)
		status__error("cannot probe the CUDA libraries of process %d: %s", env->pid,
			      strerror(-err));
	return err;
}

static void memory_detach(void *state)
{
	gpu_memory__detach(state);
}

static int memory_finish(void *state, struct probe_family_result *result)
{
	return gpu_memory__finish(state, result->session, result->profile);
}

static int memory_view(void *state, const char *view, const struct probe_family_result *result,
		       struct profile **out)
{
	enum gpu_memory_view kind;

	(void)result;
	if (!state || gpu_memory__parse_view(view, &kind))
		return 0;
	return gpu_memory__profile(state, kind, out);
}

static void memory_summary(const void *state, const struct profile *profile)
{
	(void)profile;
	gpu_memory__print_summary(state);
}

static void memory_close(void *state)
{
	gpu_memory__close(state);
}

const struct probe_family gpu_memory_family = {
    .name = "GPU memory",
    .wanted = memory_wanted,
    .open = memory_open,
    .attach = memory_attach,
    .detach = memory_detach,
    .finish = memory_finish,
    .view = memory_view,
    .views = (const char *const[]){"memory-peak", "memory-leaks", "memory-alloc", NULL},
    .summary = memory_summary,
    .close = memory_close,
};
