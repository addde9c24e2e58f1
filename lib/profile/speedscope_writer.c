// SPDX-License-Identifier: GPL-2.0
/*
 * Speedscope JSON: one sampled profile per thread whose samples fill the real
 * timeline (idle gaps become empty samples), and one evented profile per GPU
 * stream, all starting at the profile's start so they line up.  A profile of
 * several values per stack (a recording's views) writes every value: the
 * first as above, each other as one sampled profile of its stacks, every
 * profile named after its value and marked with it (VIEW_MEMBER) for the
 * reader.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/json_writer.h"
#include "profile/output.h"
#include "profile/python_frame.h"

#define SPEEDSCOPE_SCHEMA "https://www.speedscope.app/file-format-schema.json"

/*
 * The JSON is streamed: nothing but the frame numbering is held, so the
 * memory used is that of the profile.  The shared frames come first in the
 * file but are numbered in the order the profiles first use them, so the
 * profiles are walked twice: once to number the frames, once to write.
 * The bytes are those jansson's compact dump wrote, which the golden files
 * hold.
 */
struct speedscope_writer {
	const struct profile *profile;
	enum output_view view;
	FILE *out;
	int64_t *frame_index; /* frame id -> shared frame index, -1 if unused */
	/* frame id -> the frame id that stands for it: Python frames of one
	 * function that differ only by line are one shared frame, unless
	 * python_lines. */
	bool python_lines;
	uint32_t *function_of;
	uint32_t *frame_order; /* shared frame index -> frame id */
	size_t nr_shared;
	size_t nr_profiles; /* profiles written, for the commas */
	/* The value being written (profile__nr_values()), and whether there
	 * are several: then every profile's name says which. */
	size_t value;
	bool views;
	const char *weight_name;	       /* value 0's, as pprof names it */
	const struct gpu_activity **gpu_order; /* by process, device, stream, time */
	/* Sample indices grouped by thread, in time order within each:
	 * thread t owns by_thread[thread_start[t] .. thread_start[t + 1]). */
	uint32_t *by_thread;
	size_t *thread_start;
};

/* A JSON string; control characters escaped as jansson escapes them. */
static void write_text(FILE *out, const char *text)
{
	json_writer__string(out, text, JSON_STRING_SHORT_ESCAPES);
}

/* A JSON real as jansson writes one with JSON_REAL_PRECISION(12): "%.12g",
 * ".0" where that reads as an integer, and no '+' or leading zeros in the
 * exponent. */
static void write_real(FILE *out, double value)
{
	char buf[64], *e;
	int len = snprintf(buf, sizeof(buf), "%.12g", value);

	if (len < 0 || (size_t)len >= sizeof(buf) - 3)
		return;
	e = strchr(buf, 'e');
	if (!e && !strchr(buf, '.')) {
		memcpy(buf + len, ".0", 3);
	} else if (e) {
		char *start = e + 1, *end = e + 2;

		if (*start == '-')
			start++;
		while (*end == '0')
			end++;
		memmove(start, end, strlen(end) + 1);
	}
	fputs(buf, out);
}

static void write_integer(FILE *out, uint64_t value)
{
	char buf[24], *c = buf + sizeof(buf);

	*--c = '\0';
	do
		*--c = '0' + value % 10;
	while (value /= 10);
	fputs(c, out);
}

static int64_t shared_frame(struct speedscope_writer *w, uint32_t id)
{
	id = w->function_of[id];
	if (w->frame_index[id] < 0) {
		w->frame_order[w->nr_shared] = id;
		w->frame_index[id] = w->nr_shared++;
	}
	return w->frame_index[id];
}

static int write_shared_frames(struct speedscope_writer *w)
{
	for (size_t i = 0; i < w->nr_shared; i++) {
		const struct frame *f = &w->profile->frames[w->frame_order[i]];
		bool python = python_frame__has_python_file(f);
		bool merged = f->kind == FRAME_PYTHON && !w->python_lines;
		/* A Python frame is its function, with its file: no marks; in
		 * any other file its text, marked, holds the file. */
		const char *file = f->kind == FRAME_PYTHON && !python ? NULL : f->file;
		char *name = python ? strdup(f->name) : frame__folded_name(f);

		if (!name)
			return -ENOMEM;
		fputs(i ? ",{\"name\":" : "{\"name\":", w->out);
		write_text(w->out, name);
		free(name);
		if (file) {
			fputs(",\"file\":", w->out);
			write_text(w->out, file);
		}
		/* A function's frame stands for all its lines: it has none. */
		if (f->line && !merged) {
			fputs(",\"line\":", w->out);
			write_integer(w->out, f->line);
		}
		putc('}', w->out);
	}
	return 0;
}

static int compare_strings(const char *a, const char *b)
{
	return a && b ? strcmp(a, b) : (a != NULL) - (b != NULL);
}

static int compare_function(const void *a, const void *b, void *context)
{
	const struct profile *p = context;
	const struct frame *x = &p->frames[*(const uint32_t *)a];
	const struct frame *y = &p->frames[*(const uint32_t *)b];
	int order = compare_strings(x->name, y->name);

	if (!order)
		order = compare_strings(x->file, y->file);
	if (!order)
		order = *(const uint32_t *)a < *(const uint32_t *)b ? -1 : 1;
	return order;
}

/* w->function_of: each frame stands for itself, but a Python frame for the
 * first frame of its function (same name and file, any line). */
static int merge_functions(struct speedscope_writer *w)
{
	const struct profile *p = w->profile;
	uint32_t *python = malloc((p->nr_frames ? p->nr_frames : 1) * sizeof(*python));
	size_t nr = 0;

	if (!python)
		return -ENOMEM;
	for (size_t i = 0; i < p->nr_frames; i++) {
		w->function_of[i] = i;
		if (p->frames[i].kind == FRAME_PYTHON && !w->python_lines)
			python[nr++] = i;
	}
	qsort_r(python, nr, sizeof(*python), compare_function, (void *)p);
	for (size_t k = 1; k < nr; k++) {
		const struct frame *x = &p->frames[w->function_of[python[k - 1]]];
		const struct frame *y = &p->frames[python[k]];

		if (!compare_strings(x->name, y->name) && !compare_strings(x->file, y->file))
			w->function_of[python[k]] = w->function_of[python[k - 1]];
	}
	free(python);
	return 0;
}

/* A sample's stack as shared-frame indices, thread frames left out: the
 * profile itself is the thread.  With out NULL, only numbers the frames. */
static void write_stack(struct speedscope_writer *w, uint32_t stack_id, FILE *out, bool first)
{
	const struct stack *s = &w->profile->stacks[stack_id];
	bool empty = true;

	if (out)
		fputs(first ? "[" : ",[", out);
	for (uint32_t d = 0; d < s->depth; d++) {
		int64_t index;

		if (w->profile->frames[s->frames[d]].kind == FRAME_THREAD)
			continue;
		index = shared_frame(w, s->frames[d]);
		if (!out)
			continue;
		if (!empty)
			putc(',', out);
		write_integer(out, index);
		empty = false;
	}
	if (out)
		putc(']', out);
}

/* Weight of one sample in microseconds on the timeline. */
static double sample_microseconds(const struct profile *p, uint64_t weight)
{
	switch (p->unit) {
	case UNIT_MICROSECONDS:
		return weight;
	case UNIT_NANOSECONDS:
		return weight / 1e3;
	default:
		return p->frequency ? weight * 1e6 / p->frequency : weight;
	}
}

/* What a walk over a profile's samples does: number the frames it uses (and
 * count and time them), or write its samples, or its weights. */
enum walk_part {
	WALK_NUMBER,
	WALK_SAMPLES,
	WALK_WEIGHTS,
};

static void write_item_real(FILE *out, size_t item, double value)
{
	if (item)
		putc(',', out);
	write_real(out, value);
}

/* Opens a profile object up to its samples or events.  Of a profile of
 * several values, the name ends in VIEW_SEPARATOR and the value's name, and
 * VIEW_MEMBER names the value for the reader (speedscope ignores it). */
static void write_profile_start(struct speedscope_writer *w, const char *type, const char *name,
				const char *unit, double end)
{
	const char *view =
	    w->value ? profile__value_type(w->profile, w->value).name : w->weight_name;
	FILE *out = w->out;
	char named[1024];

	fputs(w->nr_profiles++ ? ",{\"type\":" : "{\"type\":", out);
	write_text(out, type);
	fputs(",\"name\":", out);
	if (w->views)
		snprintf(named, sizeof(named), "%s%s%s", name, SPEEDSCOPE_VIEW_SEPARATOR, view);
	write_text(out, w->views ? named : name);
	fputs(",\"unit\":", out);
	write_text(out, unit);
	fputs(",\"startValue\":0,\"endValue\":", out);
	write_real(out, end);
	if (w->views) {
		fputs(",\"" SPEEDSCOPE_VIEW_MEMBER "\":", out);
		write_text(out, view);
	}
}

/* One thread's samples in time order; returns how many are written, with
 * *end the end of its timeline.  An empty sample stands for the time the
 * thread was not seen on a CPU, so the time-order view is the real
 * timeline. */
static size_t walk_thread(struct speedscope_writer *w, uint32_t thread, enum walk_part part,
			  double *end)
{
	const struct profile *p = w->profile;
	size_t written = 0, items = 0;
	double cursor = 0;

	for (size_t k = w->thread_start[thread]; k < w->thread_start[thread + 1]; k++) {
		const struct sample *s = &p->samples[w->by_thread[k]];
		double at = s->time_ns / 1e3, weight;

		if (profile__stack_is_gpu(p, s->stack) != (w->view == VIEW_GPU))
			continue;
		if (at > cursor + 0.5) {
			if (part == WALK_SAMPLES)
				fputs(items ? ",[]" : "[]", w->out);
			else if (part == WALK_WEIGHTS)
				write_item_real(w->out, items, at - cursor);
			items++;
		}
		if (at > cursor)
			cursor = at;
		weight = sample_microseconds(p, s->weight);
		if (part == WALK_WEIGHTS)
			write_item_real(w->out, items, weight);
		else
			write_stack(w, s->stack, part == WALK_SAMPLES ? w->out : NULL, !items);
		items++;
		cursor += weight;
		written++;
	}
	/* Every thread's timeline runs to the end of the profile, idle after
	 * its last sample, so threads line up in the viewer. */
	if (written && p->duration_ns / 1e3 > cursor + 0.5) {
		if (part == WALK_SAMPLES)
			fputs(",[]", w->out);
		else if (part == WALK_WEIGHTS)
			write_item_real(w->out, items, p->duration_ns / 1e3 - cursor);
		cursor = p->duration_ns / 1e3;
	}
	*end = cursor;
	return written;
}

/* In a profile of several processes, the process label ("python3 [rank 0]
 * [worker 1]") of the thread's samples, so the viewer tells ranks and
 * workers apart; NULL for one process, or when the name already has it
 * (read back from a file this writer wrote). */
static const char *thread_process_label(const struct speedscope_writer *w, uint32_t thread)
{
	const struct profile *p = w->profile;
	const struct thread *t = &p->threads[thread];
	size_t processes = 0;

	for (size_t i = 0; i < p->nr_frames && processes < 2; i++)
		processes += p->frames[i].kind == FRAME_PROCESS;
	if (processes < 2)
		return NULL;
	for (size_t k = w->thread_start[thread]; k < w->thread_start[thread + 1]; k++) {
		const struct stack *s = &p->stacks[p->samples[w->by_thread[k]].stack];
		const char *label;

		if (!s->depth || p->frames[s->frames[0]].kind != FRAME_PROCESS)
			continue;
		label = p->frames[s->frames[0]].name;
		return t->name && !strncmp(t->name, label, strlen(label)) ? NULL : label;
	}
	return NULL;
}

static void write_thread(struct speedscope_writer *w, uint32_t thread)
{
	const struct thread *t = &w->profile->threads[thread];
	const char *process;
	char name[512];
	double end;

	if (!walk_thread(w, thread, WALK_NUMBER, &end))
		return;
	process = thread_process_label(w, thread);
	snprintf(name, sizeof(name), "%s%s%s (pid %u, tid %u)", process ? process : "",
		 process ? ": " : "", t->name, t->pid, t->tid);
	write_profile_start(w, "sampled", name, "microseconds", end);
	/* A value that counts samples is on the timeline in time: the
	 * reader counts them back by the rate. */
	if (w->views && w->profile->unit == UNIT_SAMPLES && w->profile->frequency) {
		fputs(",\"" SPEEDSCOPE_FREQUENCY_MEMBER "\":", w->out);
		write_integer(w->out, w->profile->frequency);
	}
	fputs(",\"samples\":[", w->out);
	walk_thread(w, thread, WALK_SAMPLES, &end);
	fputs("],\"weights\":[", w->out);
	walk_thread(w, thread, WALK_WEIGHTS, &end);
	fputs("]}", w->out);
}

/* Folded input has no timeline: one profile, one sample per stack.
 * Returns how many samples it holds, with *total their weight. */
static size_t walk_aggregate(struct speedscope_writer *w, enum walk_part part, double *total)
{
	const struct profile *p = w->profile;
	size_t written = 0;

	*total = 0;
	for (size_t i = 0; i < p->nr_stacks; i++) {
		uint64_t weight = profile__stack_value(p, i, w->value);

		if (!weight || !p->stacks[i].depth)
			continue;
		if (w->view != VIEW_ALL && profile__stack_is_gpu(p, i) != (w->view == VIEW_GPU))
			continue;
		/* As with threads: GPU work with a timeline goes out as GPU
		 * streams only, so no weight is in two profiles.  The GPU
		 * activity is the first value's. */
		if (p->nr_gpu && !w->value && w->view != VIEW_CPU && profile__stack_is_gpu(p, i))
			continue;
		if (part == WALK_WEIGHTS)
			write_item_real(w->out, written, weight);
		else
			write_stack(w, i, part == WALK_SAMPLES ? w->out : NULL, !written);
		*total += weight;
		written++;
	}
	return written;
}

static void write_aggregate(struct speedscope_writer *w)
{
	const struct profile *p = w->profile;

	enum profile_unit unit = w->value ? profile__value_type(p, w->value).unit : p->unit;
	double total;

	/* Nothing but GPU streams: no empty profile before them. */
	if (!walk_aggregate(w, WALK_NUMBER, &total) && p->nr_gpu && !w->value &&
	    w->view != VIEW_CPU)
		return;
	write_profile_start(w, "sampled", p->name ? p->name : "profile",
			    unit__name(unit, UNIT_NAME_SPEEDSCOPE_COUNT), total);
	fputs(",\"samples\":[", w->out);
	walk_aggregate(w, WALK_SAMPLES, &total);
	fputs("],\"weights\":[", w->out);
	walk_aggregate(w, WALK_WEIGHTS, &total);
	fputs("]}", w->out);
}

static void write_event(FILE *out, bool first, const char *type, int64_t frame, double at)
{
	fputs(first ? "{\"type\":" : ",{\"type\":", out);
	write_text(out, type);
	fputs(",\"frame\":", out);
	write_integer(out, frame);
	fputs(",\"at\":", out);
	write_real(out, at);
	putc('}', out);
}

/* The spans of the stream that starts at gpu_order[first]; returns the
 * index past them, with *end the stream's end.  Spans on a stream do not
 * overlap, and where clock rounding makes them touch, a span starts at the
 * previous end so the events stay properly nested.  With out NULL, only
 * numbers the frames. */
static size_t walk_stream(struct speedscope_writer *w, size_t first, FILE *out, double *end)
{
	const struct profile *p = w->profile;
	const struct gpu_activity **order = w->gpu_order;
	uint32_t device = order[first]->device, stream = order[first]->stream;
	uint32_t process = order[first]->process;
	double cursor = 0;
	size_t i;

	/* Processes that each see their GPU as device 0 have streams apart. */
	for (i = first; i < p->nr_gpu && order[i]->process == process &&
			order[i]->device == device && order[i]->stream == stream;
	     i++) {
		double start = order[i]->start_ns / 1e3, stop = order[i]->end_ns / 1e3;
		int64_t frame = shared_frame(w, order[i]->frame);

		if (start < cursor)
			start = cursor;
		if (stop < start)
			stop = start;
		if (out) {
			write_event(out, i == first, "O", frame, start);
			write_event(out, false, "C", frame, stop);
		}
		cursor = stop;
	}
	if (cursor < p->duration_ns / 1e3)
		cursor = p->duration_ns / 1e3;
	*end = cursor;
	return i;
}

/* One evented profile per GPU stream. */
static void write_gpu_streams(struct speedscope_writer *w, bool number)
{
	size_t i = 0;

	while (i < w->profile->nr_gpu) {
		const struct gpu_activity *a = w->gpu_order[i];
		char name[64];
		double end;

		if (number) {
			i = walk_stream(w, i, NULL, &end);
			continue;
		}
		walk_stream(w, i, NULL, &end);
		snprintf(name, sizeof(name), "GPU %u stream %u", a->device, a->stream);
		write_profile_start(w, "evented", name, "microseconds", end);
		fputs(",\"events\":[", w->out);
		i = walk_stream(w, i, w->out, &end);
		fputs("]}", w->out);
	}
}

/* A stable counting sort of the samples by thread, so each thread's profile
 * is written in one pass over its own samples. */
/* "key":value pairs of the memory accounting, after the first one. */
static void write_key(FILE *out, const char *key, bool first)
{
	if (!first)
		fputc(',', out);
	write_text(out, key);
	fputc(':', out);
}

static void write_key_integer(FILE *out, const char *key, uint64_t value, bool first)
{
	write_key(out, key, first);
	write_integer(out, value);
}

/* The GPU memory accounting a memory view carries (profile->memory), under
 * a key of ours that speedscope ignores. */
static void write_memory_facts(FILE *out, const struct memory_facts *m)
{
	fputs(",\"llmprofGpuMemory\":{", out);
	write_key_integer(out, "peak", m->peak, true);
	write_key_integer(out, "endLive", m->end_live, false);
	write_key_integer(out, "allocated", m->allocated, false);
	write_key_integer(out, "allocations", m->nr_allocs, false);
	write_key_integer(out, "frees", m->nr_frees, false);
	write_key_integer(out, "failed", m->nr_failed, false);
	write_key_integer(out, "callNs", m->call_ns, false);
	write_key_integer(out, "durationNs", m->duration_ns, false);
	write_key_integer(out, "spanNs", m->span_ns, false);
	write_key(out, "sites", false);
	fputc('[', out);
	for (size_t i = 0; i < m->nr_sites; i++) {
		const struct memory_site *s = &m->sites[i];

		fputs(i ? ",{" : "{", out);
		write_key(out, "kind", true);
		write_text(out, s->kind == MEMORY_SITE_FAILED	  ? "failed"
				: s->kind == MEMORY_SITE_FREQUENT ? "frequent"
								  : "live");
		write_key(out, "call", false);
		write_text(out, s->call ? s->call : "");
		write_key(out, "stack", false);
		write_text(out, s->stack ? s->stack : "");
		if (s->location) {
			write_key(out, "location", false);
			write_text(out, s->location);
		}
		if (s->error) {
			write_key(out, "error", false);
			write_text(out, s->error);
		}
		write_key_integer(out, "bytes", s->bytes, false);
		write_key_integer(out, "count", s->count, false);
		write_key_integer(out, "firstNs", s->first_ns, false);
		write_key_integer(out, "lastNs", s->last_ns, false);
		fputc('}', out);
	}
	fputs("]}", out);
}

/* The first value's profiles: threads by process, then thread (the order a
 * reader of a job of several processes looks for them in), or the one
 * aggregate profile, then the GPU streams.  number: only number the frames. */
static void write_first_value(struct speedscope_writer *w, const uint32_t *threads, bool number)
{
	const struct profile *p = w->profile;
	double end;

	if (p->nr_samples && w->view != VIEW_GPU) {
		for (size_t t = 0; t < p->nr_threads; t++) {
			if (number)
				walk_thread(w, threads[t], WALK_NUMBER, &end);
			else
				write_thread(w, threads[t]);
		}
	} else if (!p->nr_samples) {
		if (number)
			walk_aggregate(w, WALK_NUMBER, &end);
		else
			write_aggregate(w);
	}
	if (w->view != VIEW_CPU && p->nr_gpu)
		write_gpu_streams(w, number);
}

/* Whether GPU activity weighs in the first value: it is then wall time. */
static bool has_gpu_weight(const struct profile *p)
{
	for (size_t i = 0; i < p->nr_stacks; i++)
		if (p->stacks[i].weight && profile__stack_is_gpu(p, i))
			return true;
	return false;
}

/* Every profile in file order: the first value's, then each further
 * value's one profile of its stacks (the timeline is the first value's).
 * number: only number the frames. */
static void write_profiles(struct speedscope_writer *w, const uint32_t *threads, bool number)
{
	double end;

	w->value = 0;
	write_first_value(w, threads, number);
	for (w->value = 1; w->value < profile__nr_values(w->profile); w->value++) {
		if (number)
			walk_aggregate(w, WALK_NUMBER, &end);
		else
			write_aggregate(w);
	}
	w->value = 0;
}

int speedscope__write(const struct profile *p, enum output_view view, FILE *out)
{
	return speedscope__write_with(p, &(struct writer_options){.view = view}, out);
}

int speedscope__write_with(const struct profile *p, const struct writer_options *options, FILE *out)
{
	enum output_view view = options->view;
	struct speedscope_writer w = {.profile = p,
				      .view = view,
				      .out = out,
				      .python_lines = options->python_lines || p->python_pyspy_form,
				      .views = profile__nr_values(p) > 1};
	size_t nr_frames = p->nr_frames ? p->nr_frames : 1;
	uint32_t *threads = NULL;
	int err = -ENOMEM;

	w.frame_index = malloc(nr_frames * sizeof(*w.frame_index));
	w.frame_order = malloc(nr_frames * sizeof(*w.frame_order));
	w.function_of = malloc(nr_frames * sizeof(*w.function_of));
	w.gpu_order = malloc((p->nr_gpu ? p->nr_gpu : 1) * sizeof(*w.gpu_order));
	threads = malloc((p->nr_threads ? p->nr_threads : 1) * sizeof(*threads));
	if (!w.frame_index || !w.frame_order || !w.function_of || !w.gpu_order || !threads)
		goto cleanup;
	err = merge_functions(&w);
	if (err)
		goto cleanup;
	w.weight_name = profile__weight_name(p, view != VIEW_CPU && has_gpu_weight(p));
	err = -ENOMEM;
	for (size_t i = 0; i < p->nr_frames; i++)
		w.frame_index[i] = -1;
	for (size_t k = 0; k < p->nr_gpu; k++)
		w.gpu_order[k] = &p->gpu[k];
	qsort(w.gpu_order, p->nr_gpu, sizeof(*w.gpu_order), gpu_activity__compare);
	profile__thread_order(p, threads);
	if (p->nr_samples && view != VIEW_GPU) {
		err = profile__samples_by_thread(p, &w.by_thread, &w.thread_start);
		if (err)
			goto cleanup;
	}
	write_profiles(&w, threads, true);

	fputs("{\"$schema\":", out);
	write_text(out, SPEEDSCOPE_SCHEMA);
	fputs(",\"shared\":{\"frames\":[", out);
	err = write_shared_frames(&w);
	if (err)
		goto cleanup;
	fputs("]},\"profiles\":[", out);
	write_profiles(&w, threads, false);
	fputs("],\"name\":", out);
	write_text(out, p->name ? p->name : "llmprof profile");
	fputs(",\"activeProfileIndex\":0,\"exporter\":", out);
	write_text(out, "llmprof " LLMPROF_VERSION);
	if (p->memory.known)
		write_memory_facts(out, &p->memory);
	if (p->nccl.known)
		nccl_facts__write_json(&p->nccl, out);
	fputs("}\n", out);
	err = fflush(out) || ferror(out) ? -EIO : 0;
cleanup:
	free(threads);
	free(w.frame_index);
	free(w.frame_order);
	free(w.function_of);
	free(w.gpu_order);
	free(w.by_thread);
	free(w.thread_start);
	return err;
}
