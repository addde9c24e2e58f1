// SPDX-License-Identifier: GPL-2.0
/*
 * The NCCL probes' userspace half: finds libnccl in the target's maps (now,
 * and later through the dynamic loader's probe), resolves the API's
 * functions with libelf under either name NCCL exports (nccl* and its
 * profiling alias pnccl*, one address), attaches an entry and a return
 * probe to each, keeps every call, and turns them into a table and a
 * profile weighted in bytes.
 */
#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "array.h"
#include "gpu/library_probe.h"
#include "gpu/nccl_probe.h"
#include "nccl.h"
#include "profile/text_output.h"
#include "sampler.h"
#include "status.h"

#include "nccl.skel.h"

#define LOADER_SYMBOL "_dl_debug_state"
#define DEFAULT_LOADER "/lib64/ld-linux-x86-64.so.2"
#define NCCL_STACK_COPY 4096
#define SUMMARY_ROWS 20
#define MAX_SCANNED 4096

struct nccl_call {
	const char *symbol; /* without the "p" of the profiling alias */
	const char *name;   /* as the leaf shows it */
	enum nccl_shape shape;
};

static const struct nccl_call calls[] = {
    {"ncclAllReduce", "AllReduce", NCCL_COLL_OP},
    {"ncclAllGather", "AllGather", NCCL_COLL},
    {"ncclReduceScatter", "ReduceScatter", NCCL_COLL_OP},
    {"ncclBroadcast", "Broadcast", NCCL_COLL_ROOT},
    {"ncclReduce", "Reduce", NCCL_COLL_OP_ROOT},
    {"ncclAlltoAll", "AllToAll", NCCL_COLL},
    {"ncclAllToAll", "AllToAll", NCCL_COLL},
    {"ncclSend", "Send", NCCL_P2P},
    {"ncclRecv", "Recv", NCCL_P2P},
    {"ncclGroupStart", "GroupStart", NCCL_GROUP},
    {"ncclGroupEnd", "GroupEnd", NCCL_GROUP},
    {"ncclCommInitRank", "CommInitRank", NCCL_INIT},
    {"ncclCommInitRankConfig", "CommInitRankConfig", NCCL_INIT},
    {"ncclCommInitRankScalable", "CommInitRankScalable", NCCL_INIT},
};
#define NR_CALLS (sizeof(calls) / sizeof(calls[0]))

/* ncclDataType_t (nccl.h, 2.28): int8, uint8, int32, uint32, int64, uint64,
 * float16, float32, float64, bfloat16, float8e4m3, float8e5m2. */
static const unsigned int type_sizes[] = {1, 1, 4, 4, 8, 8, 2, 4, 8, 2, 1, 1};

unsigned int nccl_probe__type_size(unsigned int type)
{
	return type < sizeof(type_sizes) / sizeof(type_sizes[0]) ? type_sizes[type] : 0;
}

struct library {
	dev_t dev;
	ino_t ino;
};

struct nccl_event {
	uint64_t time_ns, start_ns;
	uint64_t count, comm, stream;
	int64_t result;
	uint8_t type, op;
	int32_t peer;
	uint16_t call;
	uint32_t pid, tid;
	uint32_t thread, stack;
	int64_t frames; /* into nccl_probe.frames once resolved, or -1 */
	uint32_t nr_frames;
	/* The join with the GPU: a call in a group is launched by the
	 * group's outermost GroupEnd; a GroupEnd's members follow it in
	 * nccl_probe.members. */
	int64_t group_end;	     /* that GroupEnd's event, or -1 */
	size_t first_member, nr_members; /* GroupEnd */
	uint32_t ranks;		     /* the communicator's size, 0 when unknown */
	uint64_t gpu_ns;
	uint32_t kernels;
	int64_t frame; /* "[nccl] ..." in the merged profile, or -1 */
	int64_t activity_frame;
};

struct nccl_probe {
	struct nccl_bpf *skel;
	struct session *session;
	pid_t pid;
	bool stop_on_load;
	struct library *libraries;
	size_t nr_libraries, cap_libraries;
	struct bpf_link **links;
	size_t nr_links, cap_links;
	unsigned int nr_probed;
	int loader_error;

	pid_t only_pid; /* a selection of one process; else -1 */
	struct nccl_event *events;
	size_t nr_events, cap_events;
	uint64_t lost;
	size_t *by_thread; /* event indices by pid, tid, start */
	size_t *members;
	size_t nr_members;
	int64_t *joined_frames; /* the timeline frames of joined GPU work */
	size_t nr_joined_frames, cap_joined_frames;

	const struct profile *frames_profile;
	uint32_t *frames;
	size_t nr_frames, cap_frames;
	bool finished;
};

static int record_call(void *ctx, const struct sample_event *event, uint32_t thread,
		       uint32_t stack);

int nccl_probe__open(struct nccl_probe **out, struct session *session, pid_t pid, bool stop_on_load)
{
	struct capture_settings settings;
	struct nccl_probe *n = calloc(1, sizeof(*n));
	int err;

	if (!n)
		return -ENOMEM;
	n->session = session;
	n->pid = pid;
	n->only_pid = session__single_process(session) ? pid : -1;
	n->stop_on_load = stop_on_load;
	if (stop_on_load)
		session__add_load_stopper(session);
	n->skel = nccl_bpf__open();
	if (!n->skel) {
		err = -errno;
		goto fail;
	}
	session__capture_settings(session, &settings);
	n->skel->rodata->collect_kernel = settings.collect_kernel;
	n->skel->rodata->wakeup_bytes = settings.wakeup_bytes;
	n->skel->rodata->stack_copy_bytes = settings.stack_copy_bytes < NCCL_STACK_COPY
						? settings.stack_copy_bytes
						: NCCL_STACK_COPY;
	n->skel->rodata->stop_on_load = stop_on_load;
	err = session__share_maps(session, n->skel->obj);
	if (!err)
		err = nccl_bpf__load(n->skel);
	if (!err)
		err = session__set_record_handler(session, SAMPLE_KIND_NCCL, record_call, n);
	if (err)
		goto fail;
	*out = n;
	return 0;
fail:
	nccl_probe__close(n);
	return err;
}

/* Which call a symbol is: NCCL defines each as pnccl* and nccl*. */
static int nccl_call_index(const char *name, void *ctx)
{
	(void)ctx;
	if (name[0] == 'p')
		name++;
	if (strncmp(name, "nccl", 4))
		return -1;
	for (size_t k = 0; k < NR_CALLS; k++)
		if (!strcmp(name, calls[k].symbol))
			return k;
	return -1;
}

static int attach_probe(struct nccl_probe *n, const struct bpf_program *program, const char *path,
			size_t offset, __u64 cookie, bool retprobe)
{
	LIBBPF_OPTS(bpf_uprobe_opts, options, .bpf_cookie = cookie, .retprobe = retprobe);
	struct bpf_link *link;
	int err;

	err = array__grow((void **)&n->links, &n->cap_links, n->nr_links + 1, sizeof(*n->links));
	if (err)
		return err;
	/* As the GPU memory probes: with a process tree, one probe per file
	 * for every process, filtered in BPF by the target set. */
	link = bpf_program__attach_uprobe_opts(program, n->only_pid, path, offset, &options);
	if (!link)
		return -errno;
	n->links[n->nr_links++] = link;
	return 0;
}

static int probe_library(struct nccl_probe *n, pid_t pid, const char *mapped,
			 const struct stat *st)
{
	size_t offsets[NR_CALLS] = {0};
	char path[PATH_MAX + 64];
	unsigned int probed = 0;
	int err;

	snprintf(path, sizeof(path), "/proc/%d/root%s", pid, mapped);
	err = array__grow((void **)&n->libraries, &n->cap_libraries, n->nr_libraries + 1,
			  sizeof(*n->libraries));
	if (err)
		return err;
	n->libraries[n->nr_libraries].dev = st->st_dev;
	n->libraries[n->nr_libraries].ino = st->st_ino;
	n->nr_libraries++;
	err = library_probe__function_offsets(path, true, nccl_call_index, NULL, offsets);
	if (err) {
		report__warn("no NCCL functions found in %s: %s", mapped, strerror(-err));
		return 0;
	}
	for (size_t k = 0; k < NR_CALLS; k++) {
		__u64 cookie = NCCL_COOKIE(calls[k].shape, k);
		bool seen = false;

		for (size_t j = 0; j < k && !seen; j++)
			seen = offsets[j] == offsets[k];
		if (!offsets[k] || seen)
			continue;
		err = attach_probe(n, n->skel->progs.nccl_enter, path, offsets[k], cookie, false);
		if (!err)
			err = attach_probe(n, n->skel->progs.nccl_return, path, offsets[k], cookie,
					   true);
		if (err) {
			report__warn("cannot probe %s in %s: %s", calls[k].symbol, mapped,
				     strerror(-err));
			return err;
		}
		probed++;
	}
	n->nr_probed += probed;
	report__debug("NCCL: %u functions probed in %s", probed, mapped);
	return 0;
}

static bool is_nccl(const char *path)
{
	const char *base = strrchr(path, '/');

	return base && !strncmp(base + 1, "libnccl.so", 10);
}

static bool is_loader(const char *path)
{
	const char *base = strrchr(path, '/');

	return base && !strncmp(base + 1, "ld-linux", 8);
}

static int scan_maps(struct nccl_probe *n, pid_t pid, char *loader, size_t loader_size)
{
	char maps_path[64], line[PATH_MAX + 128];
	FILE *maps;
	int err = 0;

	snprintf(maps_path, sizeof(maps_path), "/proc/%d/maps", pid);
	maps = fopen(maps_path, "re");
	if (!maps)
		return -errno;
	while (fgets(line, sizeof(line), maps)) {
		char *path = strchr(line, '/'), full[PATH_MAX + 64];
		struct stat st;
		bool known = false;

		if (!path)
			continue;
		path[strcspn(path, "\n")] = '\0';
		if (loader && !loader[0] && is_loader(path))
			snprintf(loader, loader_size, "%s", path);
		if (!is_nccl(path))
			continue;
		snprintf(full, sizeof(full), "/proc/%d/root%s", pid, path);
		if (stat(full, &st))
			continue;
		for (size_t i = 0; i < n->nr_libraries && !known; i++)
			known =
			    n->libraries[i].dev == st.st_dev && n->libraries[i].ino == st.st_ino;
		if (known)
			continue;
		err = probe_library(n, pid, path, &st);
		if (err)
			break;
	}
	fclose(maps);
	return err;
}

static int record_call(void *ctx, const struct sample_event *e, uint32_t thread, uint32_t stack)
{
	struct nccl_probe *n = ctx;
	uint64_t cookie = e->detail[NCCL_DETAIL_CALL], type = e->detail[NCCL_DETAIL_TYPE];
	struct nccl_event *event;
	int err;

	if (NCCL_COOKIE_SHAPE(cookie) == NCCL_LOADER) {
		err = scan_maps(n, e->pid, NULL, 0);
		if (err && err != -ENOENT && !n->loader_error) {
			report__warn("cannot probe the libnccl process %d loaded: %s", e->pid,
				     strerror(-err));
			n->loader_error = err;
		}
		session__refresh_modules(n->session);
		if (n->stop_on_load)
			session__load_handled(n->session, e->pid);
		return 0;
	}
	if (NCCL_COOKIE_CALL(cookie) >= NR_CALLS)
		return 0;
	err =
	    array__grow((void **)&n->events, &n->cap_events, n->nr_events + 1, sizeof(*n->events));
	if (err)
		return err;
	event = &n->events[n->nr_events++];
	memset(event, 0, sizeof(*event));
	event->time_ns = e->time_ns;
	event->start_ns = e->detail[NCCL_DETAIL_START_NS];
	event->count = e->detail[NCCL_DETAIL_COUNT];
	event->comm = e->detail[NCCL_DETAIL_COMM];
	event->stream = e->detail[NCCL_DETAIL_STREAM];
	event->result = (int64_t)e->detail[NCCL_DETAIL_RESULT];
	event->type = type & 0xff;
	event->op = (type >> 8) & 0xff;
	event->peer = (int32_t)(type >> 32);
	event->call = NCCL_COOKIE_CALL(cookie);
	event->pid = e->pid;
	event->tid = e->tid;
	event->group_end = -1;
	event->frame = event->activity_frame = -1;
	event->thread = thread;
	event->stack = stack;
	event->frames = -1;
	report__debug("NCCL: %s count %" PRIu64 " type %u op %u peer %d comm 0x%" PRIx64
		      " stream 0x%" PRIx64 ": %" PRId64,
		      calls[event->call].name, event->count, event->type, event->op, event->peer,
		      event->comm, event->stream, event->result);
	return 0;
}

int nccl_probe__attach(struct nccl_probe *n)
{
	LIBBPF_OPTS(bpf_uprobe_opts, options, .func_name = LOADER_SYMBOL);
	char loader[PATH_MAX] = "", path[PATH_MAX + 64];
	pid_t pids[MAX_SCANNED];
	struct bpf_link *link;
	size_t nr;
	int err = 0;

	/* The selection as it is now; processes that join it later map the
	 * files probed already, or tell their loader's probe. */
	nr = session__processes(n->session, pids, MAX_SCANNED);
	for (size_t i = 0; i < nr && !err; i++) {
		err = scan_maps(n, pids[i], pids[i] == n->pid ? loader : NULL, sizeof(loader));
		if (err == -ENOENT || err == -ESRCH)
			err = 0;
	}
	if (err)
		return err;
	if (loader[0])
		snprintf(path, sizeof(path), "/proc/%d/root%s", n->pid, loader);
	else
		snprintf(path, sizeof(path), "%s", DEFAULT_LOADER);
	link = bpf_program__attach_uprobe_opts(n->skel->progs.nccl_loader, n->only_pid, path, 0,
					       &options);
	if (!link) {
		report__warn("cannot probe the dynamic loader (%s): a libnccl loaded from now "
			     "on is not seen",
			     strerror(errno));
		return 0;
	}
	err = array__grow((void **)&n->links, &n->cap_links, n->nr_links + 1, sizeof(*n->links));
	if (err) {
		bpf_link__destroy(link);
		return err;
	}
	n->links[n->nr_links++] = link;
	return 0;
}

unsigned int nccl_probe__nr_probed(const struct nccl_probe *n)
{
	return n ? n->nr_probed : 0;
}

void nccl_probe__detach(struct nccl_probe *n)
{
	if (!n || !n->nr_links)
		return;
	library_probe__destroy_links(n->links, n->nr_links);
	n->nr_links = 0;
	if (n->stop_on_load)
		kill(n->pid, SIGCONT);
}

static void read_lost(struct nccl_probe *n)
{
	int nr_cpus = libbpf_num_possible_cpus();
	uint64_t *values = calloc(nr_cpus > 0 ? nr_cpus : 1, sizeof(*values));
	__u32 key = COUNTER_LOST_NCCL;

	if (!values)
		return;
	if (!bpf_map_lookup_elem(bpf_map__fd(n->skel->maps.counters), &key, values))
		for (int cpu = 0; cpu < nr_cpus; cpu++)
			n->lost += values[cpu];
	free(values);
}

static bool moves_data(const struct nccl_event *e);
static uint64_t bytes_of(const struct nccl_event *e);
static uint64_t bucket_of(uint64_t bytes);

static const struct nccl_probe *sort_probe;

static int compare_by_thread(const void *a, const void *b)
{
	const struct nccl_event *x = &sort_probe->events[*(const size_t *)a];
	const struct nccl_event *y = &sort_probe->events[*(const size_t *)b];

#define CMP(f)                                                                                     \
	if (x->f != y->f)                                                                          \
		return x->f < y->f ? -1 : 1;
	CMP(pid);
	CMP(tid);
	CMP(start_ns);
	CMP(time_ns);
#undef CMP
	return 0;
}

static bool is_call(const struct nccl_event *e, const char *name)
{
	return !strcmp(calls[e->call].name, name);
}

/* Each thread's calls in time order; which calls each outermost GroupEnd
 * launched; and each call's communicator size, from the CommInitRank* that
 * made its communicator in its process. */
static int prepare_joins(struct nccl_probe *n)
{
	size_t nr = n->nr_events, depth = 0, first = 0;

	n->by_thread = malloc((nr ? nr : 1) * sizeof(*n->by_thread));
	n->members = malloc((nr ? nr : 1) * sizeof(*n->members));
	if (!n->by_thread || !n->members)
		return -ENOMEM;
	for (size_t i = 0; i < nr; i++)
		n->by_thread[i] = i;
	sort_probe = n;
	qsort(n->by_thread, nr, sizeof(*n->by_thread), compare_by_thread);
	for (size_t k = 0; k < nr; k++) {
		struct nccl_event *e = &n->events[n->by_thread[k]];
		const struct nccl_event *prev = k ? &n->events[n->by_thread[k - 1]] : NULL;

		if (prev && (prev->pid != e->pid || prev->tid != e->tid))
			depth = 0;
		if (is_call(e, "GroupStart") && !e->result) {
			if (!depth++)
				first = k;
		} else if (is_call(e, "GroupEnd") && depth) {
			if (--depth)
				continue;
			e->first_member = n->nr_members;
			for (size_t j = first + 1; j < k; j++) {
				struct nccl_event *m = &n->events[n->by_thread[j]];

				if (!moves_data(m) || m->result)
					continue;
				m->group_end = n->by_thread[k];
				n->members[n->nr_members++] = n->by_thread[j];
				e->nr_members++;
			}
		}
	}
	for (size_t i = 0; i < nr; i++) {
		struct nccl_event *e = &n->events[i];

		if (!moves_data(e))
			continue;
		for (size_t k = 0; k < nr; k++) {
			const struct nccl_event *init = &n->events[k];

			if (calls[init->call].shape == NCCL_INIT && !init->result &&
			    init->pid == e->pid && init->comm == e->comm && e->comm) {
				e->ranks = init->count;
				break;
			}
		}
	}
	return 0;
}

int nccl_probe__finish(struct nccl_probe *n, struct session *session,
		       const struct profile *cpu_profile)
{
	uint32_t frames[1024];
	int err;

	read_lost(n);
	n->frames_profile = cpu_profile;
	for (size_t i = 0; i < n->nr_events; i++) {
		struct nccl_event *e = &n->events[i];
		size_t depth = 0;

		for (size_t k = i; k-- > 0 && i - k < 64;) {
			if (n->events[k].stack == e->stack && n->events[k].thread == e->thread) {
				e->frames = n->events[k].frames;
				e->nr_frames = n->events[k].nr_frames;
				break;
			}
		}
		if (e->frames >= 0)
			continue;
		err = session__stack_frames(session, e->thread, e->stack, frames,
					    sizeof(frames) / sizeof(frames[0]), &depth);
		if (err)
			return err;
		err = array__grow((void **)&n->frames, &n->cap_frames, n->nr_frames + depth,
				  sizeof(*n->frames));
		if (err)
			return err;
		memcpy(n->frames + n->nr_frames, frames, depth * sizeof(*frames));
		e->frames = n->nr_frames;
		e->nr_frames = depth;
		n->nr_frames += depth;
	}
	err = prepare_joins(n);
	if (err)
		return err;
	n->finished = true;
	return 0;
}

/* Collectives and point-to-point calls move data; group and communicator
 * calls do not. */
static bool moves_data(const struct nccl_event *e)
{
	enum nccl_shape shape = calls[e->call].shape;

	return shape != NCCL_GROUP && shape != NCCL_INIT;
}

static uint64_t bytes_of(const struct nccl_event *e)
{
	return e->count * nccl_probe__type_size(e->type);
}

/* The power of two at or above bytes: the size bucket. */
static uint64_t bucket_of(uint64_t bytes)
{
	uint64_t bucket = 1;

	while (bucket < bytes && bucket < (1ULL << 62))
		bucket <<= 1;
	return bytes ? bucket : 0;
}

int nccl_probe__profile(const struct nccl_probe *n, struct profile **out)
{
	const struct profile *cpu = n->frames_profile;
	uint32_t frames[1024 + 1];
	int64_t *ids = NULL;
	struct profile *p;
	int err = -ENOMEM;

	if (!n->finished)
		return -EINVAL;
	p = profile__new();
	ids = malloc((cpu->nr_frames ? cpu->nr_frames : 1) * sizeof(*ids));
	if (!p || !ids)
		goto fail;
	for (size_t i = 0; i < cpu->nr_frames; i++)
		ids[i] = -1;
	p->unit = UNIT_BYTES;
	p->start_ns = cpu->start_ns;
	p->duration_ns = cpu->duration_ns;
	if (cpu->name && !(p->name = strdup(cpu->name)))
		goto fail;
	for (size_t i = 0; i < n->nr_events; i++) {
		const struct nccl_event *e = &n->events[i];
		size_t depth = 0, nr = e->nr_frames < 1024 ? e->nr_frames : 1024;
		char leaf[96], size[32];
		int64_t id;

		if (!moves_data(e) || !bytes_of(e))
			continue;
		for (size_t k = 0; k < nr; k++) {
			uint32_t from = n->frames[e->frames + k];
			const struct frame *f = &cpu->frames[from];

			if (ids[from] < 0)
				ids[from] =
				    profile__intern_frame(p, f->name, f->file, f->line, f->kind);
			if (ids[from] < 0)
				goto fail;
			frames[depth++] = ids[from];
		}
		text_output__bytes(size, sizeof(size), bytes_of(e));
		/* A failed call moved nothing: its leaf says so, weighted by
		 * what it asked for. */
		snprintf(leaf, sizeof(leaf), "[nccl] %s %s%s", calls[e->call].name, size,
			 e->result ? " (failed)" : "");
		id = profile__intern_frame(p, leaf, NULL, 0, FRAME_NATIVE);
		if (id < 0)
			goto fail;
		frames[depth++] = id;
		id = profile__intern_stack(p, frames, depth);
		if (id < 0)
			goto fail;
		profile__add_weight(p, id, bytes_of(e));
	}
	free(ids);
	*out = p;
	return 0;
fail:
	free(ids);
	profile__free(p);
	return err;
}

/* nccl-tests' size: all ranks' data for AllGather, ReduceScatter and
 * AllToAll, whose count is one rank's. */
static uint64_t size_of(const struct nccl_event *e)
{
	bool per_rank = is_call(e, "AllGather") || is_call(e, "ReduceScatter") ||
			is_call(e, "AllToAll");

	return bytes_of(e) * (per_rank && e->ranks ? e->ranks : 1);
}

/* The call on (pid, tid) that was running at time_ns, or NULL. */
static struct nccl_event *call_at(const struct nccl_probe *n, uint32_t pid, uint32_t tid,
				  uint64_t time_ns)
{
	size_t lo = 0, hi = n->nr_events;
	struct nccl_event *e;

	while (lo < hi) {
		size_t mid = (lo + hi) / 2;
		const struct nccl_event *m = &n->events[n->by_thread[mid]];

		if (m->pid < pid || (m->pid == pid && m->tid < tid) ||
		    (m->pid == pid && m->tid == tid && m->start_ns <= time_ns))
			lo = mid + 1;
		else
			hi = mid;
	}
	if (!lo)
		return NULL;
	e = &n->events[n->by_thread[lo - 1]];
	if (e->pid != pid || e->tid != tid || time_ns > e->time_ns)
		return NULL;
	return e;
}

/* "[nccl] AllReduce 4.0 MiB"; a group's calls joined with " + ". */
static int64_t call_frame(const struct nccl_probe *n, struct profile *p, struct nccl_event *e)
{
	char name[256], size[32];
	size_t used, nr = e->nr_members ? e->nr_members : 1;

	if (e->frame >= 0)
		return e->frame;
	used = snprintf(name, sizeof(name), "[nccl]");
	for (size_t k = 0; k < nr && used < sizeof(name); k++) {
		const struct nccl_event *m = e->nr_members ? &n->events[n->members[e->first_member + k]] : e;

		if (k == 3) {
			snprintf(name + used, sizeof(name) - used, " + %zu more", nr - k);
			break;
		}
		text_output__bytes(size, sizeof(size), bytes_of(m));
		used += snprintf(name + used, sizeof(name) - used, "%s %s %s", k ? " +" : "",
				 calls[m->call].name, size);
	}
	e->frame = profile__intern_frame(p, name, NULL, 0, FRAME_NATIVE);
	return e->frame;
}

/*
 * A kernel launched inside a thread's NCCL call (or inside the GroupEnd of
 * its group) is that call's: its frame goes above the kernel, its GPU time
 * to the call (a group's split among its calls by bytes).  The launch stack
 * went through the return probe of the NCCL call, which replaced a return
 * address with the uretprobe trampoline: the call's own stack (taken at
 * its return) says which frame that was.
 */
int64_t nccl_probe__join(void *ctx, struct profile *p, struct gpu_join *j)
{
	struct nccl_probe *n = ctx;
	struct nccl_event *e;
	const uint32_t *own;
	uint64_t duration, total = 0, given = 0;
	char name[320];
	size_t k = 0;
	int64_t frame;

	if (!n || !n->finished || !n->nr_events || p != n->frames_profile)
		return -1;
	e = call_at(n, j->pid, j->tid, j->launch_ns);
	if (!e || e->result || (is_call(e, "GroupEnd") ? !e->nr_members : !moves_data(e)) ||
	    e->group_end >= 0)
		return -1;
	frame = call_frame(n, p, e);
	if (frame < 0)
		return frame;
	own = n->frames + e->frames;
	while (k < e->nr_frames && k < j->depth && own[k] == j->frames[k])
		k++;
	if (k + 1 == e->nr_frames && k + 1 < j->depth &&
	    (p->frames[j->frames[k]].kind == FRAME_UNKNOWN ||
	     !strncmp(p->frames[j->frames[k]].name, "[unknown", 8)))
		j->frames[k] = own[k];
	snprintf(name, sizeof(name), "%s (%s)", j->kernel, p->frames[frame].name + 7);
	j->activity_frame = profile__intern_frame(p, name, NULL, 0, FRAME_GPU);
	if (j->activity_frame < 0)
		return j->activity_frame;
	k = 0;
	while (k < n->nr_joined_frames && n->joined_frames[k] != j->activity_frame)
		k++;
	if (k == n->nr_joined_frames) {
		if (array__grow((void **)&n->joined_frames, &n->cap_joined_frames, k + 1,
				sizeof(*n->joined_frames)))
			return -ENOMEM;
		n->joined_frames[n->nr_joined_frames++] = j->activity_frame;
	}
	duration = j->record->end_ns > j->record->start_ns
		       ? j->record->end_ns - j->record->start_ns
		       : 0;
	e->kernels++;
	if (!e->nr_members) {
		e->gpu_ns += duration;
		return frame;
	}
	for (size_t i = 0; i < e->nr_members; i++)
		total += size_of(&n->events[n->members[e->first_member + i]]);
	for (size_t i = 0; i < e->nr_members; i++) {
		struct nccl_event *m = &n->events[n->members[e->first_member + i]];
		uint64_t part = i + 1 == e->nr_members ? duration - given
				: total ? (uint64_t)((double)duration * size_of(m) / total)
					: duration / e->nr_members;

		m->gpu_ns += part;
		m->kernels++;
		given += part;
	}
	return frame;
}

struct span {
	uint64_t start, end;
};

static int compare_spans(const void *a, const void *b)
{
	const struct span *x = a, *y = b;

	if (x->start != y->start)
		return x->start < y->start ? -1 : 1;
	return x->end < y->end ? -1 : x->end > y->end;
}

/* Sorts and merges spans into disjoint ones; how many remain. */
static size_t span_union(struct span *v, size_t nr)
{
	size_t out = 0;

	qsort(v, nr, sizeof(*v), compare_spans);
	for (size_t i = 0; i < nr; i++) {
		if (out && v[i].start <= v[out - 1].end) {
			if (v[i].end > v[out - 1].end)
				v[out - 1].end = v[i].end;
		} else {
			v[out++] = v[i];
		}
	}
	return out;
}

/* Communication: NCCL's kernels, joined to a call or not (NCCL launched
 * before the probes were in), and whatever GPU work a call was joined to
 * (a one-rank communicator's copies). */
static bool is_communication(const struct nccl_probe *n, const struct profile *p,
			     const struct gpu_activity *a)
{
	for (size_t k = 0; k < n->nr_joined_frames; k++)
		if (n->joined_frames[k] == a->frame)
			return true;
	return a->kind == GPU_KERNEL && a->frame < p->nr_frames &&
	       strcasestr(p->frames[a->frame].name, "nccl");
}

/* Communication time on each device, and the part of it no compute kernel
 * ran beside. */
static int exposed_time(const struct nccl_probe *n, const struct profile *p,
			struct nccl_facts *f)
{
	struct span *comm = malloc((p->nr_gpu ? p->nr_gpu : 1) * sizeof(*comm));
	struct span *compute = malloc((p->nr_gpu ? p->nr_gpu : 1) * sizeof(*compute));
	uint32_t devices[64];
	size_t nr_devices = 0;

	if (!comm || !compute) {
		free(comm);
		free(compute);
		return -ENOMEM;
	}
	for (size_t i = 0; i < p->nr_gpu; i++) {
		size_t d = 0;

		while (d < nr_devices && devices[d] != p->gpu[i].device)
			d++;
		if (d == nr_devices && nr_devices < 64 && is_communication(n, p, &p->gpu[i]))
			devices[nr_devices++] = p->gpu[i].device;
	}
	for (size_t d = 0; d < nr_devices; d++) {
		size_t nr_comm = 0, nr_compute = 0, c = 0;

		for (size_t i = 0; i < p->nr_gpu; i++) {
			const struct gpu_activity *a = &p->gpu[i];
			struct span s = {a->start_ns, a->end_ns};

			if (a->device != devices[d])
				continue;
			if (is_communication(n, p, a))
				comm[nr_comm++] = s;
			else if (a->kind == GPU_KERNEL)
				compute[nr_compute++] = s;
		}
		nr_comm = span_union(comm, nr_comm);
		nr_compute = span_union(compute, nr_compute);
		for (size_t i = 0; i < nr_comm; i++) {
			uint64_t hidden = 0;

			while (c < nr_compute && compute[c].end <= comm[i].start)
				c++;
			for (size_t k = c; k < nr_compute && compute[k].start < comm[i].end; k++) {
				uint64_t from = compute[k].start > comm[i].start ? compute[k].start
										 : comm[i].start;
				uint64_t to = compute[k].end < comm[i].end ? compute[k].end : comm[i].end;

				hidden += to - from;
			}
			f->kernel_ns += comm[i].end - comm[i].start;
			f->exposed_ns += comm[i].end - comm[i].start - hidden;
		}
	}
	f->devices = nr_devices;
	free(comm);
	free(compute);
	return 0;
}

static int compare_nccl_rows(const void *a, const void *b)
{
	const struct nccl_row *x = a, *y = b;
	int c = strcmp(x->operation, y->operation);

	if (c)
		return c;
	if (x->bucket != y->bucket)
		return x->bucket < y->bucket ? -1 : 1;
	return x->ranks < y->ranks ? -1 : x->ranks > y->ranks;
}

int nccl_probe__facts(const struct nccl_probe *n, struct profile *p)
{
	struct nccl_facts f = {.known = true};
	size_t cap = 0;
	int err;

	if (!n || !n->finished || (!n->nr_events && !n->nr_probed))
		return 0;
	for (size_t i = 0; i < n->nr_events; i++) {
		const struct nccl_event *e = &n->events[i];
		uint64_t bucket = bucket_of(bytes_of(e));
		struct nccl_row *r = NULL;

		if (!moves_data(e) || e->result)
			continue;
		for (size_t k = 0; k < f.nr_rows && !r; k++)
			if (!strcmp(f.rows[k].operation, calls[e->call].name) &&
			    f.rows[k].bucket == bucket && f.rows[k].ranks == e->ranks)
				r = &f.rows[k];
		if (!r) {
			if (array__grow((void **)&f.rows, &cap, f.nr_rows + 1, sizeof(*f.rows))) {
				free(f.rows);
				return -ENOMEM;
			}
			r = &f.rows[f.nr_rows++];
			memset(r, 0, sizeof(*r));
			snprintf(r->operation, sizeof(r->operation), "%s", calls[e->call].name);
			r->bucket = bucket;
			r->ranks = e->ranks;
		}
		r->calls++;
		r->bytes += bytes_of(e);
		r->size += size_of(e);
		if (e->kernels) {
			r->timed_calls++;
			r->timed_size += size_of(e);
			r->gpu_ns += e->gpu_ns;
		}
	}
	qsort(f.rows, f.nr_rows, sizeof(*f.rows), compare_nccl_rows);
	f.wall_ns = p->duration_ns;
	err = exposed_time(n, p, &f);
	if (err) {
		free(f.rows);
		return err;
	}
	free(p->nccl.rows);
	p->nccl = f;
	return 0;
}

struct row {
	uint16_t call;
	uint64_t bucket, calls, bytes;
	int64_t result;
	size_t first;
};

static int compare_rows(const void *a, const void *b)
{
	const struct row *x = a, *y = b;

	if (strcmp(calls[x->call].name, calls[y->call].name))
		return strcmp(calls[x->call].name, calls[y->call].name);
	return x->bucket < y->bucket ? -1 : x->bucket > y->bucket;
}

static const char *result_name(int64_t result)
{
	static const char *const names[] = {
	    "ncclSuccess",	   "ncclUnhandledCudaError", "ncclSystemError", "ncclInternalError",
	    "ncclInvalidArgument", "ncclInvalidUsage",	     "ncclRemoteError", "ncclInProgress",
	};

	return result >= 0 && result < 8 ? names[result] : "unknown error";
}

void nccl_probe__print_summary(const struct nccl_probe *n)
{
	struct row *rows = NULL, *failed = NULL;
	size_t nr_rows = 0, cap_rows = 0, nr_failed = 0, cap_failed = 0;
	uint64_t total_calls = 0, total_bytes = 0, groups = 0;

	if (!n || !n->finished || (!n->nr_events && !n->nr_probed))
		return;
	for (size_t i = 0; i < n->nr_events; i++) {
		const struct nccl_event *e = &n->events[i];
		struct row **list = e->result ? &failed : &rows;
		size_t *nr = e->result ? &nr_failed : &nr_rows;
		size_t *cap = e->result ? &cap_failed : &cap_rows;
		uint64_t bucket = bucket_of(bytes_of(e));
		size_t k;

		if (!e->result && calls[e->call].shape == NCCL_GROUP) {
			groups += !strcmp(calls[e->call].name, "GroupEnd");
			continue;
		}
		if (!e->result && !moves_data(e))
			continue;
		for (k = 0; k < *nr; k++)
			if (!strcmp(calls[(*list)[k].call].name, calls[e->call].name) &&
			    (*list)[k].bucket == bucket &&
			    (!e->result ||
			     ((*list)[k].result == e->result && (*list)[k].first < n->nr_events &&
			      n->events[(*list)[k].first].stack == e->stack)))
				break;
		if (k == *nr) {
			if (array__grow((void **)list, cap, *nr + 1, sizeof(**list)))
				goto out;
			(*list)[k] = (struct row){
			    .call = e->call, .bucket = bucket, .result = e->result, .first = i};
			(*nr)++;
		}
		(*list)[k].calls++;
		(*list)[k].bytes += bytes_of(e);
		if (!e->result) {
			total_calls++;
			total_bytes += bytes_of(e);
		}
	}
	qsort(rows, nr_rows, sizeof(*rows), compare_rows);
	{
		char bytes[32];

		text_output__bytes(bytes, sizeof(bytes), total_bytes);
		report__info("NCCL: %" PRIu64 " calls, %s, %" PRIu64
			     " groups, %u functions probed%s",
			     total_calls, bytes, groups, n->nr_probed,
			     n->lost ? " (some calls lost: ring buffer full)" : "");
	}
	{
		char *table = nccl_facts__format(&n->frames_profile->nccl, "");

		for (char *line = table, *end; line && *line; line = end + 1) {
			end = strchrnul(line, '\n');
			report__info("  %.*s", (int)(end - line), line);
			if (!*end)
				break;
		}
		free(table);
	}
	if (nr_failed)
		report__info("  failed calls:");
	for (size_t k = 0; k < nr_failed && k < SUMMARY_ROWS; k++) {
		const struct nccl_event *e = &n->events[failed[k].first];
		char stack[512];
		char bytes[32] = "";

		if (moves_data(e))
			text_output__bytes(bytes, sizeof(bytes), bytes_of(e));
		library_probe__describe_stack(n->frames_profile, n->frames + e->frames,
					      e->nr_frames, stack, sizeof(stack));
		report__info("    %" PRIu64 " x %s%s%s: %s (%" PRId64 ") at %s", failed[k].calls,
			     calls[e->call].name, bytes[0] ? " " : "", bytes,
			     result_name(e->result), e->result, stack);
	}
out:
	free(rows);
	free(failed);
}

void nccl_probe__close(struct nccl_probe *n)
{
	if (!n)
		return;
	nccl_probe__detach(n);
	nccl_bpf__destroy(n->skel);
	free(n->links);
	free(n->libraries);
	free(n->events);
	free(n->frames);
	free(n->by_thread);
	free(n->members);
	free(n->joined_frames);
	free(n);
}
