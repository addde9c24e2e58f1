// SPDX-License-Identifier: GPL-2.0
/*
 * The GPU memory accounting as facts a memory profile carries beside its
 * stacks (profile->memory): totals, counts, the time inside the calls, the
 * failed allocations and what is still live at the end, by stack.  The
 * findings read them; the speedscope writer keeps them.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "array.h"
#include "gpu/gpu_memory_internal.h"
#include "gpu/library_probe.h"
#include "profile/python_frame.h"

/* Sites of each kind a profile keeps: the largest. */
#define FACTS_MAX_SITES 8

struct site_group {
	uint32_t first; /* its first event */
	uint64_t bytes, count, first_ns, last_ns;
};

static bool is_live_alloc(const struct memory_event *e)
{
	return gpu_memory__is_alloc(e) && !e->result && e->address;
}

static bool same_site(const struct gpu_memory *m, const struct memory_event *a,
		      const struct memory_event *b, bool failed)
{
	return a->call == b->call && (!failed || a->result == b->result) &&
	       a->nr_frames == b->nr_frames &&
	       !memcmp(m->stacks.frames + a->frames, m->stacks.frames + b->frames,
		       a->nr_frames * sizeof(*m->stacks.frames));
}

static int compare_by_count(const void *x, const void *y)
{
	const struct site_group *a = x, *b = y;

	if (a->count != b->count)
		return a->count < b->count ? 1 : -1;
	return a->first < b->first ? -1 : a->first > b->first;
}

static int compare_groups(const void *x, const void *y)
{
	const struct site_group *a = x, *b = y;

	if (a->bytes != b->bytes)
		return a->bytes < b->bytes ? 1 : -1;
	if (a->count != b->count)
		return a->count < b->count ? 1 : -1;
	return a->first < b->first ? -1 : a->first > b->first;
}

static bool python_location(const struct profile *p, const uint32_t *frames, size_t n, char *buf,
			    size_t size)
{
	for (size_t k = n; k-- > 0;) {
		const struct frame *f = &p->frames[frames[k]];

		if (f->kind != FRAME_PYTHON)
			continue;
		python_frame__location(f, true, buf, size);
		return true;
	}
	return false;
}

static int add_sites(const struct gpu_memory *m, struct profile *p, enum memory_site_kind kind)
{
	bool failed = kind == MEMORY_SITE_FAILED;
	struct site_group *groups = NULL;
	size_t nr = 0, cap = 0;
	int err = 0;

	for (uint32_t i = 0; i < m->nr_events; i++) {
		const struct memory_event *e = &m->events[i];
		uint64_t t = e->time_ns > m->start_ns ? e->time_ns - m->start_ns : 0;
		size_t k;

		if (failed			   ? !(gpu_memory__is_alloc(e) && e->result)
		    : kind == MEMORY_SITE_FREQUENT ? !is_live_alloc(e)
						   : !(is_live_alloc(e) && e->end == NO_END))
			continue;
		for (k = 0; k < nr; k++)
			if (same_site(m, &m->events[groups[k].first], e, failed))
				break;
		if (k == nr) {
			if (array__grow((void **)&groups, &cap, nr + 1, sizeof(*groups))) {
				err = -ENOMEM;
				goto cleanup;
			}
			groups[nr++] = (struct site_group){.first = i, .first_ns = t, .last_ns = t};
		}
		groups[k].count++;
		if (t < groups[k].first_ns)
			groups[k].first_ns = t;
		if (t > groups[k].last_ns)
			groups[k].last_ns = t;
		if (!failed)
			groups[k].bytes += e->size;
		else if (e->size > groups[k].bytes)
			groups[k].bytes = e->size;
	}
	if (nr > 1)
		qsort(groups, nr, sizeof(*groups),
		      kind == MEMORY_SITE_FREQUENT ? compare_by_count : compare_groups);
	for (size_t k = 0; k < nr && k < FACTS_MAX_SITES; k++) {
		const struct memory_event *e = &m->events[groups[k].first];
		char stack[512], location[512], error[96];
		struct memory_site site = {
		    .kind = kind,
		    .call = (char *)gpu_memory_calls[e->call].name,
		    .stack = stack,
		    .bytes = groups[k].bytes,
		    .count = groups[k].count,
		    .first_ns = groups[k].first_ns,
		    .last_ns = groups[k].last_ns,
		};

		library_probe__describe_stack(m->frames_profile, m->stacks.frames + e->frames,
					      e->nr_frames, stack, sizeof(stack));
		if (python_location(m->frames_profile, m->stacks.frames + e->frames, e->nr_frames,
				    location, sizeof(location)))
			site.location = location;
		if (failed) {
			snprintf(error, sizeof(error), "%s (%" PRId64 ")",
				 gpu_memory__error_name(e), e->result);
			site.error = error;
		}
		err = profile__add_memory_site(p, &site);
		if (err)
			goto cleanup;
	}
cleanup:
	free(groups);
	return err;
}

int gpu_memory__facts(const struct gpu_memory *m, struct profile *p)
{
	struct memory_facts *f = &p->memory;
	uint64_t first = UINT64_MAX, last = 0;
	int err;

	f->known = true;
	f->allocated = m->allocated;
	f->nr_allocs = m->nr_allocs;
	f->nr_frees = m->nr_frees;
	f->nr_failed = m->nr_failed;
	f->duration_ns = m->duration_ns;
	for (size_t i = 0; i < m->nr_devices; i++) {
		const struct device_memory *d = &m->devices[i];

		f->end_live += d->end_live;
		if (d->device != GPU_MEMORY_HOST_DEVICE && d->peak > f->peak)
			f->peak = d->peak;
	}
	for (size_t i = 0; i < m->nr_events; i++) {
		const struct memory_event *e = &m->events[i];
		enum gpu_memory_shape shape = gpu_memory_calls[e->call].shape;

		if (shape != GPU_MEMORY_ALLOC && shape != GPU_MEMORY_ALLOC_PITCH &&
		    shape != GPU_MEMORY_CREATE && shape != GPU_MEMORY_FREE)
			continue;
		if (e->start_ns && e->start_ns <= e->time_ns)
			f->call_ns += e->time_ns - e->start_ns;
	}
	for (size_t i = 0; i < m->nr_events; i++) {
		uint64_t t = m->events[i].time_ns;

		first = t < first ? t : first;
		last = t > last ? t : last;
	}
	f->span_ns = last > first ? last - first : 0;
	err = add_sites(m, p, MEMORY_SITE_FAILED);
	if (!err)
		err = add_sites(m, p, MEMORY_SITE_LIVE_AT_END);
	if (!err)
		err = add_sites(m, p, MEMORY_SITE_FREQUENT);
	return err;
}
