// SPDX-License-Identifier: GPL-2.0
/*
 * Speedscope JSON: one sampled profile per thread whose samples fill the real
 * timeline (idle gaps become empty samples), and one evented profile per GPU
 * stream, all starting at the profile's start so they line up.
 */
#include <errno.h>
#include <jansson.h>
#include <stdlib.h>
#include <string.h>

#include "profile/output.h"

#define SPEEDSCOPE_SCHEMA "https://www.speedscope.app/file-format-schema.json"

struct speedscope_writer {
	const struct profile *profile;
	enum output_view view;
	int64_t *frame_index; /* frame id -> shared frame index, -1 if unused */
	json_t *frames;
	json_t *profiles;
	/* Sample indices grouped by thread, in time order within each:
	 * thread t owns by_thread[thread_start[t] .. thread_start[t + 1]). */
	uint32_t *by_thread;
	size_t *thread_start;
};

/* jansson refuses invalid UTF-8; symbol names are bytes, so replace what is
 * not UTF-8 with '?' rather than lose the frame. */
static json_t *json_text(const char *text)
{
	json_t *value = json_string(text);
	char *copy;

	if (value)
		return value;
	copy = strdup(text);
	if (!copy)
		return NULL;
	for (unsigned char *c = (unsigned char *)copy; *c; c++)
		if (*c >= 0x80)
			*c = '?';
	value = json_string(copy);
	free(copy);
	return value;
}

static int set_new(json_t *object, const char *key, json_t *value)
{
	return value && !json_object_set_new(object, key, value) ? 0 : -ENOMEM;
}

static int append_new(json_t *array, json_t *value)
{
	return value && !json_array_append_new(array, value) ? 0 : -ENOMEM;
}

static int64_t shared_frame(struct speedscope_writer *w, uint32_t id)
{
	const struct frame *f = &w->profile->frames[id];
	json_t *frame;
	char *name;
	int err;

	if (w->frame_index[id] >= 0)
		return w->frame_index[id];
	frame = json_object();
	name = frame__folded_name(f);
	if (!frame || !name) {
		json_decref(frame);
		free(name);
		return -ENOMEM;
	}
	err = set_new(frame, "name", json_text(name));
	free(name);
	if (!err && f->file)
		err = set_new(frame, "file", json_text(f->file));
	if (!err && f->line)
		err = set_new(frame, "line", json_integer(f->line));
	if (!err)
		err = append_new(w->frames, frame);
	else
		json_decref(frame);
	if (err)
		return err;
	w->frame_index[id] = json_array_size(w->frames) - 1;
	return w->frame_index[id];
}

/* A sample's stack as shared-frame indices, thread frames left out: the
 * profile itself is the thread. */
static json_t *stack_json(struct speedscope_writer *w, uint32_t stack_id)
{
	const struct stack *s = &w->profile->stacks[stack_id];
	json_t *array = json_array();

	if (!array)
		return NULL;
	for (uint32_t d = 0; d < s->depth; d++) {
		int64_t index;

		if (w->profile->frames[s->frames[d]].kind == FRAME_THREAD)
			continue;
		index = shared_frame(w, s->frames[d]);
		if (index < 0 || append_new(array, json_integer(index))) {
			json_decref(array);
			return NULL;
		}
	}
	return array;
}

static const char *unit_name(enum profile_unit unit)
{
	switch (unit) {
	case UNIT_MICROSECONDS:
		return "microseconds";
	case UNIT_NANOSECONDS:
		return "nanoseconds";
	case UNIT_BYTES:
		return "bytes";
	default:
		return "none";
	}
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

static json_t *new_profile(const char *type, const char *name, const char *unit)
{
	json_t *profile = json_object();

	if (!profile || set_new(profile, "type", json_string(type)) ||
	    set_new(profile, "name", json_text(name)) ||
	    set_new(profile, "unit", json_string(unit))) {
		json_decref(profile);
		return NULL;
	}
	return profile;
}

static int add_sampled(json_t *samples, json_t *weights, json_t *stack, double weight)
{
	if (append_new(samples, stack))
		return -ENOMEM;
	return append_new(weights, json_real(weight));
}

static const struct profile *sorted_threads;

static int compare_threads(const void *a, const void *b)
{
	const struct thread *x = &sorted_threads->threads[*(const uint32_t *)a];
	const struct thread *y = &sorted_threads->threads[*(const uint32_t *)b];

	if (x->pid != y->pid)
		return x->pid < y->pid ? -1 : 1;
	return x->tid < y->tid ? -1 : x->tid > y->tid;
}

static int write_thread(struct speedscope_writer *w, uint32_t thread)
{
	const struct profile *p = w->profile;
	const struct thread *t = &p->threads[thread];
	json_t *profile, *samples = json_array(), *weights = json_array();
	double cursor = 0;
	size_t written = 0;
	char name[256];
	int err = -ENOMEM;

	snprintf(name, sizeof(name), "%s (pid %u, tid %u)", t->name, t->pid, t->tid);
	profile = new_profile("sampled", name, "microseconds");
	if (!profile || !samples || !weights)
		goto cleanup;
	for (size_t k = w->thread_start[thread]; k < w->thread_start[thread + 1]; k++) {
		const struct sample *s = &p->samples[w->by_thread[k]];
		double at = s->time_ns / 1e3;
		json_t *stack;

		if (profile__stack_is_gpu(p, s->stack) != (w->view == VIEW_GPU))
			continue;
		/* An empty sample stands for the time the thread was not seen
		 * on a CPU, so the time-order view is the real timeline. */
		if (at > cursor + 0.5 && add_sampled(samples, weights, json_array(), at - cursor))
			goto cleanup;
		if (at > cursor)
			cursor = at;
		stack = stack_json(w, s->stack);
		if (!stack ||
		    add_sampled(samples, weights, stack, sample_microseconds(p, s->weight)))
			goto cleanup;
		cursor += sample_microseconds(p, s->weight);
		written++;
	}
	if (!written) {
		err = 0;
		goto cleanup;
	}
	if (set_new(profile, "startValue", json_integer(0)) ||
	    set_new(profile, "endValue", json_real(cursor)) ||
	    json_object_set(profile, "samples", samples) ||
	    json_object_set(profile, "weights", weights) || json_array_append(w->profiles, profile))
		goto cleanup;
	err = 0;
cleanup:
	json_decref(profile);
	json_decref(samples);
	json_decref(weights);
	return err;
}

/* Folded input has no timeline: one profile, one sample per stack. */
static int write_aggregate(struct speedscope_writer *w)
{
	const struct profile *p = w->profile;
	json_t *profile, *samples = json_array(), *weights = json_array();
	size_t written = 0;
	double total = 0;
	int err = -ENOMEM;

	profile = new_profile("sampled", p->name ? p->name : "profile", unit_name(p->unit));
	if (!profile || !samples || !weights)
		goto cleanup;
	for (size_t i = 0; i < p->nr_stacks; i++) {
		const struct stack *s = &p->stacks[i];
		json_t *stack;

		if (!s->weight || !s->depth)
			continue;
		if (w->view != VIEW_ALL && profile__stack_is_gpu(p, i) != (w->view == VIEW_GPU))
			continue;
		/* As with threads: GPU work with a timeline goes out as GPU
		 * streams only, so no weight is in two profiles. */
		if (p->nr_gpu && w->view != VIEW_CPU && profile__stack_is_gpu(p, i))
			continue;
		stack = stack_json(w, i);
		if (!stack || add_sampled(samples, weights, stack, s->weight))
			goto cleanup;
		total += s->weight;
		written++;
	}
	/* Nothing but GPU streams: no empty profile before them. */
	if (!written && p->nr_gpu && w->view != VIEW_CPU) {
		err = 0;
		goto cleanup;
	}
	if (set_new(profile, "startValue", json_integer(0)) ||
	    set_new(profile, "endValue", json_real(total)) ||
	    json_object_set(profile, "samples", samples) ||
	    json_object_set(profile, "weights", weights) || json_array_append(w->profiles, profile))
		goto cleanup;
	err = 0;
cleanup:
	json_decref(profile);
	json_decref(samples);
	json_decref(weights);
	return err;
}

static int compare_gpu(const void *a, const void *b)
{
	const struct gpu_activity *x = *(const struct gpu_activity *const *)a;
	const struct gpu_activity *y = *(const struct gpu_activity *const *)b;

	if (x->device != y->device)
		return x->device < y->device ? -1 : 1;
	if (x->stream != y->stream)
		return x->stream < y->stream ? -1 : 1;
	if (x->start_ns != y->start_ns)
		return x->start_ns < y->start_ns ? -1 : 1;
	if (x->end_ns != y->end_ns)
		return x->end_ns < y->end_ns ? -1 : 1;
	return x->correlation < y->correlation ? -1 : x->correlation > y->correlation;
}

static int add_event(json_t *events, const char *type, int64_t frame, double at)
{
	json_t *event = json_object();

	if (!event || set_new(event, "type", json_string(type)) ||
	    set_new(event, "frame", json_integer(frame)) || set_new(event, "at", json_real(at))) {
		json_decref(event);
		return -ENOMEM;
	}
	return append_new(events, event);
}

/* One evented profile per GPU stream; spans on a stream do not overlap, and
 * where clock rounding makes them touch, a span starts at the previous end so
 * the events stay properly nested. */
static int write_gpu_streams(struct speedscope_writer *w)
{
	const struct profile *p = w->profile;
	const struct gpu_activity **order = calloc(p->nr_gpu ? p->nr_gpu : 1, sizeof(*order));
	int err = -ENOMEM;
	size_t i = 0;

	if (!order)
		return -ENOMEM;
	for (size_t k = 0; k < p->nr_gpu; k++)
		order[k] = &p->gpu[k];
	qsort(order, p->nr_gpu, sizeof(*order), compare_gpu);
	while (i < p->nr_gpu) {
		uint32_t device = order[i]->device, stream = order[i]->stream;
		json_t *profile, *events = json_array();
		double cursor = 0;
		char name[64];

		snprintf(name, sizeof(name), "GPU %u stream %u", device, stream);
		profile = new_profile("evented", name, "microseconds");
		if (!profile || !events) {
			json_decref(profile);
			json_decref(events);
			goto cleanup;
		}
		for (; i < p->nr_gpu && order[i]->device == device && order[i]->stream == stream;
		     i++) {
			double start = order[i]->start_ns / 1e3, end = order[i]->end_ns / 1e3;
			int64_t frame = shared_frame(w, order[i]->frame);

			if (start < cursor)
				start = cursor;
			if (end < start)
				end = start;
			if (frame < 0 || add_event(events, "O", frame, start) ||
			    add_event(events, "C", frame, end)) {
				json_decref(profile);
				json_decref(events);
				goto cleanup;
			}
			cursor = end;
		}
		if (cursor < p->duration_ns / 1e3)
			cursor = p->duration_ns / 1e3;
		if (set_new(profile, "startValue", json_integer(0)) ||
		    set_new(profile, "endValue", json_real(cursor)) ||
		    set_new(profile, "events", events)) {
			json_decref(profile);
			goto cleanup;
		}
		/* On failure json_array_append_new() has dropped the profile. */
		if (json_array_append_new(w->profiles, profile))
			goto cleanup;
	}
	err = 0;
cleanup:
	free(order);
	return err;
}

/* A stable counting sort of the samples by thread, so each thread's profile
 * is written in one pass over its own samples. */
static int group_by_thread(struct speedscope_writer *w)
{
	const struct profile *p = w->profile;
	size_t *next;

	w->thread_start = calloc(p->nr_threads + 1, sizeof(*w->thread_start));
	w->by_thread = malloc(p->nr_samples * sizeof(*w->by_thread));
	next = calloc(p->nr_threads + 1, sizeof(*next));
	if (!w->thread_start || !w->by_thread || !next) {
		free(next);
		return -ENOMEM;
	}
	for (size_t i = 0; i < p->nr_samples; i++)
		w->thread_start[p->samples[i].thread + 1]++;
	for (size_t t = 0; t < p->nr_threads; t++)
		w->thread_start[t + 1] += w->thread_start[t];
	memcpy(next, w->thread_start, (p->nr_threads + 1) * sizeof(*next));
	for (size_t i = 0; i < p->nr_samples; i++)
		w->by_thread[next[p->samples[i].thread]++] = i;
	free(next);
	return 0;
}

/* The GPU memory accounting a memory view carries (profile->memory), under
 * a key of ours that speedscope ignores. */
static json_t *memory_facts_json(const struct memory_facts *m)
{
	json_t *facts = json_object(), *sites = json_array();

	if (!facts || !sites || set_new(facts, "peak", json_integer(m->peak)) ||
	    set_new(facts, "endLive", json_integer(m->end_live)) ||
	    set_new(facts, "allocated", json_integer(m->allocated)) ||
	    set_new(facts, "allocations", json_integer(m->nr_allocs)) ||
	    set_new(facts, "frees", json_integer(m->nr_frees)) ||
	    set_new(facts, "failed", json_integer(m->nr_failed)) ||
	    set_new(facts, "callNs", json_integer(m->call_ns)) ||
	    set_new(facts, "durationNs", json_integer(m->duration_ns)) ||
	    set_new(facts, "spanNs", json_integer(m->span_ns)))
		goto fail;
	for (size_t i = 0; i < m->nr_sites; i++) {
		const struct memory_site *s = &m->sites[i];
		json_t *site = json_object();

		if (append_new(sites, site) ||
		    set_new(site, "kind",
			    json_string(s->kind == MEMORY_SITE_FAILED	  ? "failed"
					: s->kind == MEMORY_SITE_FREQUENT ? "frequent"
									  : "live")) ||
		    set_new(site, "call", json_text(s->call)) ||
		    set_new(site, "stack", json_text(s->stack)) ||
		    (s->location && set_new(site, "location", json_text(s->location))) ||
		    (s->error && set_new(site, "error", json_text(s->error))) ||
		    set_new(site, "bytes", json_integer(s->bytes)) ||
		    set_new(site, "count", json_integer(s->count)) ||
		    set_new(site, "firstNs", json_integer(s->first_ns)) ||
		    set_new(site, "lastNs", json_integer(s->last_ns)))
			goto fail;
	}
	if (!json_object_set_new(facts, "sites", sites))
		return facts;
	sites = NULL;
fail:
	json_decref(sites);
	json_decref(facts);
	return NULL;
}

int speedscope__write(const struct profile *p, enum output_view view, FILE *out)
{
	struct speedscope_writer w = {.profile = p, .view = view};
	json_t *root = json_object(), *shared = json_object();
	uint32_t *order = NULL;
	int err = -ENOMEM;

	w.frame_index = malloc((p->nr_frames ? p->nr_frames : 1) * sizeof(*w.frame_index));
	w.frames = json_array();
	w.profiles = json_array();
	if (!root || !shared || !w.frame_index || !w.frames || !w.profiles)
		goto cleanup;
	for (size_t i = 0; i < p->nr_frames; i++)
		w.frame_index[i] = -1;
	if (p->nr_samples && view != VIEW_GPU) {
		err = group_by_thread(&w);
		if (err)
			goto cleanup;
		/* Profiles by process, then thread: the order a reader of a
		 * job of several processes looks for them in. */
		order = malloc((p->nr_threads ? p->nr_threads : 1) * sizeof(*order));
		if (!order) {
			err = -ENOMEM;
			goto cleanup;
		}
		for (size_t t = 0; t < p->nr_threads; t++)
			order[t] = t;
		sorted_threads = p;
		qsort(order, p->nr_threads, sizeof(*order), compare_threads);
		for (size_t t = 0; t < p->nr_threads; t++) {
			err = write_thread(&w, order[t]);
			if (err)
				goto cleanup;
		}
	} else if (!p->nr_samples) {
		err = write_aggregate(&w);
		if (err)
			goto cleanup;
	}
	if (view != VIEW_CPU && p->nr_gpu) {
		err = write_gpu_streams(&w);
		if (err)
			goto cleanup;
	}
	err = -ENOMEM;
	if (set_new(root, "$schema", json_string(SPEEDSCOPE_SCHEMA)) ||
	    json_object_set(shared, "frames", w.frames) ||
	    json_object_set(root, "shared", shared) ||
	    json_object_set(root, "profiles", w.profiles) ||
	    set_new(root, "name", json_text(p->name ? p->name : "llmprof profile")) ||
	    set_new(root, "activeProfileIndex", json_integer(0)) ||
	    set_new(root, "exporter", json_string("llmprof " LLMPROF_VERSION)) ||
	    (p->memory.known && set_new(root, "llmprofGpuMemory", memory_facts_json(&p->memory))))
		goto cleanup;
	if (json_dumpf(root, out, JSON_COMPACT | JSON_REAL_PRECISION(12)) ||
	    fputc('\n', out) == EOF) {
		err = -EIO;
		goto cleanup;
	}
	err = fflush(out) || ferror(out) ? -EIO : 0;
cleanup:
	free(order);
	json_decref(root);
	json_decref(shared);
	json_decref(w.frames);
	json_decref(w.profiles);
	free(w.frame_index);
	free(w.by_thread);
	free(w.thread_start);
	return err;
}
