// SPDX-License-Identifier: GPL-2.0
/*
 * The rules that read CPU stacks, on-CPU and off-CPU: host synchronisation,
 * data loading, the GIL, interpreter overhead, CPU oversubscription and
 * straggler ranks.  Thresholds are in llmprof-report(1).
 */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "findings/analysis.h"
#include "profile/ml_waits.h"
#include "profile/process_report.h"
#include "profile/python_frame.h"

#define HOST_SYNC_MIN_SHARE 0.05
#define DATA_WAIT_MIN_SHARE 0.10
#define DATA_INLINE_MIN_SHARE 0.15
#define GIL_MIN_SHARE 0.05
#define PYTHON_OVERHEAD_MIN_SHARE 0.30
#define PREEMPTED_MIN_SHARE 0.10
#define EVIDENCE_TOP 5

/* The waits of the host-sync and gil-contention rules (profile/ml_waits.c). */
#define HOST_SYNC_WAITS ML_WAIT_MASK(ML_WAIT_GPU_SYNC)
#define GIL_WAITS ML_WAIT_MASK(ML_WAIT_GIL)

/* Interpreter functions: a leaf here (or a Python frame as the leaf, which
 * stands for the eval loop running its bytecode) is the interpreter's own
 * time, not the time of the work Python asked for. */
static const char *const interpreter_functions[] = {
    /* CPython's naming conventions for its own code (the API, object
     * types, the allocator, the collector), as its static functions show
     * in an executable without debug information. */
    "_Py*",	     "Py*",
    "*libpython*",   "pymalloc_*",
    "arena_*",	     "insert_to_usedpool",
    "*_dealloc",     "*_vectorcall*",
    "cfunction_*",   "method_*",
    "meth_*",	     "builtin_*",
    "object_*",	     "type_*",
    "slot_*",	     "lookdict*",
    "insertdict",    "dict_*",
    "list_*",	     "tuple*",
    "set_*",	     "long_*",
    "float_*",	     "unicode_*",
    "range_*",	     "rangeiter_*",
    "gen_*",	     "frame_*",
    "func_*",	     "visit_*",
    "gc_*",	     "update_refs",
    "subtract_refs", "move_unreachable",
    "siphash*",	     "x_add",
    "x_sub",	     "k_mul",
    "binary_op*",    NULL,
};

static bool frame_file_contains(const struct frame *f, const char *part)
{
	return f->kind == FRAME_PYTHON && f->file && strstr(f->file, part);
}

/* The Python function's name ends in suffix. */
static bool python_function_ends_with(const struct frame *f, const char *suffix)
{
	size_t len = strlen(f->name), suffix_len = strlen(suffix);

	return f->kind == FRAME_PYTHON && len >= suffix_len &&
	       !strcmp(f->name + len - suffix_len, suffix);
}

/* The deepest Python frame of the stack in a file whose path contains one
 * of parts, or -1. */
static int find_python_file(const struct profile *p, uint32_t stack, const char *const *parts)
{
	const struct stack *s = &p->stacks[stack];

	for (int i = (int)s->depth - 1; i >= 0; i--)
		for (size_t k = 0; parts[k]; k++)
			if (frame_file_contains(&p->frames[s->frames[i]], parts[k]))
				return i;
	return -1;
}

static const char *location_or(const struct profile *p, uint32_t stack, int below, char *buf,
			       size_t size, const char *fallback)
{
	if (analysis__python_location(p, stack, below, buf, size))
		return buf;
	snprintf(buf, size, "%s", fallback);
	return buf;
}

/* Weighs the CPU stacks under a call that matches patterns, by where they
 * are: the Python location above the call (with the call's name when
 * name_call), else fallback.  *weight and *blocked (the part off the CPU)
 * are added to. */
/* The kinds of wait a frame is, matched once per frame: stacks share
 * their frames, and the table's patterns are many. */
static unsigned int frame_waits(struct analysis *a, uint32_t frame)
{
	const struct frame *f = &a->profile->frames[frame];
	unsigned int kinds = 0;

	if (a->frame_waits && a->frame_waits[frame])
		return a->frame_waits[frame] & 0x7f;
	for (const struct ml_wait *w = ml_wait__find(f, ML_WAIT_ANY); w;
	     w = ml_wait__find(f, 0x7f & ~kinds))
		kinds |= ML_WAIT_MASK(w->kind);
	if (a->frame_waits)
		a->frame_waits[frame] = 0x80 | kinds;
	return kinds;
}

/* The innermost frame of the stack that is a wait of kinds, or -1. */
static int stack_find_wait(struct analysis *a, uint32_t stack, unsigned int kinds)
{
	const struct profile *p = a->profile;
	const struct stack *s = &p->stacks[stack];

	if (!a->frame_waits)
		a->frame_waits = calloc(p->nr_frames ? p->nr_frames : 1, 1);
	for (int i = (int)s->depth - 1; i >= 0; i--)
		if (frame_waits(a, s->frames[i]) & kinds)
			return i;
	return -1;
}

static int tally_calls(struct analysis *a, unsigned int kinds, bool name_call, struct tally *where,
		       uint64_t *weight, uint64_t *blocked)
{
	const struct profile *p = a->profile;

	for (size_t i = 0; i < p->nr_stacks; i++) {
		char location[512], key[768];
		int at, err;

		if (a->is_gpu_stack[i] || !p->stacks[i].weight)
			continue;
		at = stack_find_wait(a, i, kinds);
		if (at < 0)
			continue;
		*weight += p->stacks[i].weight;
		if (a->is_off_cpu_stack[i])
			*blocked += p->stacks[i].weight;
		location_or(p, i, at, location, sizeof(location), "(no Python frame)");
		if (name_call)
			snprintf(key, sizeof(key), "%s in %s", location,
				 p->frames[p->stacks[i].frames[at]].name);
		else
			snprintf(key, sizeof(key), "%s", location);
		err = tally__add(where, key, p->stacks[i].weight);
		if (err)
			return err;
	}
	tally__sort(where);
	return 0;
}

static int host_sync(struct analysis *a, struct rule_outcome *o)
{
	struct tally where = {0};
	uint64_t weight = 0, blocked = 0;
	struct finding *f;
	double share;
	int err = 0;

	o->ran = true;
	err = tally_calls(a, HOST_SYNC_WAITS, true, &where, &weight, &blocked);
	if (err)
		goto cleanup;
	share = analysis__cpu_share(a, weight);
	err = outcome__note(o, "%.1f%% of %s in GPU synchronisation (fires at %.0f%%)", 100 * share,
			    analysis__cpu_share_of(a), 100 * HOST_SYNC_MIN_SHARE);
	if (err || share < HOST_SYNC_MIN_SHARE)
		goto cleanup;
	f = analysis__add_finding(a, o->rule, share, analysis__cpu_share_of(a),
				  "Threads wait for the GPU in host synchronisation: %.1f%% of %s",
				  100 * share, analysis__cpu_share_of(a));
	err = -ENOMEM;
	if (!f)
		goto cleanup;
	if (where.nr && finding__locate(f, where.entries[0].key))
		goto cleanup;
	if (a->has_off_cpu &&
	    finding__evidence(f,
			      "%.1f%% of the waiting is blocked off the CPU, %.1f%% spinning on it",
			      weight ? 100.0 * blocked / weight : 0,
			      weight ? 100.0 * (weight - blocked) / weight : 0))
		goto cleanup;
	if (finding__evidence_from_tally(f, &where, a->cpu_weight, EVIDENCE_TOP))
		goto cleanup;
	err = finding__suggest(
	    f, "keep values on the GPU inside the step: drop .item(), .cpu(), .tolist() and "
	       "printing of tensors from the hot loop (accumulate the loss in a tensor and read "
	       "it every N steps), and copy with non_blocking=True into pinned memory");
cleanup:
	tally__free(&where);
	return err;
}

/* What a stack is to the data-loading rule. */
enum loader_role {
	LOADER_OTHER = 0,
	LOADER_WAIT,	    /* training process, under the DataLoader's __next__ */
	LOADER_INLINE,	    /* training process fetching data itself, on the CPU or not */
	LOADER_WORKER_BUSY, /* a worker process, on the CPU or runnable */
	LOADER_WORKER_IDLE, /* a worker process, blocked */
};

/* Wall time by thread: the training threads are those that wait for
 * batches (or fetch them themselves), the workers' loop threads those that run _worker_loop; the
 * shares are of their own wall time, not of every thread (the queues'
 * feeder threads, torch's pools) the processes hold. */
struct loader_thread {
	uint64_t total, waiting, busy, runnable;
	bool worker_loop;
};

struct loader_threads {
	struct loader_thread *items;
	size_t nr;
	struct tally keys; /* without a timeline: a key per thread, in item order */
};

static bool is_worker(const char *process)
{
	return strstr(process, "[worker ") != NULL;
}

/* The DataLoader's __next__ in the stack, the outermost one, or -1. */
static int find_loader_next(const struct profile *p, uint32_t stack)
{
	const struct stack *s = &p->stacks[stack];

	for (uint32_t i = 0; i < s->depth; i++) {
		const struct frame *f = &p->frames[s->frames[i]];

		if (frame_file_contains(f, "torch/utils/data/dataloader.py") &&
		    python_function_ends_with(f, "__next__"))
			return (int)i;
	}
	return -1;
}

/*
 * "function (file:line)" of the innermost Python frame above index below
 * (-1: the whole stack), line only where asked for, whichever of the
 * live, folded or speedscope spellings the frame has; false when there is
 * none.
 */
static bool python_place(const struct profile *p, uint32_t stack, int below, bool with_line,
			 char *buf, size_t size)
{
	const struct stack *s = &p->stacks[stack];

	for (int i = below < 0 ? (int)s->depth - 1 : below - 1; i >= 0; i--) {
		const struct frame *f = &p->frames[s->frames[i]];

		if (f->kind != FRAME_PYTHON)
			continue;
		python_frame__location(f, with_line, buf, size);
		return true;
	}
	return false;
}

static bool runs_worker_loop(const struct profile *p, uint32_t stack)
{
	const struct stack *s = &p->stacks[stack];

	for (uint32_t i = 0; i < s->depth; i++) {
		const struct frame *f = &p->frames[s->frames[i]];

		if (frame_file_contains(f, "torch/utils/data/_utils/worker.py") &&
		    strstr(f->name, "_worker_loop"))
			return true;
	}
	return false;
}

static enum loader_role loader_role(const struct analysis *a, uint32_t stack)
{
	static const char *const fetch_files[] = {"torch/utils/data/_utils/fetch.py", NULL};
	const struct profile *p = a->profile;

	if (is_worker(analysis__root_name(p, stack))) {
		if (!a->is_off_cpu_stack[stack] || profile__stack_is_preempted(p, stack))
			return LOADER_WORKER_BUSY;
		return LOADER_WORKER_IDLE;
	}
	/* Without workers the loop's batch is fetched under its own
	 * __next__: the time it is preempted there is loading, as the loop
	 * sees it, not a wait for workers. */
	if (find_python_file(p, stack, fetch_files) >= 0)
		return LOADER_INLINE;
	/* Under the loop's __next__: waiting for a worker's batch, or
	 * taking it in (unpickling it, mapping its shared memory), which is
	 * the loop's time in the DataLoader as a job measures it; only where
	 * waits were recorded, so that the share is of wall time. */
	if (a->has_off_cpu && find_loader_next(p, stack) >= 0)
		return LOADER_WAIT;
	return LOADER_OTHER;
}

/*
 * Folded input has no thread ids: a --per-thread frame names the thread;
 * else a process's stacks are split into those of its main thread and
 * those of the threads it started (through start_thread or clone), which
 * keeps the queues' feeder threads out of the training thread's wall time.
 */
static int thread_key_index(struct loader_threads *t, const struct profile *p, uint32_t stack,
			    size_t *index)
{
	static const char *const thread_starts[] = {
	    "start_thread", "__clone3", "__clone", "clone3", "clone", "thread_start", NULL,
	};
	const struct stack *s = &p->stacks[stack];
	const char *thread;
	char key[512];
	int err;

	thread = "(main)";
	if (s->depth > 1 && p->frames[s->frames[1]].kind == FRAME_THREAD) {
		thread = p->frames[s->frames[1]].name;
	} else {
		/* At the root: a thread that creates another has clone at
		 * its leaf. */
		for (uint32_t i = 1; i < s->depth && i <= 3; i++)
			if (analysis__name_matches(p->frames[s->frames[i]].name, thread_starts))
				thread = "(threads)";
	}
	snprintf(key, sizeof(key), "%s;%s", analysis__root_name(p, stack), thread);
	for (size_t i = 0; i < t->keys.nr; i++) {
		if (!strcmp(t->keys.entries[i].key, key)) {
			*index = i;
			return 0;
		}
	}
	err = tally__add(&t->keys, key, 0);
	if (err)
		return err;
	*index = t->keys.nr - 1;
	if (*index >= t->nr) {
		struct loader_thread *items = realloc(t->items, (*index + 1) * sizeof(*items));

		if (!items)
			return -ENOMEM;
		memset(&items[*index], 0, sizeof(*items));
		t->items = items;
		t->nr = *index + 1;
	}
	return 0;
}

static void loader_thread__add(struct loader_thread *t, const struct profile *p, uint32_t stack,
			       enum loader_role role, uint64_t weight)
{
	t->total += weight;
	if (role == LOADER_WAIT || role == LOADER_INLINE)
		t->waiting += weight;
	if (role == LOADER_WORKER_BUSY)
		t->busy += weight;
	if (role == LOADER_WORKER_BUSY && profile__stack_is_preempted(p, stack))
		t->runnable += weight;
	if ((role == LOADER_WORKER_BUSY || role == LOADER_WORKER_IDLE) &&
	    runs_worker_loop(p, stack))
		t->worker_loop = true;
}

static int loader_threads__fill(struct loader_threads *t, const struct analysis *a,
				const enum loader_role *roles)
{
	const struct profile *p = a->profile;

	if (a->has_timeline && p->nr_threads) {
		t->items = calloc(p->nr_threads, sizeof(*t->items));
		if (!t->items)
			return -ENOMEM;
		t->nr = p->nr_threads;
		for (size_t i = 0; i < p->nr_samples; i++) {
			const struct sample *s = &p->samples[i];

			if (s->thread >= t->nr || a->is_gpu_stack[s->stack])
				continue;
			loader_thread__add(&t->items[s->thread], p, s->stack, roles[s->stack],
					   s->weight);
		}
		return 0;
	}
	for (uint32_t i = 0; i < p->nr_stacks; i++) {
		size_t index;
		int err;

		if (a->is_gpu_stack[i] || !p->stacks[i].weight)
			continue;
		err = thread_key_index(t, p, i, &index);
		if (err)
			return err;
		loader_thread__add(&t->items[index], p, i, roles[i], p->stacks[i].weight);
	}
	return 0;
}

/* Where a waiting stack asks for its batch: the caller of __next__. */
static void wait_site(const struct profile *p, uint32_t stack, char *buf, size_t size)
{
	if (!python_place(p, stack, find_loader_next(p, stack), true, buf, size))
		snprintf(buf, size, "(no Python frame)");
}

/* The processes the recording named: its DataLoader workers ("[worker N]"),
 * or its ranks ("python3 [rank 1]", not their workers: a rank whose loop
 * wait went unsampled still has its workers). */
static size_t named_processes(const struct profile *p, bool workers)
{
	size_t n = 0;

	for (size_t i = 0; i < p->nr_frames; i++) {
		const char *name = p->frames[i].name;

		if (p->frames[i].kind == FRAME_PROCESS && !strstr(name, "[worker ") == !workers &&
		    (workers || strstr(name, "[rank ")))
			n++;
	}
	return n;
}

/* loop_waits()'s arrays: each stack's wait site (-1 for none), and per
 * thread its last sample's site, its span at the loop's site and its
 * waits there. */
struct loop_scan {
	int *site_of, *last;
	uint64_t *episodes; /* per site: the waits begun there */
	uint64_t *first_ns, *last_ns, *thread_episodes;
};

/* Every stack's wait site: the index in waits of the call it waits at. */
static void loop_scan__sites(struct loop_scan *v, const struct analysis *a,
			     const enum loader_role *roles, const struct tally *waits)
{
	const struct profile *p = a->profile;

	for (uint32_t i = 0; i < p->nr_stacks; i++) {
		char location[512];

		v->site_of[i] = -1;
		if (roles[i] != LOADER_WAIT &&
		    (roles[i] != LOADER_INLINE || find_loader_next(p, i) < 0))
			continue;
		wait_site(p, i, location, sizeof(location));
		for (size_t k = 0; k < waits->nr && v->site_of[i] < 0; k++)
			if (!strcmp(waits->entries[k].key, location))
				v->site_of[i] = (int)k;
	}
}

/* The site where the threads begin a wait most often. */
static int loop_scan__busiest_site(struct loop_scan *v, const struct analysis *a,
				   const struct tally *waits)
{
	const struct profile *p = a->profile;
	int site = 0;

	for (size_t t = 0; t < p->nr_threads; t++)
		v->last[t] = -1;
	for (size_t i = 0; i < p->nr_samples; i++) {
		const struct sample *x = &p->samples[i];
		int at = x->thread < p->nr_threads ? v->site_of[x->stack] : -1;

		if (x->thread >= p->nr_threads || a->is_gpu_stack[x->stack])
			continue;
		if (at >= 0 && at != v->last[x->thread])
			v->episodes[at]++;
		v->last[x->thread] = at;
	}
	for (size_t k = 1; k < waits->nr; k++)
		if (v->episodes[k] > v->episodes[site])
			site = (int)k;
	return site;
}

/* Waits at the loop's call that a thread needs for its span of the loop to
 * be measured: one or two samples there (a healthy loop that fetched one
 * batch slowly) give no step, and a span from them to the thread's end can
 * be a few tens of milliseconds, of which that one sample is half. */
#define LOOP_MIN_EPISODES 4

/* Every thread's span of the loop: from its first wait at site to a step
 * after its last; none (first_ns UINT64_MAX) for a thread with fewer than
 * LOOP_MIN_EPISODES waits there.  Returns how many threads have one. */
static size_t loop_scan__spans(struct loop_scan *v, const struct analysis *a, int site)
{
	const struct profile *p = a->profile;
	size_t spans = 0;

	for (size_t t = 0; t < p->nr_threads; t++) {
		v->last[t] = -1;
		v->first_ns[t] = UINT64_MAX;
	}
	memset(v->thread_episodes, 0, p->nr_threads * sizeof(*v->thread_episodes));
	for (size_t i = 0; i < p->nr_samples; i++) {
		const struct sample *x = &p->samples[i];
		int at;

		if (x->thread >= p->nr_threads)
			continue;
		at = v->site_of[x->stack];
		if (at == site) {
			if (v->first_ns[x->thread] == UINT64_MAX)
				v->first_ns[x->thread] = x->time_ns;
			v->last_ns[x->thread] = x->time_ns;
			v->thread_episodes[x->thread] += at != v->last[x->thread];
		}
		v->last[x->thread] = at;
	}
	/* The loop ends a step after its last wait: a step is the mean time
	 * between its waits (or, with one wait, the thread's last sample). */
	for (size_t t = 0; t < p->nr_threads; t++) {
		if (v->first_ns[t] == UINT64_MAX)
			continue;
		if (v->thread_episodes[t] < LOOP_MIN_EPISODES) {
			v->first_ns[t] = UINT64_MAX;
			continue;
		}
		v->last_ns[t] += (v->last_ns[t] - v->first_ns[t]) / (v->thread_episodes[t] - 1);
		spans++;
	}
	return spans;
}

/*
 * The training loop's wait for batches, on a timeline: the call where the
 * training threads wait most often (one wait per step, where a start-up
 * wait for the workers is one long wait elsewhere), and its share of their
 * wall time from their first wait there to their last.  Without workers
 * the loop fetches its batches at that call itself: *inline is that time.
 * *site is the call's index in waits, or -1 without a timeline (the shares
 * stay as they are).
 */
static int loop_waits(const struct analysis *a, const enum loader_role *roles,
		      const struct tally *waits, uint64_t *wait, uint64_t *inline_load,
		      uint64_t *wall, int *site)
{
	const struct profile *p = a->profile;
	struct loop_scan v = {0};
	int err = -ENOMEM;

	*site = -1;
	if (!a->has_timeline || !p->nr_threads || !waits->nr)
		return 0;
	v.site_of = malloc(p->nr_stacks * sizeof(*v.site_of));
	v.last = malloc(p->nr_threads * sizeof(*v.last));
	v.episodes = calloc(waits->nr, sizeof(*v.episodes));
	v.first_ns = malloc(p->nr_threads * sizeof(*v.first_ns));
	v.last_ns = calloc(p->nr_threads, sizeof(*v.last_ns));
	v.thread_episodes = calloc(p->nr_threads, sizeof(*v.thread_episodes));
	if (!v.site_of || !v.last || !v.episodes || !v.first_ns || !v.last_ns || !v.thread_episodes)
		goto out;
	loop_scan__sites(&v, a, roles, waits);
	*site = loop_scan__busiest_site(&v, a, waits);
	err = 0;
	/* No thread waits there step after step: the whole threads' shares. */
	if (!loop_scan__spans(&v, a, *site)) {
		*site = -1;
		goto out;
	}
	*wait = *inline_load = *wall = 0;
	for (size_t i = 0; i < p->nr_samples; i++) {
		const struct sample *x = &p->samples[i];

		if (x->thread >= p->nr_threads || a->is_gpu_stack[x->stack] ||
		    x->time_ns < v.first_ns[x->thread] || x->time_ns > v.last_ns[x->thread])
			continue;
		*wall += x->weight;
		if (v.site_of[x->stack] != *site)
			continue;
		if (roles[x->stack] == LOADER_INLINE)
			*inline_load += x->weight;
		else
			*wait += x->weight;
	}
	err = 0;
out:
	free(v.site_of);
	free(v.last);
	free(v.episodes);
	free(v.first_ns);
	free(v.last_ns);
	free(v.thread_episodes);
	return err;
}

/* What the data-loading rule sums over the profile: the weights of the
 * roles, the threads that wait and the worker loops, and where they are. */
struct loader_totals {
	struct tally workers, waits;
	uint64_t wait, inline_load, worker_busy;
	uint64_t trainer_wall, loop_wall, loop_busy, loop_runnable, loop_inline;
	size_t trainers, loops;
	int site;
};

/* Gives every stack its loader role and tallies the workers' code and the
 * places the loop waits for its batch. */
static int loader_totals__classify(struct loader_totals *s, const struct analysis *a,
				   enum loader_role *roles)
{
	const struct profile *p = a->profile;
	int err = 0;

	for (uint32_t i = 0; i < p->nr_stacks; i++) {
		char location[512];

		if (a->is_gpu_stack[i] || !p->stacks[i].weight)
			continue;
		roles[i] = loader_role(a, i);
		switch (roles[i]) {
		case LOADER_WORKER_BUSY:
			/* The worker's loop only: a spawned worker's start-up
			 * (imports) is not the data it prepares. */
			if (!runs_worker_loop(p, i))
				break;
			/* By function: a hot loop spreads over its lines. */
			s->worker_busy += p->stacks[i].weight;
			if (!python_place(p, i, -1, false, location, sizeof(location)))
				snprintf(location, sizeof(location), "%s",
					 analysis__leaf_name(p, i));
			err = tally__add(&s->workers, location, p->stacks[i].weight);
			break;
		case LOADER_WAIT:
			/* Where the training loop asked for the batch: the
			 * caller of __next__, not the queue inside it. */
			s->wait += p->stacks[i].weight;
			wait_site(p, i, location, sizeof(location));
			err = tally__add(&s->waits, location, p->stacks[i].weight);
			break;
		case LOADER_INLINE:
			s->inline_load += p->stacks[i].weight;
			err = tally__add(&s->workers,
					 location_or(p, i, -1, location, sizeof(location),
						     analysis__leaf_name(p, i)),
					 p->stacks[i].weight);
			if (err || find_loader_next(p, i) < 0)
				break;
			/* The loop's call for the batch it fetches itself. */
			wait_site(p, i, location, sizeof(location));
			err = tally__add(&s->waits, location, p->stacks[i].weight);
			break;
		default:
			break;
		}
		if (err)
			return err;
	}
	return 0;
}

/* Sums the wall time of the threads that wait for batches and of the
 * worker loops. */
static void loader_totals__add_threads(struct loader_totals *s,
				       const struct loader_threads *threads)
{
	for (size_t i = 0; i < threads->nr; i++) {
		const struct loader_thread *t = &threads->items[i];

		if (t->waiting) {
			s->trainers++;
			s->trainer_wall += t->total;
		}
		if (t->worker_loop) {
			s->loops++;
			s->loop_wall += t->total;
			s->loop_busy += t->busy;
			s->loop_runnable += t->runnable;
		}
	}
}

/* The finding for a training loop that waits on its DataLoader for share
 * of its wall time: where, what the workers did, and how many to use. */
static int data_wait_finding(struct analysis *a, struct rule_outcome *o,
			     const struct loader_totals *s, double share)
{
	const struct profile *p = a->profile;
	const char *of = s->site < 0 ? (s->trainers > 1 ? "the training threads' wall time"
							: "the training thread's wall time")
				     : (s->trainers > 1 ? "the training loops' wall time"
							: "the training loop's wall time");
	const char *at = s->waits.nr ? s->waits.entries[s->site < 0 ? 0 : s->site].key : NULL;
	struct loader_advice advice;
	struct finding *f;
	int err;

	err = outcome__note(o, "%.1f%% of %s waiting on the DataLoader (fires at %.0f%%)",
			    100 * share, of, 100 * DATA_WAIT_MIN_SHARE);
	if (err)
		return err;
	f = analysis__add_finding(a, o->rule, share, of,
				  "The training loop waits for data: %.1f%% of %s in the "
				  "DataLoader",
				  100 * share, of);
	if (!f || (at && finding__locate(f, at)))
		return -ENOMEM;
	if (at && finding__evidence(f, "the loop waits for its batch at %s", at))
		return -ENOMEM;
	for (size_t k = 0; s->site >= 0 && k < s->waits.nr && k < EVIDENCE_TOP; k++)
		if ((int)k != s->site &&
		    finding__evidence(f, "outside the loop, %.2f s waiting at %s",
				      a->seconds_per_weight * s->waits.entries[k].weight,
				      s->waits.entries[k].key))
			return -ENOMEM;
	if (s->loops &&
	    finding__evidence(f,
			      "the %zu worker loop%s %s on the CPU or runnable "
			      "%.1f%% of %s wall time",
			      s->loops, s->loops > 1 ? "s" : "", s->loops > 1 ? "were" : "was",
			      100.0 * s->loop_busy / s->loop_wall, s->loops > 1 ? "their" : "its"))
		return -ENOMEM;
	if (s->workers.nr &&
	    (finding__evidence(f, "the workers' hottest code (share of their CPU time):") ||
	     finding__evidence_from_tally(f, &s->workers, s->worker_busy, 3)))
		return -ENOMEM;
	/* Workers by their processes where they are named: one recording of
	 * 4 workers (2 per rank) counted 8 threads in the worker loop. */
	advice = (struct loader_advice){
	    .workers = named_processes(p, true) ? named_processes(p, true) : s->loops,
	    .ranks =
		named_processes(p, false) > s->trainers ? named_processes(p, false) : s->trainers,
	    .on_cpu = s->loop_wall ? (double)(s->loop_busy - s->loop_runnable) / s->loop_wall : 0,
	    .runnable = s->loop_wall ? (double)s->loop_runnable / s->loop_wall : 0,
	    .data_wait = share,
	    .cpus_busy = p->duration_ns
			     ? a->seconds_per_weight * a->on_cpu_weight / (p->duration_ns / 1e9)
			     : 0,
	    .hottest = s->workers.nr ? s->workers.entries[0].key : NULL,
	};
	return loader_advice__suggest(f, &advice);
}

/* Without a wait worth a finding: the note with both measures, and the
 * finding for data loaded in the training process itself. */
static int inline_loading_finding(struct analysis *a, struct rule_outcome *o,
				  const struct loader_totals *s)
{
	const char *inline_of;
	struct finding *f;
	double share;
	int err;

	/* On a timeline, inline loading is measured as the wait is: over
	 * the loop, at its call for the batch (on the CPU or preempted
	 * there); else as a share of every thread's time. */
	inline_of = s->site >= 0 ? (s->trainers > 1 ? "the training loops' wall time"
						    : "the training loop's wall time")
				 : analysis__cpu_share_of(a);
	share = s->site >= 0 ? (s->trainer_wall ? (double)s->loop_inline / s->trainer_wall : 0)
			     : analysis__cpu_share(a, s->inline_load);
	if (a->has_off_cpu)
		err = outcome__note(o,
				    "%.1f%% of the training %s wall time waiting on the "
				    "DataLoader (fires at %.0f%%), %.1f%% of %s loading data in "
				    "the training process (fires at %.0f%%)",
				    s->trainer_wall ? 100.0 * s->wait / s->trainer_wall : 0,
				    s->site < 0 ? "thread's" : "loop's", 100 * DATA_WAIT_MIN_SHARE,
				    100 * share, inline_of, 100 * DATA_INLINE_MIN_SHARE);
	else
		err = outcome__note(o,
				    "waits on the DataLoader need off-CPU data (--off-cpu or "
				    "--mode wall); %.1f%% of CPU time loading data in the training "
				    "process (fires at %.0f%%)",
				    100 * share, 100 * DATA_INLINE_MIN_SHARE);
	if (err || share < DATA_INLINE_MIN_SHARE)
		return err;
	f = analysis__add_finding(a, o->rule, share, inline_of,
				  "Data is loaded in the training process itself: %.1f%% of %s",
				  100 * share, inline_of);
	if (!f)
		return -ENOMEM;
	if (s->site >= 0 ? finding__locate(f, s->waits.entries[s->site].key)
			 : s->workers.nr && finding__locate(f, s->workers.entries[0].key))
		return -ENOMEM;
	if (s->site >= 0 &&
	    finding__evidence(f, "the loop fetches its batch at %s", s->waits.entries[s->site].key))
		return -ENOMEM;
	if (finding__evidence(f, "the hottest loading code (share of the loading time):") ||
	    finding__evidence_from_tally(f, &s->workers, s->inline_load, EVIDENCE_TOP))
		return -ENOMEM;
	return finding__suggest(f, "use DataLoader(num_workers=N) so batches are prepared in "
				   "worker processes while the step runs");
}

static int data_loading(struct analysis *a, struct rule_outcome *o)
{
	const struct profile *p = a->profile;
	struct loader_totals s = {.site = -1};
	struct loader_threads threads = {0};
	enum loader_role *roles = NULL;
	double share;
	int err = 0;

	if (!a->has_python) {
		return outcome__note(o, "%s", "needs Python frames (the profile has none)");
	}
	o->ran = true;
	roles = calloc(p->nr_stacks ? p->nr_stacks : 1, sizeof(*roles));
	if (!roles)
		return -ENOMEM;
	err = loader_totals__classify(&s, a, roles);
	if (err)
		goto cleanup;
	tally__sort(&s.workers);
	tally__sort(&s.waits);
	err = loader_threads__fill(&threads, a, roles);
	if (err)
		goto cleanup;
	loader_totals__add_threads(&s, &threads);
	err = loop_waits(a, roles, &s.waits, &s.wait, &s.loop_inline, &s.trainer_wall, &s.site);
	if (err)
		goto cleanup;
	share = s.trainer_wall ? (double)s.wait / s.trainer_wall : 0;
	if (a->has_off_cpu && share >= DATA_WAIT_MIN_SHARE)
		err = data_wait_finding(a, o, &s, share);
	else
		err = inline_loading_finding(a, o, &s);
cleanup:
	free(roles);
	free(threads.items);
	tally__free(&threads.keys);
	tally__free(&s.workers);
	tally__free(&s.waits);
	return err;
}

/*
 * Where the interpreter has no symbols (Debian's python3), take_gil is not
 * on the stack: a GIL wait is Python code going straight into a condition
 * wait, off the CPU, in code that is not itself a lock or queue of the
 * threading and queue modules.
 */
static int tally_bare_gil_waits(struct analysis *a, struct tally *where, uint64_t *weight)
{
	const struct profile *p = a->profile;

	for (size_t i = 0; i < p->nr_stacks; i++) {
		const struct stack *s = &p->stacks[i];
		char location[512], text[512];
		int err;

		if (!a->is_off_cpu_stack[i] || !s->weight || stack_find_wait(a, i, GIL_WAITS) >= 0)
			continue;
		for (uint32_t k = 0; k + 1 < s->depth; k++) {
			const struct frame *f = &p->frames[s->frames[k]];

			if (f->kind != FRAME_PYTHON ||
			    strncmp(p->frames[s->frames[k + 1]].name, "pthread_cond_", 13) ||
			    strstr(frame__text(f, text, sizeof(text)), "threading.py") ||
			    strstr(text, "queue"))
				continue;
			*weight += s->weight;
			location_or(p, i, k + 1, location, sizeof(location), "(no Python frame)");
			err = tally__add(where, location, s->weight);
			if (err)
				return err;
			break;
		}
	}
	tally__sort(where);
	return 0;
}

static int gil_contention(struct analysis *a, struct rule_outcome *o)
{
	struct tally where = {0};
	uint64_t weight = 0, blocked = 0;
	struct finding *f;
	double share;
	int err = 0;

	o->ran = true;
	err = tally_calls(a, GIL_WAITS, false, &where, &weight, &blocked);
	if (!err)
		err = tally_bare_gil_waits(a, &where, &weight);
	if (err)
		goto cleanup;
	share = analysis__cpu_share(a, weight);
	err = outcome__note(o, "%.1f%% of %s waiting for the GIL (fires at %.0f%%)", 100 * share,
			    analysis__cpu_share_of(a), 100 * GIL_MIN_SHARE);
	if (err || share < GIL_MIN_SHARE)
		goto cleanup;
	f = analysis__add_finding(a, o->rule, share, analysis__cpu_share_of(a),
				  "Threads wait for the GIL: %.1f%% of %s", 100 * share,
				  analysis__cpu_share_of(a));
	err = -ENOMEM;
	if (!f || (where.nr && finding__locate(f, where.entries[0].key)))
		goto cleanup;
	if (finding__evidence_from_tally(f, &where, a->cpu_weight, EVIDENCE_TOP))
		goto cleanup;
	err = finding__suggest(f, "move CPU-bound Python work out of the threads that share the "
				  "interpreter: into processes (multiprocessing, DataLoader "
				  "workers) or into code that releases the GIL (torch and NumPy "
				  "operations, C extensions)");
cleanup:
	tally__free(&where);
	return err;
}

static bool is_interpreter_leaf(const struct profile *p, uint32_t stack)
{
	const struct stack *s = &p->stacks[stack];
	const struct frame *leaf = &p->frames[s->frames[s->depth - 1]];

	if (leaf->kind == FRAME_PYTHON)
		return true;
	if (leaf->kind == FRAME_KERNEL)
		return false;
	return analysis__name_matches(leaf->name, interpreter_functions);
}

static int python_overhead(struct analysis *a, struct rule_outcome *o)
{
	const struct profile *p = a->profile;
	struct tally where = {0};
	uint64_t python_cpu = 0, interpreter = 0;
	struct finding *f;
	double share, of_python;
	int err = 0;

	if (!a->has_python)
		return outcome__note(o, "%s", "needs Python frames (the profile has none)");
	o->ran = true;
	for (size_t i = 0; i < p->nr_stacks; i++) {
		const struct stack *s = &p->stacks[i];
		bool python = false;
		char location[512];

		if (a->is_gpu_stack[i] || a->is_off_cpu_stack[i] || !s->weight)
			continue;
		for (uint32_t k = 0; k < s->depth && !python; k++)
			python = p->frames[s->frames[k]].kind == FRAME_PYTHON;
		if (!python)
			continue;
		python_cpu += s->weight;
		if (!is_interpreter_leaf(p, i))
			continue;
		interpreter += s->weight;
		err = tally__add(&where, location_or(p, i, -1, location, sizeof(location), "?"),
				 s->weight);
		if (err)
			goto cleanup;
	}
	of_python = python_cpu ? (double)interpreter / python_cpu : 0;
	share = analysis__cpu_share(a, interpreter);
	err = outcome__note(o,
			    "the interpreter's own code is %.1f%% of the CPU time of Python "
			    "threads (fires at %.0f%%)",
			    100 * of_python, 100 * PYTHON_OVERHEAD_MIN_SHARE);
	if (err || of_python < PYTHON_OVERHEAD_MIN_SHARE)
		goto cleanup;
	tally__sort(&where);
	f = analysis__add_finding(
	    a, o->rule, share, analysis__cpu_share_of(a),
	    "Python overhead: the interpreter runs %.1f%% of the Python threads' CPU time",
	    100 * of_python);
	err = -ENOMEM;
	if (!f || (where.nr && finding__locate(f, where.entries[0].key)))
		goto cleanup;
	if (finding__evidence(f, "hottest Python functions by interpreter time (share of %s):",
			      analysis__cpu_share_of(a)))
		goto cleanup;
	if (finding__evidence_from_tally(f, &where, a->cpu_weight, EVIDENCE_TOP))
		goto cleanup;
	err = finding__suggest(f, "turn the hottest Python loops into tensor operations "
				  "(vectorise), or compile them (torch.compile, Numba, Cython); "
				  "avoid per-element Python work in the step");
cleanup:
	tally__free(&where);
	return err;
}

static int cpu_oversubscription(struct analysis *a, struct rule_outcome *o)
{
	const struct profile *p = a->profile;
	struct tally processes = {0};
	uint64_t preempted = 0;
	struct finding *f;
	double share;
	int err = 0;

	if (!a->has_off_cpu)
		return outcome__note(o, "%s", "needs off-CPU data (--off-cpu or --mode wall)");
	o->ran = true;
	for (size_t i = 0; i < p->nr_stacks; i++) {
		if (!a->is_off_cpu_stack[i] || !profile__stack_is_preempted(p, i))
			continue;
		preempted += p->stacks[i].weight;
		err = tally__add(&processes, analysis__root_name(p, i), p->stacks[i].weight);
		if (err)
			goto cleanup;
	}
	share = analysis__cpu_share(a, preempted);
	err = outcome__note(o, "%.1f%% of wall time runnable but not running (fires at %.0f%%)",
			    100 * share, 100 * PREEMPTED_MIN_SHARE);
	if (err || share < PREEMPTED_MIN_SHARE)
		goto cleanup;
	tally__sort(&processes);
	f = analysis__add_finding(
	    a, o->rule, share, "wall time",
	    "CPU oversubscription: threads wait for a CPU %.1f%% of the time (preempted)",
	    100 * share);
	err = -ENOMEM;
	if (!f)
		goto cleanup;
	if (finding__evidence_from_tally(f, &processes, a->cpu_weight, EVIDENCE_TOP))
		goto cleanup;
	err = finding__suggest(f, "run no more busy threads than cores: set OMP_NUM_THREADS "
				  "(or torch.set_num_threads) to cores / processes per node, use "
				  "fewer DataLoader workers, or pin ranks to their own cores");
cleanup:
	tally__free(&processes);
	return err;
}

static int straggler(struct analysis *a, struct rule_outcome *o)
{
	struct rank_load *rows = NULL;
	size_t nr = 0, cap = 0, ranks = 0;
	double spw = a->seconds_per_weight;
	const struct rank_load *top;
	struct straggler found;
	struct finding *f;
	int err;

	err = rank_loads__read(a->profile, &rows, &nr, &cap);
	if (err)
		goto cleanup;
	for (size_t i = 0; i < nr; i++)
		ranks += rows[i].rank;
	if (ranks < 2) {
		err = outcome__note(o, "needs two or more ranks (the profile has %zu)", ranks);
		goto cleanup;
	}
	o->ran = true;
	err = rank_loads__straggler(rows, nr, &found);
	if (!err && found.by_waits && isfinite(found.steadiness))
		err = outcome__note(o,
				    "the other ranks wait in collectives %.1f%% of their time more "
				    "than the rank that waits least, the lead's t over the span's "
				    "slices %.1f (fires at "
				    "%.0f%% and t %.1f)",
				    100 * found.share, found.steadiness, 100 * STRAGGLER_WAIT_SHARE,
				    STRAGGLER_STEADY_T);
	else if (!err && found.by_waits)
		err = outcome__note(o,
				    "the other ranks wait in collectives %.1f%% of their time more "
				    "than the rank that waits least (fires at %.0f%%)",
				    100 * found.share, 100 * STRAGGLER_WAIT_SHARE);
	else if (!err)
		err = outcome__note(o,
				    "the busiest rank is busy %.0f%% more than the median of the "
				    "others (fires at %.0f%%)",
				    100 * found.share, 100 * STRAGGLER_EXCESS);
	if (err || found.index < 0)
		goto cleanup;
	top = &rows[found.index];
	if (found.by_waits)
		f = analysis__add_finding(a, o->rule, found.share, "wall time",
					  "Straggler: the other ranks wait for %s in collectives "
					  "%.1f%% of their time",
					  top->label, 100 * found.share);
	else
		f = analysis__add_finding(a, o->rule, found.share / (1 + found.share), "wall time",
					  "Straggler: %s is busy %.0f%% more than the other ranks",
					  top->label, 100 * found.share);
	err = -ENOMEM;
	if (!f || finding__locate(f, top->label))
		goto cleanup;
	if (found.by_waits && spw &&
	    finding__evidence(f,
			      "the other ranks wait in collectives (c10d, NCCL) %.2f s (median), "
			      "%s %.2f s; steadily, it makes them wait %.2f s more",
			      spw * found.median, top->label, spw * top->waits, spw * found.extra))
		goto cleanup;
	if (!found.by_waits && spw &&
	    finding__evidence(f,
			      "%s is on the CPU or runnable %.2f s, the other ranks' median "
			      "%.2f s: %.2f s more",
			      top->label, spw * top->busy, spw * found.median, spw * found.extra))
		goto cleanup;
	for (size_t i = 0; i < nr; i++)
		if (rows[i].rank && spw &&
		    finding__evidence(f,
				      "%s: on the CPU or runnable %.2f s, waiting in "
				      "collectives %.2f s",
				      rows[i].label, spw * rows[i].busy, spw * rows[i].waits))
			goto cleanup;
	err = finding__suggest(f, "compare the straggler with another rank (llmprof report "
				  "--by-process, or llmprof diff of their profiles): uneven data "
				  "shards or sequence lengths, a slower GPU or host, or extra work "
				  "on that rank (logging, checkpointing) are the usual causes");
cleanup:
	free(rows);
	return err;
}

const struct rule cpu_rules[] = {
    {"host-sync", "time waiting for the GPU in synchronising calls", host_sync},
    {"data-loading", "the training process waiting on (or doing) data loading", data_loading},
    {"gil-contention", "threads waiting for the GIL", gil_contention},
    {"python-overhead", "the interpreter's own share of Python threads' CPU time", python_overhead},
    {"cpu-oversubscription", "threads runnable but waiting for a CPU", cpu_oversubscription},
    {"straggler", "one rank busy longer than the others, which wait for it", straggler},
    {"communication", "ranks waiting for each other in collectives on the host",
     communication_waits},
    {"file-io", "a thread stopped in calls that write and sync files", file_io},
};
const size_t nr_cpu_rules = sizeof(cpu_rules) / sizeof(cpu_rules[0]);
