// SPDX-License-Identifier: GPL-2.0
/*
 * The file-io rule: a thread that stops for calls that write files to
 * disk and sync them (a checkpoint's torch.save and fsync, a log flushed
 * every step), measured as the job measures its own saves: the whole call
 * of the job's code that writes, over the thread's span of such calls.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "findings/analysis.h"

#define FILE_IO_MIN_SHARE 0.10
/* Of the calls' time, the part in the write path: a long function that
 * writes now and then (a worker's loop) is not stopped by its writes. */
#define FILE_IO_MIN_IO_SHARE 0.25
#define FILE_IO_MAX_CALLS 64
#define EVIDENCE_TOP 3

/* What a stack does in the kernel's file write path. */
enum file_io_kind {
	FILE_IO_NONE = 0,
	FILE_IO_SYNC,	  /* fsync, fdatasync, sync_file_range */
	FILE_IO_WRITE,	  /* write into a file's pages */
	FILE_IO_TRUNCATE, /* open(O_TRUNC) or truncate of a file */
	FILE_IO_KINDS,
	FILE_IO_MEMORY = FILE_IO_KINDS, /* a frame of a file in memory (tmpfs, /dev/shm) */
};

static const char *const kind_names[] = {
    [FILE_IO_SYNC] = "syncing (fsync)",
    [FILE_IO_WRITE] = "writing into the page cache",
    [FILE_IO_TRUNCATE] = "truncating (open with O_TRUNC)",
};

/* Kernel functions of a file system's write and sync paths (not those of
 * pipes and sockets, which vfs_write also serves). */
static const char *const sync_functions[] = {
    "do_fsync", "vfs_fsync*", "__x64_sys_fsync", "__x64_sys_fdatasync", "ksys_sync_file_range",
    NULL,
};
static const char *const write_functions[] = {
    "generic_perform_write",
    "*_file_write_iter",
    "*_buffered_write_iter",
    NULL,
};
static const char *const truncate_functions[] = {"do_truncate", "do_sys_ftruncate", NULL};
/* Files in memory: torch's shared memory for a DataLoader's batches is
 * written and truncated, and no device is waited for. */
static const char *const memory_functions[] = {"shmem_*", NULL};

static uint8_t frame_io_kind(const struct frame *f)
{
	if (f->kind != FRAME_KERNEL || !f->name)
		return FILE_IO_NONE;
	if (analysis__name_matches(f->name, memory_functions))
		return FILE_IO_MEMORY;
	if (analysis__name_matches(f->name, sync_functions))
		return FILE_IO_SYNC;
	if (analysis__name_matches(f->name, write_functions))
		return FILE_IO_WRITE;
	if (analysis__name_matches(f->name, truncate_functions))
		return FILE_IO_TRUNCATE;
	return FILE_IO_NONE;
}

/* The stack's kind, from its frames' (frame_kinds): sync before write
 * before truncate, none where a file in memory is written. */
static uint8_t file_io_kind(const struct profile *p, uint32_t stack, const uint8_t *frame_kinds)
{
	const struct stack *s = &p->stacks[stack];
	uint8_t kind = FILE_IO_NONE;

	for (uint32_t k = 0; k < s->depth; k++) {
		uint8_t this = frame_kinds[s->frames[k]];

		if (this == FILE_IO_MEMORY)
			return FILE_IO_NONE;
		if (this != FILE_IO_NONE && (kind == FILE_IO_NONE || this < kind))
			kind = this;
	}
	return kind;
}

/* The job's call that writes: the innermost Python frame outside torch and
 * the interpreter's import machinery, and the frame it calls (torch.save,
 * os.fsync, write); false where there is none. */
struct io_call {
	uint32_t caller, callee;
};

static bool io_call_of(const struct profile *p, uint32_t stack, struct io_call *call)
{
	const struct stack *s = &p->stacks[stack];

	for (uint32_t k = s->depth; k-- > 1;) {
		const struct frame *f = &p->frames[s->frames[k - 1]];
		const char *file = f->file ? f->file : strrchr(f->name, '(');

		if (f->kind != FRAME_PYTHON || !file)
			continue;
		if (strstr(file, "torch/") || strstr(file, "<frozen ") || strstr(file, "importlib"))
			continue;
		call->caller = s->frames[k - 1];
		call->callee = s->frames[k];
		return true;
	}
	return false;
}

struct io_calls {
	struct io_call items[FILE_IO_MAX_CALLS];
	size_t nr;
};

static void io_calls__add(struct io_calls *c, const struct io_call *call)
{
	for (size_t i = 0; i < c->nr; i++)
		if (c->items[i].caller == call->caller && c->items[i].callee == call->callee)
			return;
	if (c->nr < FILE_IO_MAX_CALLS)
		c->items[c->nr++] = *call;
}

/* The stack is under one of the calls: the index of its caller, or -1. */
static int io_calls__find(const struct io_calls *c, const struct profile *p, uint32_t stack)
{
	const struct stack *s = &p->stacks[stack];

	for (uint32_t k = 0; k + 1 < s->depth; k++)
		for (size_t i = 0; i < c->nr; i++)
			if (s->frames[k] == c->items[i].caller &&
			    s->frames[k + 1] == c->items[i].callee)
				return (int)i;
	return -1;
}

/* Per thread: the span of its calls, [first - period, last end], where
 * period is the mean time from one call's start to the next (a loop that
 * saves every K steps does K steps before its first save). */
struct io_thread {
	uint64_t first, last_start, last_end, calls;
	bool inside;
};

/* The rule's view of the profile: every frame's and stack's kind, the
 * job's calls that write, the call each stack is under (-1 for none), and
 * the threads' spans. */
struct io_scan {
	uint8_t *frame_kinds, *stack_kinds;
	struct io_calls *found;
	int *call_of;
	struct io_thread *threads;
};

/* What the rule sums over the threads' spans: their wall time, the time
 * under the calls that write, by what the stack does there, and by the
 * job's call. */
struct io_totals {
	uint64_t kinds[FILE_IO_KINDS], io, under, wall;
	struct tally sites;
};

/* Gives every frame and stack its kind, finds the job's calls that write
 * and, for every stack, the call it is under. */
static void io_scan__calls(struct io_scan *v, const struct analysis *a)
{
	const struct profile *p = a->profile;

	for (size_t i = 0; i < p->nr_frames; i++)
		v->frame_kinds[i] = frame_io_kind(&p->frames[i]);
	for (uint32_t i = 0; i < p->nr_stacks; i++) {
		struct io_call call;

		if (a->is_gpu_stack[i] || !p->stacks[i].weight)
			continue;
		v->stack_kinds[i] = file_io_kind(p, i, v->frame_kinds);
		if (!v->stack_kinds[i])
			continue;
		if (io_call_of(p, i, &call))
			io_calls__add(v->found, &call);
	}
	for (uint32_t i = 0; i < p->nr_stacks; i++)
		v->call_of[i] = a->is_gpu_stack[i] ? -1 : io_calls__find(v->found, p, i);
}

/* Every thread's span of calls (see struct io_thread). */
static void io_scan__spans(struct io_scan *v, const struct analysis *a)
{
	const struct profile *p = a->profile;

	for (size_t i = 0; i < p->nr_threads; i++)
		v->threads[i].first = UINT64_MAX;
	for (size_t i = 0; i < p->nr_samples; i++) {
		const struct sample *x = &p->samples[i];
		struct io_thread *t = x->thread < p->nr_threads ? &v->threads[x->thread] : NULL;
		bool inside = t && v->call_of[x->stack] >= 0;

		if (!t || a->is_gpu_stack[x->stack])
			continue;
		if (inside && !t->inside) {
			if (t->first == UINT64_MAX)
				t->first = x->time_ns;
			t->last_start = x->time_ns;
			t->calls++;
		}
		if (inside)
			t->last_end = x->time_ns;
		t->inside = inside;
	}
	for (size_t i = 0; i < p->nr_threads; i++) {
		struct io_thread *t = &v->threads[i];

		if (t->calls > 1) {
			t->first -= (t->last_start - t->first) / (t->calls - 1);
		} else if (t->calls) {
			t->first = 0;
			t->last_end = UINT64_MAX;
		}
	}
}

/* Sums the samples inside the threads' spans into s. */
static int io_totals__sum(struct io_totals *s, const struct analysis *a, const struct io_scan *v)
{
	const struct profile *p = a->profile;

	for (size_t i = 0; i < p->nr_samples; i++) {
		const struct sample *x = &p->samples[i];
		const struct io_thread *t =
		    x->thread < p->nr_threads ? &v->threads[x->thread] : NULL;
		char place[512];
		const char *text;
		int at, err;

		if (!t || !t->calls || a->is_gpu_stack[x->stack] || x->time_ns < t->first ||
		    x->time_ns > t->last_end)
			continue;
		s->wall += x->weight;
		at = v->call_of[x->stack];
		if (at < 0)
			continue;
		s->under += x->weight;
		s->kinds[v->stack_kinds[x->stack]] += x->weight;
		/* A Python frame by its text: name and file. */
		text = frame__text(&p->frames[v->found->items[at].caller], place, sizeof(place));
		if (text != place)
			snprintf(place, sizeof(place), "%s", text ? text : "[unknown]");
		err = tally__add(&s->sites, place, x->weight);
		if (err)
			return err;
	}
	for (int k = FILE_IO_SYNC; k < FILE_IO_KINDS; k++)
		s->io += s->kinds[k];
	tally__sort(&s->sites);
	return 0;
}

/* The finding: share of the writing threads' wall time in the calls, what
 * the calls did, and where the job makes them. */
static int file_io_finding(struct analysis *a, struct rule_outcome *o, const struct io_totals *s,
			   double share)
{
	uint64_t under = s->under;
	struct finding *f;

	f = analysis__add_finding(
	    a, o->rule, share, "the writing threads' wall time",
	    "File I/O: %.1f%% of the writing threads' wall time in calls that "
	    "write and sync files, at %s",
	    100 * share, s->sites.entries[0].key);
	if (!f || finding__locate(f, s->sites.entries[0].key))
		return -ENOMEM;
	if (finding__evidence(f, "%.2f s in those calls, of which:", a->seconds_per_weight * under))
		return -ENOMEM;
	for (int k = FILE_IO_SYNC; k < FILE_IO_KINDS; k++)
		if (s->kinds[k] &&
		    finding__evidence(f, "%5.1f%%  %s", 100.0 * s->kinds[k] / under, kind_names[k]))
			return -ENOMEM;
	if (finding__evidence(f,
			      "%5.1f%%  the rest of the call (serialising, on the CPU or "
			      "waiting for it)",
			      100.0 * (under - s->io) / under) ||
	    finding__evidence(f, "where the job calls them (share of their time):") ||
	    finding__evidence_from_tally(f, &s->sites, under, EVIDENCE_TOP))
		return -ENOMEM;
	return finding__suggest(f,
				"write less often, or off the loop's path: copy the state and save "
				"it from a background thread or process "
				"(torch.distributed.checkpoint's async_save), and sync once per "
				"checkpoint, not per file");
}

int file_io(struct analysis *a, struct rule_outcome *o)
{
	const struct profile *p = a->profile;
	struct io_totals totals = {0};
	struct io_scan v = {0};
	double share;
	int err = -ENOMEM;

	if (!a->has_python)
		return outcome__note(o, "%s", "needs Python frames (the profile has none)");
	if (!a->has_timeline || !p->nr_threads)
		return outcome__note(o, "%s",
				     "needs a timeline (the profile has only stack weights)");
	o->ran = true;
	v.found = calloc(1, sizeof(*v.found));
	v.call_of = malloc((p->nr_stacks ? p->nr_stacks : 1) * sizeof(*v.call_of));
	v.threads = calloc(p->nr_threads, sizeof(*v.threads));
	v.frame_kinds = calloc(p->nr_frames ? p->nr_frames : 1, 1);
	v.stack_kinds = calloc(p->nr_stacks ? p->nr_stacks : 1, 1);
	if (!v.found || !v.call_of || !v.threads || !v.frame_kinds || !v.stack_kinds)
		goto cleanup;
	io_scan__calls(&v, a);
	io_scan__spans(&v, a);
	err = io_totals__sum(&totals, a, &v);
	if (err)
		goto cleanup;
	share = totals.wall ? (double)totals.under / totals.wall : 0;
	err = outcome__note(o,
			    "%.1f%% of the writing threads' wall time in calls that write files "
			    "(fires at %.0f%%), %.1f%% of those calls' time in the write path "
			    "(fires at %.0f%%)",
			    100 * share, 100 * FILE_IO_MIN_SHARE,
			    totals.under ? 100.0 * totals.io / totals.under : 0,
			    100 * FILE_IO_MIN_IO_SHARE);
	if (err || share < FILE_IO_MIN_SHARE || !totals.io ||
	    totals.io < FILE_IO_MIN_IO_SHARE * totals.under)
		goto cleanup;
	err = file_io_finding(a, o, &totals, share);
cleanup:
	tally__free(&totals.sites);
	free(v.found);
	free(v.call_of);
	free(v.threads);
	free(v.frame_kinds);
	free(v.stack_kinds);
	return err;
}
