// SPDX-License-Identifier: GPL-2.0
/* The end-of-run summary: what was sampled, what was lost, where time went. */
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "array.h"

#include "status.h"
#include "profile/ml_waits.h"
#include "profile/summary.h"

/* Python code straight into a condition wait, which is how a GIL wait
 * looks where the interpreter has no symbols: not a frame of the table. */
static const struct ml_wait bare_gil_wait = {"[GIL]", "waiting for the GIL", ML_WAIT_GIL};

/* Which ML wait frames[k] of a waiting stack is, or NULL; the outermost
 * match names the wait (Queue.get over the Condition.wait inside it). */
static const struct ml_wait *named_wait(const struct profile *p, const struct stack *s, size_t k)
{
	const struct frame *f = &p->frames[s->frames[k]];
	const struct ml_wait *w = ml_wait__find(f, ML_WAIT_ANY);
	char text[512];

	/* A gloo wait only where the thread blocks; an idle one only where
	 * the frame waits itself. */
	if (w && w->blocked && profile__stack_is_preempted(p, (uint32_t)(s - p->stacks)))
		w = NULL;
	if (w && w->idle &&
	    !(k + 1 < s->depth && !strncmp(p->frames[s->frames[k + 1]].name, "pthread_cond_", 13)))
		w = NULL;
	if (w)
		return w;
	if (f->kind == FRAME_PYTHON && k + 1 < s->depth &&
	    !strncmp(p->frames[s->frames[k + 1]].name, "pthread_cond_", 13) &&
	    !strstr(frame__text(f, text, sizeof(text)), "(threading.py)") && !strstr(text, "queue"))
		return &bare_gil_wait;
	return NULL;
}

struct wait_row {
	uint32_t leaf;		     /* the [off-cpu] frame */
	uint32_t caller;	     /* the nearest frame outside the kernel and libc */
	const struct ml_wait *named; /* or NULL */
	uint64_t weight;
};

/* Frames that say nothing of who waits: kernel frames and the C library's
 * system-call wrappers. */
static bool is_plumbing(const struct profile *p, uint32_t id)
{
	const struct frame *f = &p->frames[id];

	return f->kind == FRAME_KERNEL || f->name[0] == '_' || !strcmp(f->name, "syscall") ||
	       !strcmp(f->name, "read") || !strcmp(f->name, "write") ||
	       !strncmp(f->name, "pthread_", 8) || !strncmp(f->name, "clock_nanosleep", 15);
}

static int compare_waits(const void *a, const void *b)
{
	const struct wait_row *x = a, *y = b;

	if (x->weight != y->weight)
		return x->weight < y->weight ? 1 : -1;
	return x->leaf != y->leaf ? (x->leaf < y->leaf ? -1 : 1)
				  : (x->caller < y->caller ? -1 : x->caller > y->caller);
}

/*
 * The off-CPU weight of each stack from threads that also ran on the CPU:
 * a thread that only ever waits (a queue feeder, a listener) is idle, and
 * its waits would hide the ones that cost the job time.  NULL when the
 * profile has no CPU samples to tell them apart; *idle counts such threads.
 */
static uint64_t *working_waits(const struct profile *p, size_t *idle)
{
	bool *ran = NULL;
	uint64_t *weights = NULL;

	*idle = 0;
	if (!p->frequency || !p->nr_samples || !p->nr_threads)
		return NULL;
	ran = calloc(p->nr_threads, sizeof(*ran));
	weights = calloc(p->nr_stacks ? p->nr_stacks : 1, sizeof(*weights));
	if (!ran || !weights)
		goto fail;
	for (size_t i = 0; i < p->nr_samples; i++) {
		const struct stack *s = &p->stacks[p->samples[i].stack];

		if (s->depth && !profile__stack_is_off_cpu(p, p->samples[i].stack))
			ran[p->samples[i].thread] = true;
	}
	for (size_t i = 0; i < p->nr_samples; i++)
		if (ran[p->samples[i].thread])
			weights[p->samples[i].stack] += p->samples[i].weight;
	for (size_t t = 0; t < p->nr_threads; t++)
		*idle += !ran[t];
	free(ran);
	return weights;
fail:
	free(ran);
	free(weights);
	return NULL;
}

/* On-CPU against off-CPU time, and the longest waits with who waits. */
static void print_waits(const struct profile *p, uint64_t total)
{
	struct wait_row *rows = NULL;
	size_t nr_rows = 0, cap_rows = 0, idle = 0;
	uint64_t off = 0, *working = working_waits(p, &idle);

	for (size_t i = 0; i < p->nr_stacks; i++) {
		const struct stack *s = &p->stacks[i];
		struct wait_row row = {.named = NULL};
		char text[512], caller[512];
		size_t k;

		if (!s->weight || !profile__stack_is_off_cpu(p, i))
			continue;
		off += s->weight;
		if (working && !working[i])
			continue;
		row.leaf = s->frames[s->depth - 1];
		for (k = 0; k + 1 < s->depth && !row.named; k++)
			row.named = named_wait(p, s, k);
		for (k = s->depth - 1; k-- > 0;)
			if (!is_plumbing(p, s->frames[k]) &&
			    p->frames[s->frames[k]].kind != FRAME_PROCESS &&
			    p->frames[s->frames[k]].kind != FRAME_THREAD)
				break;
		/* No caller of its own (a kernel thread, an exit): the root. */
		row.caller = k < s->depth ? s->frames[k] : s->frames[0];
		row.weight = working ? working[i] : s->weight;
		for (k = 0; k < nr_rows; k++)
			if (rows[k].leaf == row.leaf && rows[k].named == row.named &&
			    !strcmp(frame__text(&p->frames[rows[k].caller], text, sizeof(text)),
				    frame__text(&p->frames[row.caller], caller, sizeof(caller))))
				break;
		if (k < nr_rows) {
			rows[k].weight += row.weight;
			continue;
		}
		if (array__grow((void **)&rows, &cap_rows, nr_rows + 1, sizeof(*rows)))
			break;
		rows[nr_rows++] = row;
	}
	status__info("off-CPU: %.1f%% of the time in %llu waits (%llu shorter than the minimum "
		     "counted, %.1f ms in all; %llu lost)",
		     total ? 100.0 * off / total : 0.0, (unsigned long long)p->off_cpu_intervals,
		     (unsigned long long)p->off_cpu_short, p->off_cpu_short_ns / 1e6,
		     (unsigned long long)p->off_cpu_lost);
	if (p->off_cpu_lost)
		status__warn("%llu off-CPU waits were lost (ring buffer full); raise --off-cpu-min",
			     (unsigned long long)p->off_cpu_lost);
	qsort(rows, nr_rows, sizeof(*rows), compare_waits);
	if (nr_rows)
		status__info(idle ? "top waits of the threads that also ran (%zu threads only "
				    "waited):"
				  : "top waits:",
			     idle);
	for (size_t i = 0; i < nr_rows && i < SUMMARY_TOP_WAITS; i++) {
		const struct frame *caller = &p->frames[rows[i].caller];
		const char *reason = frame__off_cpu_reason(&p->frames[rows[i].leaf]);
		const struct ml_wait *named = rows[i].named;
		char caller_text[512];
		const char *under = frame__text(caller, caller_text, sizeof(caller_text));

		if (named == &bare_gil_wait) {
			status__text("  %6.2f%%  %s (%s) under %s\n",
				     100.0 * rows[i].weight / total, named->meaning, reason, under);
		} else if (named) {
			/* The table's text without its stars. */
			const char *text = named->frame + (named->frame[0] == '*');
			int len = strlen(text);

			len -= len && text[len - 1] == '*';
			status__text("  %6.2f%%  %s (%.*s, %s) under %s\n",
				     100.0 * rows[i].weight / total, named->meaning, len, text,
				     reason, under);
		} else
			status__text("  %6.2f%%  %s under %s\n", 100.0 * rows[i].weight / total,
				     reason, under);
	}
	free(rows);
	free(working);
}

/* "[libfoo.so+0x1234]": a module's function without a symbol, which the
 * module's debug info would name (kernel and mapless addresses would not). */
static bool frame_is_unnamed(const struct frame *f)
{
	return f->kind == FRAME_UNKNOWN && f->name[0] == '[' && strstr(f->name, "+0x") &&
	       strncmp(f->name, "[kernel+", 8) && strncmp(f->name, "[unknown+", 9);
}

static void print_unnamed(const struct profile *p, uint64_t total)
{
	bool *seen = calloc(p->nr_frames ? p->nr_frames : 1, sizeof(*seen));
	uint64_t weight = 0;
	size_t frames = 0;

	if (!seen)
		return;
	for (size_t i = 0; i < p->nr_stacks; i++) {
		const struct stack *st = &p->stacks[i];
		bool counted = false;

		if (profile__stack_is_gpu(p, i))
			continue;
		for (uint32_t k = 0; k < st->depth; k++) {
			uint32_t f = st->frames[k];

			if (!frame_is_unnamed(&p->frames[f]))
				continue;
			if (!seen[f])
				frames++;
			seen[f] = true;
			if (!counted)
				weight += st->weight;
			counted = true;
		}
	}
	free(seen);
	if (frames)
		status__info("%zu frames had no symbol (in %.1f%% of the stacks, named "
			     "[library+0xOFFSET]); debuginfod (set DEBUGINFOD_URLS) or the "
			     "libraries' -dbgsym/-debuginfo packages would name them",
			     frames, total ? 100.0 * weight / total : 0.0);
}

void summary__print(const struct profile *p, pid_t pid, const char *output_path,
		    enum profile_format format)
{
	struct function_share *shares = NULL;
	uint64_t total = 0;
	int64_t n;

	for (size_t i = 0; i < p->nr_stacks; i++)
		if (p->stacks[i].depth && !profile__stack_is_gpu(p, i))
			total += p->stacks[i].weight;
	if (p->frequency)
		status__info("profiled PID %d for %.2f s at %u Hz (%s intervals): %llu samples, "
			     "%llu lost, %zu threads",
			     pid, p->duration_ns / 1e9, p->frequency,
			     p->random_intervals ? "random" : "fixed",
			     (unsigned long long)p->samples_taken,
			     (unsigned long long)p->samples_lost, p->nr_threads);
	else
		status__info("profiled PID %d for %.2f s: %zu threads", pid, p->duration_ns / 1e9,
			     p->nr_threads);
	if (p->processes > 1 || p->children_followed)
		status__info("%u processes sampled; %llu child processes joined by fork%s",
			     p->processes, (unsigned long long)p->children_followed,
			     p->children_followed + 1 > p->processes
				 ? " (those that never ran during a sample period have no samples)"
				 : "");
	if (p->children_lost)
		status__warn("%llu forked processes were not followed: the target set is full",
			     (unsigned long long)p->children_lost);
	if (p->off_cpu_intervals || p->off_cpu_short || p->off_cpu_lost)
		print_waits(p, total);
	if (p->samples_lost)
		status__warn("%llu samples were lost (ring buffer full); try a lower -F",
			     (unsigned long long)p->samples_lost);
	{
		uint64_t cut = 0, all = 0;

		for (size_t i = 0; i < p->nr_stacks; i++) {
			const struct stack *st = &p->stacks[i];

			if (!st->depth || profile__stack_is_gpu(p, i))
				continue;
			all += st->weight;
			for (uint32_t k = 0; k < st->depth && k < 3; k++)
				if (p->frames[st->frames[k]].kind == FRAME_UNKNOWN &&
				    !strcmp(p->frames[st->frames[k]].name, "[truncated]")) {
					cut += st->weight;
					break;
				}
		}
		if (cut)
			status__warn(
			    "%.1f%% of the stacks were deeper than %d frames and are cut at "
			    "their root (marked [truncated])",
			    100.0 * cut / all,
			    p->stack_limit ? (int)p->stack_limit : SUMMARY_MAX_STACK_DEPTH);
	}
	if (p->stack_errors)
		status__warn("%llu stacks could not be read (kept as [no stack] or cut short)",
			     (unsigned long long)p->stack_errors);
	print_unnamed(p, total);
	n = profile__function_shares(p, &shares);
	if (n > 0 && total) {
		int shown = 0;

		status__info(p->unit == UNIT_SAMPLES ? "top functions by self time:"
						     : "top functions by self time (wall clock):");
		for (int64_t i = 0; i < n && shown < SUMMARY_TOP_FUNCTIONS; i++) {
			const struct frame *f = &p->frames[shares[i].frame];
			char text[512];

			if (!shares[i].self || f->kind == FRAME_GPU)
				continue;
			status__text("  %6.2f%%  %s\n", 100.0 * shares[i].self / total,
				     frame__text(f, text, sizeof(text)));
			shown++;
		}
	} else if (!total) {
		status__info(p->frequency ? "no samples of the target were taken (was it idle?)"
					  : "the target's threads did not wait");
	}
	free(shares);
	status__info("wrote %s to %s%s", format__get(format)->description,
		     output_path ? output_path : "standard output",
		     output_path && strchr(output_path, '%') ? " (a file per process)" : "");
}
