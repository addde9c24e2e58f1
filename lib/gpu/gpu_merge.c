// SPDX-License-Identifier: GPL-2.0
/*
 * The merge of received GPU records into a profile, on the CPU stacks of
 * the launches that made them, and the GPU summary of a merged profile.
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/random.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include "array.h"
#include "spans.h"
#include "gpu/gpu_protocol.h"
#include "gpu/agent_server.h"
#include "gpu/agent_server_internal.h"
#include "status.h"
#include "sampling/symbolizer.h"

struct merge_state {
	struct agent_server *gs;
	struct profile *profile;
	const struct gpu_merge_options *options;
	int64_t *kernel_frames;			       /* name index -> frame id + 1 */
	int64_t memcpy_frames[GPU_MEMCPY_PTOP + 2][3]; /* by copy kind and host memory */
	int64_t memset_frame, unknown_kernel_frame, unattributed_frame;
	int64_t *process_frames; /* per agent, frame id + 1 */
	uint64_t *stack_ns;	 /* per stack id */
	size_t cap_stack_ns;
	uint32_t *frames; /* MAX_STACK + 3 */
};

static int compare_records(const void *a, const void *b, void *ctx)
{
	const struct gpu_record *records = ctx;
	const struct gpu_record *x = &records[*(const size_t *)a];
	const struct gpu_record *y = &records[*(const size_t *)b];

#define CMP(f)                                                                                     \
	if (x->f != y->f)                                                                          \
		return x->f < y->f ? -1 : 1;
	CMP(device);
	CMP(stream);
	CMP(start_ns);
	CMP(end_ns);
	CMP(agent);
	CMP(correlation);
	CMP(kind);
	CMP(name);
#undef CMP
	return 0;
}

/* A frame interned on first use; *slot keeps its id + 1 (or the error). */
static int64_t intern_once(struct profile *p, int64_t *slot, const char *name, enum frame_kind kind)
{
	if (!*slot) {
		int64_t id = profile__intern_frame(p, name, NULL, 0, kind);

		*slot = id < 0 ? id : id + 1;
	}
	return *slot < 0 ? *slot : *slot - 1;
}

static int64_t leaf_frame(struct merge_state *m, const struct gpu_record *r)
{
	struct profile *p = m->profile;
	const char *mangled;
	char *demangled;
	char name[64];
	int64_t id;

	if (r->kind == GPU_MEMSET)
		return intern_once(p, &m->memset_frame, "memset", FRAME_GPU);
	if (r->kind == GPU_MEMCPY) {
		uint32_t kind = r->name <= GPU_MEMCPY_PTOP ? r->name : GPU_MEMCPY_UNKNOWN;

		/* Pageable host memory is staged and blocks the caller: say
		 * so in the frame, where every viewer shows it. */
		int host = r->src_memory == 1 || r->dst_memory == 1   ? 1
			   : r->src_memory == 2 || r->dst_memory == 2 ? 2
								      : 0;

		snprintf(name, sizeof(name), "memcpy %s%s", gpu_memcpy_kind__name(kind),
			 host == 1   ? " (pageable)"
			 : host == 2 ? " (pinned)"
				     : "");
		return intern_once(p, &m->memcpy_frames[kind][host], name, FRAME_GPU);
	}
	if (r->name == NO_NAME || r->name >= m->gs->names.nr)
		return intern_once(p, &m->unknown_kernel_frame, "[unknown kernel]", FRAME_GPU);
	if (m->kernel_frames[r->name])
		return intern_once(p, &m->kernel_frames[r->name], NULL, FRAME_GPU);
	mangled = m->gs->names.strings[r->name];
	/* As perf shows C++ names, like CPU frames. */
	demangled = symbolizer__demangle(mangled);
	id = intern_once(p, &m->kernel_frames[r->name], demangled ? demangled : mangled, FRAME_GPU);
	free(demangled);
	return id;
}

static int64_t process_frame(struct merge_state *m, uint32_t agent)
{
	struct profile *p = m->profile;
	const char *name = m->options->process_name;
	int64_t *slot = &m->process_frames[agent];

	if (!*slot && !name) {
		for (size_t i = 0; i < p->nr_frames; i++) {
			if (p->frames[i].kind == FRAME_PROCESS) {
				*slot = i + 1;
				break;
			}
		}
		name = m->gs->agents[agent].comm[0] ? m->gs->agents[agent].comm : "[process]";
	}
	return intern_once(p, slot, name, FRAME_PROCESS);
}

/* The core's stack for one correlation id, whose launch record is at (or
 * NULL), into m->frames; its depth, or 0. */
static size_t stack_at(struct merge_state *m, uint32_t agent, uint32_t correlation,
		       const struct gpu_launch_record *at)
{
	bool own_tids = !m->gs->agents[agent].other_pid_namespace;
	size_t depth = 0;

	if (!correlation ||
	    m->options->launch_stack(m->options->ctx, correlation, at && own_tids ? at->tid : 0,
				     at ? at->time_ns : 0, m->frames, MAX_STACK, &depth) ||
	    !depth || depth > MAX_STACK)
		return 0;
	for (size_t d = 0; d < depth; d++)
		if (m->frames[d] >= m->profile->nr_frames)
			return 0;
	return depth;
}

static size_t stack_of(struct merge_state *m, uint32_t agent, uint32_t correlation)
{
	return stack_at(m, agent, correlation, agent_server__launch(m->gs, agent, correlation));
}

/* The launch stack of a record into m->frames; its depth, 0 if none.  The
 * outermost call first: its probe is the one that fired. */
static size_t launch_stack(struct merge_state *m, const struct gpu_record *r, uint32_t *correlation)
{
	const struct gpu_launch_record *l = agent_server__outer_launch(m->gs, r);
	uint32_t ids[4];
	size_t n = 0, depth;

	if (!m->options->launch_stack)
		return 0;
	if (l)
		ids[n++] = l->correlation;
	if (r->runtime_correlation)
		ids[n++] = r->runtime_correlation;
	ids[n++] = r->correlation;
	for (size_t i = 0; i < n; i++) {
		if (i && ids[i] == ids[0])
			continue;
		depth = stack_of(m, r->agent, ids[i]);
		if (depth) {
			*correlation = ids[i];
			return depth;
		}
	}
	return 0;
}

/*
 * Launches that fired no probe (rate limit, or the probe's event was lost)
 * take the stack of a probed launch of the same kernel: on the same thread
 * and nearest in time, else on any thread of that process.
 */
struct probed {
	uint32_t agent;
	uint32_t key; /* kernel name index, or a memcpy/memset key */
	uint32_t tid;
	uint32_t correlation;
	uint64_t time_ns;
};

static uint32_t record_key(const struct gpu_record *r)
{
	if (r->kind == GPU_MEMCPY)
		return 0xfffffe00u | (r->name & 0xff);
	if (r->kind == GPU_MEMSET)
		return 0xffffff00u;
	return r->name;
}

static int compare_probed_tid(const void *a, const void *b)
{
	const struct probed *x = a, *y = b;

#define CMP(f)                                                                                     \
	if (x->f != y->f)                                                                          \
		return x->f < y->f ? -1 : 1;
	CMP(agent);
	CMP(key);
	CMP(tid);
	CMP(time_ns);
	CMP(correlation);
#undef CMP
	return 0;
}

static int compare_probed_time(const void *a, const void *b)
{
	const struct probed *x = a, *y = b;

#define CMP(f)                                                                                     \
	if (x->f != y->f)                                                                          \
		return x->f < y->f ? -1 : 1;
	CMP(agent);
	CMP(key);
	CMP(time_ns);
	CMP(tid);
	CMP(correlation);
#undef CMP
	return 0;
}

/* In [lo, hi) of sorted entries equal in what cmp compares but time, the
 * one nearest to time_ns (the earlier one on a tie). */
static const struct probed *nearest(const struct probed *v, size_t lo, size_t hi, uint64_t time_ns)
{
	size_t first = lo, last = hi;

	if (lo == hi)
		return NULL;
	while (lo < hi) {
		size_t mid = (lo + hi) / 2;

		if (v[mid].time_ns < time_ns)
			lo = mid + 1;
		else
			hi = mid;
	}
	if (lo == last)
		return &v[lo - 1];
	if (lo == first || v[lo].time_ns - time_ns < time_ns - v[lo - 1].time_ns)
		return &v[lo];
	return &v[lo - 1];
}

/* The range of v (n entries) that matches key on the fields cmp orders
 * first; matching is done by cmp on a probe entry. */
static void equal_range(const struct probed *v, size_t n, const struct probed *key,
			int (*prefix)(const struct probed *, const struct probed *), size_t *lo,
			size_t *hi)
{
	size_t l = 0, h = n;

	while (l < h) {
		size_t mid = (l + h) / 2;

		if (prefix(&v[mid], key) < 0)
			l = mid + 1;
		else
			h = mid;
	}
	*lo = l;
	h = n;
	while (l < h) {
		size_t mid = (l + h) / 2;

		if (prefix(&v[mid], key) <= 0)
			l = mid + 1;
		else
			h = mid;
	}
	*hi = l;
}

static int prefix_agent_key(const struct probed *x, const struct probed *y)
{
	if (x->agent != y->agent)
		return x->agent < y->agent ? -1 : 1;
	return x->key < y->key ? -1 : x->key > y->key;
}

static int prefix_agent_key_tid(const struct probed *x, const struct probed *y)
{
	int c = prefix_agent_key(x, y);

	if (c)
		return c;
	return x->tid < y->tid ? -1 : x->tid > y->tid;
}

static size_t inferred_stack(struct merge_state *m, const struct gpu_record *r,
			     const struct probed *by_tid, const struct probed *by_time, size_t n)
{
	const struct gpu_launch_record *l = agent_server__outer_launch(m->gs, r);
	struct probed key = {
	    .agent = r->agent,
	    .key = record_key(r),
	    .tid = l ? l->tid : 0,
	    .time_ns = l ? l->time_ns : r->start_ns,
	};
	const struct probed *hit = NULL;
	size_t lo, hi;

	/* A graph's work whose launch the agent could not tell (see
	 * GPU_MSG_NOTICE): the same kernel launched outside a graph is
	 * another call site. */
	if (!n || !m->options->launch_stack || (r->graph_id && !r->correlation))
		return 0;
	if (l) {
		equal_range(by_tid, n, &key, prefix_agent_key_tid, &lo, &hi);
		hit = nearest(by_tid, lo, hi, key.time_ns);
	}
	if (!hit) {
		equal_range(by_time, n, &key, prefix_agent_key, &lo, &hi);
		hit = nearest(by_time, lo, hi, key.time_ns);
	}
	return hit ? stack_of(m, hit->agent, hit->correlation) : 0;
}

struct resolved {
	int64_t stack; /* with the leaf */
	int64_t leaf;
	int64_t activity_frame; /* the timeline's, when not the leaf */
	bool attributed;
};

/* GPU work joined with the API call its launch was made inside (NCCL's
 * kernels, and the copies of a one-rank communicator): that call's frame
 * goes above the leaf. */
static int join_call(struct merge_state *m, const struct gpu_record *r, size_t *depth,
		     struct resolved *out)
{
	const struct gpu_launch_record *l = agent_server__outer_launch(m->gs, r);
	const struct gpu_agent_info *agent;
	struct gpu_join j;
	int64_t frame;

	out->activity_frame = -1;
	if (!m->options->join || !l || r->agent >= m->gs->nr_agents)
		return 0;
	agent = &m->gs->agents[r->agent];
	if (agent->other_pid_namespace)
		return 0;
	j = (struct gpu_join){
	    .record = r,
	    .kernel = m->profile->frames[out->leaf].name,
	    .pid = agent->pid,
	    .tid = l->tid,
	    .launch_ns = l->time_ns,
	    .frames = m->frames,
	    .depth = *depth,
	    .max = MAX_STACK + 1,
	    .activity_frame = -1,
	};
	frame = m->options->join(m->options->join_ctx, m->profile, &j);
	if (frame < -1)
		return frame;
	if (frame >= 0 && j.depth <= MAX_STACK + 1) {
		*depth = j.depth;
		m->frames[(*depth)++] = frame;
		out->activity_frame = j.activity_frame;
	}
	return 0;
}

static int intern_resolved(struct merge_state *m, const struct gpu_record *r, size_t depth,
			   struct resolved *out)
{
	struct profile *p = m->profile;
	int err;

	out->attributed = depth > 0;
	if (!depth) {
		int64_t process = process_frame(m, r->agent);
		int64_t unattributed =
		    intern_once(p, &m->unattributed_frame, "[unattributed]", FRAME_UNKNOWN);

		if (process < 0)
			return process;
		if (unattributed < 0)
			return unattributed;
		m->frames[depth++] = process;
		m->frames[depth++] = unattributed;
	}
	err = join_call(m, r, &depth, out);
	if (err)
		return err;
	m->frames[depth++] = out->leaf;
	out->stack = profile__intern_stack(p, m->frames, depth);
	return out->stack < 0 ? out->stack : 0;
}

static int add_stack_ns(struct merge_state *m, int64_t stack, uint64_t ns)
{
	if (m->profile->unit != UNIT_MICROSECONDS)
		return 0;
	if (array__grow_zeroed((void **)&m->stack_ns, &m->cap_stack_ns, stack + 1,
			       sizeof(*m->stack_ns)))
		return -ENOMEM;
	m->stack_ns[stack] += ns;
	return 0;
}

/* The records folded past the timeline: their time on the stack of the
 * one that stands for them, as if each had been merged. */
static int merge_folds(struct merge_state *m, const struct probed *by_tid,
		       const struct probed *by_time, size_t nr_probed)
{
	struct agent_server *gs = m->gs;

	for (size_t i = 0; i < gs->folds.nr; i++) {
		const struct gpu_fold *f = &gs->folds.folds[i];
		const struct gpu_record *r = &f->record;
		uint32_t ids[3] = {f->launch.correlation, r->runtime_correlation, r->correlation};
		struct resolved res = {0};
		size_t depth = 0;
		int err;

		res.leaf = leaf_frame(m, r);
		if (res.leaf < 0)
			return res.leaf;
		for (size_t k = 0; k < 3 && !depth && m->options->launch_stack; k++)
			if (ids[k] && (!k || ids[k] != ids[0]))
				depth = stack_at(m, r->agent, ids[k],
						 k ? agent_server__launch(gs, r->agent, ids[k])
						   : &f->launch);
		if (!depth) {
			depth = inferred_stack(m, r, by_tid, by_time, nr_probed);
			gs->stats.inferred += depth ? f->count : 0;
		}
		err = intern_resolved(m, r, depth, &res);
		if (!err)
			err = add_stack_ns(m, res.stack, f->total_ns);
		if (err)
			return err;
		gs->stats.merged += f->count;
		gs->stats.unattributed += res.attributed ? 0 : f->count;
	}
	return 0;
}

static int add_activity(struct merge_state *m, const struct gpu_record *r,
			const struct resolved *res)
{
	struct profile *p = m->profile;
	const struct gpu_launch_record *l = agent_server__outer_launch(m->gs, r);
	const struct gpu_agent_info *agent = &m->gs->agents[r->agent];
	struct gpu_activity a = {
	    .start_ns = r->start_ns > p->start_ns ? r->start_ns - p->start_ns : 0,
	    .end_ns = r->end_ns - p->start_ns,
	    .device = r->device,
	    .stream = r->stream,
	    .correlation = r->correlation,
	    .kind = r->kind,
	    .bytes = r->bytes,
	    .src_memory = r->src_memory,
	    .dst_memory = r->dst_memory,
	    .frame = res->activity_frame >= 0 ? res->activity_frame : res->leaf,
	    .stack = res->attributed ? res->stack : UINT32_MAX,
	    .process = r->agent,
	};
	int err;

	/* Thread ids from another pid namespace name no thread of ours. */
	if (l && !agent->other_pid_namespace) {
		a.launch_ns = l->time_ns > p->start_ns ? l->time_ns - p->start_ns : 0;
		/* The agent's measured offset between CUPTI's clock and ours
		 * (attach) is known to within this; a callback clock is exact. */
		a.launch_error_ns =
		    agent->clock_mode == GPU_CLOCK_CALLBACK ? 0 : agent->clock_error_ns;
		a.launch_pid = agent->pid;
		a.launch_tid = l->tid;
	}
	err = profile__add_gpu(p, &a);

	if (err)
		return err;
	m->gs->stats.merged++;
	if (!res->attributed)
		m->gs->stats.unattributed++;
	return add_stack_ns(m, res->stack, a.end_ns - a.start_ns);
}

int agent_server__merge(struct agent_server *gs, struct profile *p,
			const struct gpu_merge_options *options)
{
	struct gpu_merge_options none = {0};
	struct merge_state m = {.gs = gs, .profile = p, .options = options ? options : &none};
	size_t n = gs->nr_records ? gs->nr_records : 1, nr_probed = 0;
	size_t *order = malloc(n * sizeof(*order));
	struct resolved *res = calloc(n, sizeof(*res));
	struct probed *by_tid = malloc(n * sizeof(*by_tid));
	struct probed *by_time = malloc(n * sizeof(*by_time));
	int err = -ENOMEM;

	m.kernel_frames = calloc(gs->names.nr ? gs->names.nr : 1, sizeof(*m.kernel_frames));
	m.process_frames = calloc(gs->nr_agents ? gs->nr_agents : 1, sizeof(*m.process_frames));
	m.frames = malloc((MAX_STACK + 3) * sizeof(*m.frames));
	if (!order || !res || !by_tid || !by_time || !m.kernel_frames || !m.process_frames ||
	    !m.frames)
		goto cleanup;
	gs->stats.merged = gs->stats.unattributed = gs->stats.outside_window = 0;
	gs->stats.inferred = 0;
	/* Past the timeline, the records whose launch never came, without one. */
	err = fold_table__add_pending(gs, true);
	if (err)
		goto cleanup;
	err = -ENOMEM;
	for (size_t i = 0; i < gs->nr_records; i++)
		order[i] = i;
	qsort_r(order, gs->nr_records, sizeof(*order), compare_records, gs->records);

	/* The stacks the core has, by correlation id. */
	for (size_t i = 0; i < gs->nr_records; i++) {
		const struct gpu_record *r = &gs->records[order[i]];
		const struct gpu_launch_record *l;
		uint32_t correlation = 0;
		size_t depth;

		res[i].leaf = -1;
		if (p->start_ns && r->end_ns <= p->start_ns) {
			gs->stats.outside_window++;
			continue;
		}
		res[i].leaf = leaf_frame(&m, r);
		if (res[i].leaf < 0) {
			err = res[i].leaf;
			goto cleanup;
		}
		depth = launch_stack(&m, r, &correlation);
		if (!depth)
			continue;
		err = intern_resolved(&m, r, depth, &res[i]);
		if (err)
			goto cleanup;
		l = agent_server__launch(gs, r->agent, correlation);
		by_tid[nr_probed++] = (struct probed){
		    .agent = r->agent,
		    .key = record_key(r),
		    .tid = l ? l->tid : 0,
		    .correlation = correlation,
		    .time_ns = l ? l->time_ns : r->start_ns,
		};
	}
	memcpy(by_time, by_tid, nr_probed * sizeof(*by_time));
	qsort(by_tid, nr_probed, sizeof(*by_tid), compare_probed_tid);
	qsort(by_time, nr_probed, sizeof(*by_time), compare_probed_time);

	/* The rest: a sibling launch's stack, or unattributed. */
	for (size_t i = 0; i < gs->nr_records; i++) {
		const struct gpu_record *r = &gs->records[order[i]];
		size_t depth;

		if (res[i].leaf < 0 || res[i].attributed)
			continue;
		depth = inferred_stack(&m, r, by_tid, by_time, nr_probed);
		gs->stats.inferred += depth > 0;
		err = intern_resolved(&m, r, depth, &res[i]);
		if (err)
			goto cleanup;
	}

	for (size_t i = 0; i < gs->nr_records; i++) {
		if (res[i].leaf < 0)
			continue;
		err = add_activity(&m, &gs->records[order[i]], &res[i]);
		if (err)
			goto cleanup;
	}
	err = merge_folds(&m, by_tid, by_time, nr_probed);
	/* Past the timeline's last record the profile holds no GPU spans:
	 * the idle share is judged up to there. */
	if (!err && gs->folded)
		for (size_t i = 0; i < p->nr_gpu; i++)
			if (p->gpu[i].end_ns > p->gpu_timeline_end_ns)
				p->gpu_timeline_end_ns = p->gpu[i].end_ns;
	if (err)
		goto cleanup;
	/* Rounded once per stack, so short kernels do not vanish. */
	for (size_t s = 0; s < m.cap_stack_ns && s < p->nr_stacks; s++)
		if (m.stack_ns[s])
			profile__add_weight(p, s, (m.stack_ns[s] + 500) / 1000);
	err = 0;
cleanup:
	free(order);
	free(res);
	free(by_tid);
	free(by_time);
	free(m.kernel_frames);
	free(m.process_frames);
	free(m.stack_ns);
	free(m.frames);
	return err;
}

/* Summary. */

static int compare_activity_frame(const void *a, const void *b)
{
	const struct gpu_activity *x = *(const struct gpu_activity *const *)a;
	const struct gpu_activity *y = *(const struct gpu_activity *const *)b;

	return x->frame < y->frame ? -1 : x->frame > y->frame;
}

struct share_sort {
	const struct profile *profile;
};

static int compare_share(const void *a, const void *b, void *ctx)
{
	const struct gpu_kernel_share *x = a, *y = b;
	const struct profile *p = ctx;

	if (x->total_ns != y->total_ns)
		return x->total_ns > y->total_ns ? -1 : 1;
	return strcmp(p->frames[x->frame].name, p->frames[y->frame].name);
}

int gpu_summary__compute(const struct profile *p, size_t top, struct gpu_summary *out)
{
	const struct gpu_activity **by_frame = NULL;
	struct span *spans = NULL;
	uint64_t span_end = 0;
	size_t nr_shares = 0;
	int err = -ENOMEM;

	memset(out, 0, sizeof(*out));
	for (size_t i = 0; i < p->nr_gpu; i++)
		if (p->gpu[i].end_ns > span_end)
			span_end = p->gpu[i].end_ns;
	out->wall_ns = p->duration_ns ? p->duration_ns : span_end;
	/* A cut timeline's busy shares are its own, up to the cut. */
	if (p->gpu_timeline_end_ns && p->gpu_timeline_end_ns < out->wall_ns)
		out->wall_ns = p->gpu_timeline_end_ns;
	spans = malloc((p->nr_gpu ? p->nr_gpu : 1) * sizeof(*spans));
	by_frame = malloc((p->nr_gpu ? p->nr_gpu : 1) * sizeof(*by_frame));
	if (!spans || !by_frame)
		goto cleanup;

	for (size_t i = 0; i < p->nr_gpu; i++) {
		const struct gpu_activity *a = &p->gpu[i];
		uint64_t ns = a->end_ns - a->start_ns;

		if (a->stack == UINT32_MAX)
			out->unattributed++;
		if (a->kind == GPU_KERNEL) {
			out->kernels++;
			out->kernel_ns += ns;
			by_frame[nr_shares++] = a;
		} else if (a->kind == GPU_MEMCPY) {
			out->memcpys++;
			out->memcpy_ns += ns;
		} else {
			out->memsets++;
			out->memset_ns += ns;
		}
		for (uint32_t d = 0; d < out->nr_devices + 1; d++) {
			if (d == out->nr_devices) {
				if (d == sizeof(out->devices) / sizeof(out->devices[0]))
					break;
				out->processes[out->nr_devices] = a->process;
				out->devices[out->nr_devices++] = a->device;
				break;
			}
			if (out->devices[d] == a->device && out->processes[d] == a->process)
				break;
		}
	}

	/* Busy time: the union of each device's spans, cut to the wall time. */
	for (uint32_t d = 0; d < out->nr_devices; d++) {
		size_t n = 0;
		uint64_t busy;

		for (size_t i = 0; i < p->nr_gpu; i++) {
			const struct gpu_activity *a = &p->gpu[i];
			uint64_t end = a->end_ns < out->wall_ns ? a->end_ns : out->wall_ns;

			if (a->device != out->devices[d] || a->process != out->processes[d] ||
			    a->start_ns >= end)
				continue;
			spans[n++] = (struct span){a->start_ns, end};
		}
		busy = spans__length(spans, spans__union(spans, n));
		out->busy_ns[d] = busy;
	}

	qsort(by_frame, nr_shares, sizeof(*by_frame), compare_activity_frame);
	out->top = calloc(nr_shares ? nr_shares : 1, sizeof(*out->top));
	if (!out->top)
		goto cleanup;
	for (size_t i = 0; i < nr_shares; i++) {
		struct gpu_kernel_share *s = &out->top[out->nr_top];

		if (!out->nr_top || out->top[out->nr_top - 1].frame != by_frame[i]->frame) {
			s->frame = by_frame[i]->frame;
			out->nr_top++;
		} else {
			s = &out->top[out->nr_top - 1];
		}
		s->total_ns += by_frame[i]->end_ns - by_frame[i]->start_ns;
		s->count++;
	}
	qsort_r(out->top, out->nr_top, sizeof(*out->top), compare_share, (void *)p);
	if (out->nr_top > top)
		out->nr_top = top;
	err = 0;
cleanup:
	free(spans);
	free(by_frame);
	if (err)
		gpu_summary__free(out);
	return err;
}

void gpu_summary__free(struct gpu_summary *s)
{
	free(s->top);
	s->top = NULL;
	s->nr_top = 0;
}

int agent_server__print_summary(const struct agent_server *gs, const struct profile *p, size_t top)
{
	struct agent_server_stats stats;
	struct gpu_summary s;
	uint64_t memcpy_bytes = 0;
	size_t total;
	int err;

	err = gpu_summary__compute(p, top, &s);
	if (err)
		return err;
	agent_server__stats(gs, &stats);
	for (size_t i = 0; i < gs->nr_records; i++)
		if (gs->records[i].kind == GPU_MEMCPY)
			memcpy_bytes += gs->records[i].bytes;
	/* Counts and times of all records; busy shares and top kernels are
	 * the timeline's. */
	for (size_t i = 0; i < gs->folds.nr; i++) {
		const struct gpu_fold *f = &gs->folds.folds[i];

		if (f->record.kind == GPU_KERNEL) {
			s.kernels += f->count;
			s.kernel_ns += f->total_ns;
		} else if (f->record.kind == GPU_MEMCPY) {
			s.memcpys += f->count;
			s.memcpy_ns += f->total_ns;
			memcpy_bytes += f->bytes;
		} else {
			s.memsets += f->count;
			s.memset_ns += f->total_ns;
		}
	}
	total = s.kernels + s.memcpys + s.memsets;
	if (stats.folded)
		status__text("  timeline keeps the first %zu of %" PRIu64 " GPU records; GPU time "
			     "of all %" PRIu64 " is in the stacks\n",
			     gs->nr_records, gs->nr_records + stats.folded,
			     gs->nr_records + stats.folded);

	status__text("GPU summary (%zu agent%s):\n", stats.agents, stats.agents == 1 ? "" : "s");
	for (uint32_t d = 0; d < s.nr_devices; d++) {
		char label[256] = "";

		if (profile__gpu_several_processes(p))
			profile__gpu_process_label(p, s.processes[d], label, sizeof(label));
		status__text("  device %u%s%s: busy %.1f%% of %.3f s wall time\n", s.devices[d],
			     label[0] ? " of " : "", label,
			     s.wall_ns ? 100.0 * s.busy_ns[d] / s.wall_ns : 0.0, s.wall_ns / 1e9);
	}
	status__text("  kernels %" PRIu64 " (%.3f s), memcpy %" PRIu64 " (%.1f MiB, %.3f s), "
		     "memset %" PRIu64 " (%.3f s)\n",
		     s.kernels, s.kernel_ns / 1e9, s.memcpys, memcpy_bytes / 1048576.0,
		     s.memcpy_ns / 1e9, s.memsets, s.memset_ns / 1e9);
	if (s.nr_top)
		status__text("  top kernels by GPU time:\n");
	for (size_t i = 0; i < s.nr_top; i++)
		status__text("    %5.1f%% %10.3f ms %8" PRIu64 "  %s\n",
			     s.kernel_ns ? 100.0 * s.top[i].total_ns / s.kernel_ns : 0.0,
			     s.top[i].total_ns / 1e6, s.top[i].count,
			     p->frames[s.top[i].frame].name);
	if (stats.probed < stats.outer_launches)
		status__text("  launch probe fired for %zu of %zu launches (rate limit "
			     "LLMPROF_AGENT_PROBE_RATE)\n",
			     stats.probed, stats.outer_launches);
	if (stats.inferred)
		status__text("  %zu GPU activities whose launch fired no probe took the stack of a "
			     "launch of the same kernel\n",
			     stats.inferred);
	if (s.unattributed)
		status__text("  unattributed: %" PRIu64
			     " of %zu GPU activities had no launch stack\n",
			     s.unattributed, total);
	if (stats.dropped_by_agent || stats.unnamed_kernels)
		status__text("  dropped: %" PRIu64 " records in the agents; %" PRIu64
			     " kernels without a name (the agent's name table was full: "
			     "[gpu] [unknown kernel])\n",
			     stats.dropped_by_agent, stats.unnamed_kernels);
	for (size_t i = 0; i < gs->nr_agents; i++) {
		const struct gpu_agent_info *a = &gs->agents[i];

		status__debug("GPU agent of pid %u: dropped %" PRIu64 " activity records, %" PRIu64
			      " launch records, %" PRIu64 " messages; %" PRIu64
			      " kernels without a name",
			      a->pid, a->dropped_activity, a->dropped_launches, a->dropped_messages,
			      a->unnamed_kernels);

		if (a->incomplete)
			status__text("  pid %u: %" PRIu64 " GPU activities cut off: still running "
				     "when the capture stopped, or without valid times\n",
				     a->pid, a->incomplete);
		if (a->notice)
			status__text("  pid %u: %s\n", a->pid, a->notice);
		if (a->other_subscriber)
			status__text("  pid %u: CUPTI in use by %s, no GPU data\n", a->pid,
				     a->other_tool && a->other_tool[0] ? a->other_tool
								       : "another tool");
		else if (a->hello && !a->goodbye)
			status__text(
			    "  pid %u: agent did not finish, its last records are missing\n",
			    a->pid);
	}
	gpu_summary__free(&s);
	return 0;
}
