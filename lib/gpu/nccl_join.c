// SPDX-License-Identifier: GPL-2.0
/*
 * NCCL calls joined with the GPU work they launched: the kernel launched on
 * a call's thread inside it (or inside its group's GroupEnd) goes under the
 * call's "[nccl] OP SIZE" frame and gives the call its GPU time; then the
 * table per operation, size bucket and communicator size, with nccl-tests'
 * bandwidths, and the communication no compute kernel hid.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "array.h"
#include "spans.h"
#include "gpu/nccl_probe_internal.h"
#include "profile/text_output.h"

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
	return !strcmp(nccl_calls[e->call].name, name);
}

static bool makes_comm(const struct nccl_event *e)
{
	enum nccl_shape shape = nccl_calls[e->call].shape;

	return shape == NCCL_INIT || shape == NCCL_SPLIT || shape == NCCL_SHRINK;
}

/* The size of the communicator comm of process pid at time before_ns, from
 * the call that made it: CommInitRank*'s nranks; CommShrink's parent's size
 * less the ranks it excluded; 0 when unknown (CommSplit's depends on every
 * rank's color). */
static uint32_t comm_size(const struct nccl_probe *n, const size_t *inits, size_t nr_inits,
			  uint32_t pid, uint64_t comm, uint64_t before_ns, int depth)
{
	const struct nccl_event *made = NULL;
	uint32_t parent;

	for (size_t k = 0; k < nr_inits; k++) {
		const struct nccl_event *init = &n->events[inits[k]];

		if (init->pid == pid && init->comm == comm && init->time_ns <= before_ns &&
		    (!made || init->time_ns > made->time_ns))
			made = init;
	}
	if (!made || nccl_calls[made->call].shape == NCCL_SPLIT)
		return 0;
	if (nccl_calls[made->call].shape == NCCL_INIT)
		return made->count;
	/* A shrink of a shrink: a chain no longer than the calls. */
	if (depth > 64)
		return 0;
	parent = comm_size(n, inits, nr_inits, pid, made->parent, made->start_ns, depth + 1);
	return parent > made->count ? parent - made->count : 0;
}

/* Each thread's calls in time order; which calls each outermost GroupEnd
 * launched; and each call's communicator size, from the CommInitRank* (or
 * CommShrink) that made its communicator in its process. */
int nccl_probe__prepare_joins(struct nccl_probe *n)
{
	size_t nr = n->nr_events, depth = 0, first = 0, nr_inits = 0;
	size_t *inits;

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

				if (!nccl_event__moves_data(m) || m->result)
					continue;
				m->group_end = n->by_thread[k];
				n->members[n->nr_members++] = n->by_thread[j];
				e->nr_members++;
			}
		}
	}
	/* Communicators are few; calls may be millions.  Of the calls that
	 * made a call's communicator (an address may be reused after
	 * ncclCommDestroy), the last one before the call. */
	inits = malloc((nr ? nr : 1) * sizeof(*inits));
	if (!inits)
		return -ENOMEM;
	for (size_t i = 0; i < nr; i++)
		if (makes_comm(&n->events[i]) && !n->events[i].result && n->events[i].comm)
			inits[nr_inits++] = i;
	for (size_t i = 0; i < nr; i++) {
		struct nccl_event *e = &n->events[i];

		if (nccl_event__moves_data(e) && e->comm)
			e->ranks = comm_size(n, inits, nr_inits, e->pid, e->comm, e->start_ns, 0);
	}
	free(inits);
	return 0;
}

/* nccl-tests' size: all ranks' data for AllGather, ReduceScatter,
 * AllToAll, Gather and Scatter, whose count is one rank's. */
static uint64_t size_of(const struct nccl_event *e)
{
	bool per_rank = is_call(e, "AllGather") || is_call(e, "ReduceScatter") ||
			is_call(e, "AllToAll") || is_call(e, "Gather") || is_call(e, "Scatter");

	return nccl_event__bytes(e) * (per_rank && e->ranks ? e->ranks : 1);
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
		const struct nccl_event *m =
		    e->nr_members ? &n->events[n->members[e->first_member + k]] : e;

		if (k == 3) {
			snprintf(name + used, sizeof(name) - used, " + %zu more", nr - k);
			break;
		}
		text_output__bytes(size, sizeof(size), nccl_event__bytes(m));
		used += snprintf(name + used, sizeof(name) - used, "%s %s %s", k ? " +" : "",
				 nccl_calls[m->call].name, size);
	}
	e->frame = profile__intern_frame(p, name, NULL, 0, FRAME_NCCL);
	return e->frame;
}

static bool is_unknown_frame(const struct profile *p, uint32_t frame)
{
	return p->frames[frame].kind == FRAME_UNKNOWN ||
	       !strncmp(p->frames[frame].name, "[unknown", 8);
}

/*
 * While an NCCL call runs, its return probe has put the uretprobe
 * trampoline where the call's return address was, and a launch stack
 * taken inside the call sees that address instead of the caller: an
 * unknown frame there, or, where the unwinder stops at it (libnccl has no
 * frame pointers), nothing of the caller's stack at all.  The call's own
 * stack, taken at its return, has the caller: it replaces the launch
 * stack's part up to the trampoline.
 */
static void repair_stack(const struct profile *p, const uint32_t *own, size_t nr_own,
			 struct gpu_join *j)
{
	size_t k = 0, keep_from;

	while (k < nr_own && k < j->depth && own[k] == j->frames[k])
		k++;
	if (k == nr_own || !nr_own)
		return;
	keep_from = k;
	while (keep_from < j->depth && !is_unknown_frame(p, j->frames[keep_from]))
		keep_from++;
	if (keep_from < j->depth)
		keep_from++; /* past the trampoline */
	else if (k <= 1)
		keep_from = 1; /* the launch stack lost its root: keep all but the process */
	else
		return;
	if (nr_own + j->depth - keep_from > j->max)
		return;
	memmove(j->frames + nr_own, j->frames + keep_from,
		(j->depth - keep_from) * sizeof(*j->frames));
	memcpy(j->frames, own, nr_own * sizeof(*own));
	j->depth = nr_own + j->depth - keep_from;
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
	/* A call in a group launches at its GroupEnd, but what it launches
	 * at once (NCCL's one-rank copies) is its own. */
	if (!e || e->result ||
	    (is_call(e, "GroupEnd") ? !e->nr_members : !nccl_event__moves_data(e)))
		return -1;
	frame = call_frame(n, p, e);
	if (frame < 0)
		return frame;
	own = n->stacks.frames + e->frames;
	repair_stack(p, own, e->nr_frames, j);
	snprintf(name, sizeof(name), "%s (%s)", j->kernel,
		 p->frames[frame].name + strlen(FRAME_NCCL_MARK));
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
	duration =
	    j->record->end_ns > j->record->start_ns ? j->record->end_ns - j->record->start_ns : 0;
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

struct device_of {
	uint32_t process, device;
};

/* Communication time on each device, and the part of it no compute kernel
 * ran beside.  A device is one process's: ranks that each see their GPU as
 * device 0 (CUDA_VISIBLE_DEVICES) stay apart. */
static int exposed_time(const struct nccl_probe *n, const struct profile *p, struct nccl_facts *f)
{
	struct span *comm = malloc((p->nr_gpu ? p->nr_gpu : 1) * sizeof(*comm));
	struct span *compute = malloc((p->nr_gpu ? p->nr_gpu : 1) * sizeof(*compute));
	struct device_of *devices = NULL;
	size_t nr_devices = 0, cap_devices = 0;
	int err = -ENOMEM;

	if (!comm || !compute)
		goto cleanup;
	for (size_t i = 0; i < p->nr_gpu; i++) {
		const struct gpu_activity *a = &p->gpu[i];
		size_t d = 0;

		while (d < nr_devices &&
		       (devices[d].device != a->device || devices[d].process != a->process))
			d++;
		if (d < nr_devices || !is_communication(n, p, a))
			continue;
		if (array__grow((void **)&devices, &cap_devices, nr_devices + 1, sizeof(*devices)))
			goto cleanup;
		devices[nr_devices++] = (struct device_of){a->process, a->device};
	}
	for (size_t d = 0; d < nr_devices; d++) {
		size_t nr_comm = 0, nr_compute = 0;

		for (size_t i = 0; i < p->nr_gpu; i++) {
			const struct gpu_activity *a = &p->gpu[i];
			struct span s = {a->start_ns, a->end_ns};

			if (a->device != devices[d].device || a->process != devices[d].process)
				continue;
			if (is_communication(n, p, a))
				comm[nr_comm++] = s;
			else if (a->kind == GPU_KERNEL)
				compute[nr_compute++] = s;
		}
		nr_comm = spans__union(comm, nr_comm);
		nr_compute = spans__union(compute, nr_compute);
		f->kernel_ns += spans__length(comm, nr_comm);
		f->exposed_ns += spans__uncovered(comm, nr_comm, compute, nr_compute);
	}
	f->devices = nr_devices;
	err = 0;
cleanup:
	free(comm);
	free(compute);
	free(devices);
	return err;
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
		uint64_t bucket = nccl_bucket_of(nccl_event__bytes(e));
		struct nccl_row *r = NULL;

		if (!nccl_event__moves_data(e) || e->result)
			continue;
		for (size_t k = 0; k < f.nr_rows && !r; k++)
			if (!strcmp(f.rows[k].operation, nccl_calls[e->call].name) &&
			    f.rows[k].bucket == bucket && f.rows[k].ranks == e->ranks)
				r = &f.rows[k];
		if (!r) {
			if (array__grow((void **)&f.rows, &cap, f.nr_rows + 1, sizeof(*f.rows))) {
				free(f.rows);
				return -ENOMEM;
			}
			r = &f.rows[f.nr_rows++];
			memset(r, 0, sizeof(*r));
			snprintf(r->operation, sizeof(r->operation), "%s",
				 nccl_calls[e->call].name);
			r->bucket = bucket;
			r->ranks = e->ranks;
		}
		r->calls++;
		r->bytes += nccl_event__bytes(e);
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
