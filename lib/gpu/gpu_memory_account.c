// SPDX-License-Identifier: GPL-2.0
/*
 * GPU memory accounting: pairs each allocation with the free of its address,
 * finds each device's highest total and what was live then, and writes the
 * peak, leak and allocation views as profiles weighted in bytes, and the
 * summary.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "array.h"
#include "gpu/gpu_memory_internal.h"
#include "gpu/library_probe.h"
#include "profile/text_output.h"
#include "status.h"

#define SUMMARY_TOP_STACKS 5

void gpu_memory__format_bytes(char *buf, size_t size, uint64_t bytes)
{
	text_output__bytes(buf, size, bytes);
}

int gpu_memory__parse_view(const char *text, enum gpu_memory_view *view)
{
	if (!strcmp(text, "memory-peak"))
		*view = GPU_MEMORY_VIEW_PEAK;
	else if (!strcmp(text, "memory-leaks"))
		*view = GPU_MEMORY_VIEW_LEAKS;
	else if (!strcmp(text, "memory-alloc"))
		*view = GPU_MEMORY_VIEW_ALLOC;
	else
		return -EINVAL;
	return 0;
}

static const struct gpu_memory_call *call_of(const struct memory_event *e)
{
	return &gpu_memory_calls[e->call];
}

static bool is_alloc(const struct memory_event *e)
{
	enum gpu_memory_shape shape = call_of(e)->shape;

	return (shape == GPU_MEMORY_ALLOC || shape == GPU_MEMORY_ALLOC_PITCH ||
		shape == GPU_MEMORY_CREATE);
}

bool gpu_memory__is_alloc(const struct memory_event *e)
{
	return is_alloc(e);
}

static bool is_live_alloc(const struct memory_event *e)
{
	return is_alloc(e) && !e->result && e->address;
}

static bool is_free(const struct memory_event *e)
{
	return call_of(e)->shape == GPU_MEMORY_FREE && !e->result && e->address;
}

/* Physical handles and addresses are separate name spaces. */
static unsigned int space_of(const struct memory_event *e)
{
	return call_of(e)->space == SPACE_PHYSICAL;
}

static int32_t device_of(const struct memory_event *e)
{
	return call_of(e)->space == SPACE_HOST ? GPU_MEMORY_HOST_DEVICE : e->device;
}

/* Each process's memory is its own: a peak per process and device. */
static struct device_memory *device_slot(struct gpu_memory *m, pid_t pid, int32_t device)
{
	struct device_memory *d;

	for (size_t i = 0; i < m->nr_devices; i++)
		if (m->devices[i].pid == pid && m->devices[i].device == device)
			return &m->devices[i];
	if (m->nr_devices == GPU_MEMORY_MAX_SLOTS)
		return &m->devices[m->nr_devices - 1];
	d = &m->devices[m->nr_devices++];
	memset(d, 0, sizeof(*d));
	d->pid = pid;
	d->device = device;
	d->peak_event = SIZE_MAX;
	d->first_event = SIZE_MAX;
	return d;
}

static const struct device_memory *find_device(const struct gpu_memory *m, pid_t pid,
					       int32_t device)
{
	for (size_t i = 0; i < m->nr_devices; i++)
		if (m->devices[i].pid == pid && m->devices[i].device == device)
			return &m->devices[i];
	return NULL;
}

static const struct memory_event *sort_events;

static int compare_by_address(const void *a, const void *b)
{
	const struct memory_event *x = &sort_events[*(const uint32_t *)a];
	const struct memory_event *y = &sort_events[*(const uint32_t *)b];
	unsigned int sx = space_of(x), sy = space_of(y);

	if (x->pid != y->pid)
		return x->pid < y->pid ? -1 : 1;
	if (sx != sy)
		return sx < sy ? -1 : 1;
	if (x->address != y->address)
		return x->address < y->address ? -1 : 1;
	return *(const uint32_t *)a < *(const uint32_t *)b ? -1 : 1;
}

static int compare_devices(const void *a, const void *b)
{
	const struct device_memory *x = a, *y = b;

	if (x->pid != y->pid)
		return x->pid < y->pid ? -1 : 1;
	/* GPUs by ordinal, then pinned host memory. */
	if ((x->device < 0) != (y->device < 0))
		return x->device < 0 ? 1 : -1;
	return x->device < y->device ? -1 : x->device > y->device;
}

int gpu_memory__account(struct gpu_memory *m)
{
	uint32_t *order = NULL, nr = 0;
	uint64_t *freed = NULL; /* per event: the bytes its free released */
	struct device_memory **freed_device = NULL;

	if (m->nr_events >= NO_END)
		return -E2BIG;
	order = malloc((m->nr_events + 1) * sizeof(*order));
	freed = calloc(m->nr_events + 1, sizeof(*freed));
	freed_device = calloc(m->nr_events + 1, sizeof(*freed_device));
	if (!order || !freed || !freed_device) {
		free(order);
		free(freed);
		free(freed_device);
		return -ENOMEM;
	}
	m->nr_devices = 0;
	for (size_t i = 0; i < m->nr_before; i++)
		device_slot(m, m->before[i].pid, m->before[i].device)->before += m->before[i].bytes;
	for (uint32_t i = 0; i < m->nr_events; i++) {
		struct memory_event *e = &m->events[i];

		if (is_alloc(e) && e->result)
			m->nr_failed++;
		if (call_of(e)->shape == GPU_MEMORY_MAP && !e->result)
			m->nr_maps++;
		if (is_live_alloc(e) || is_free(e))
			order[nr++] = i;
	}
	/* Each allocation ends at the next call on its address: the free, or
	 * an allocation that got the address again (a free we did not see). */
	sort_events = m->events;
	qsort(order, nr, sizeof(*order), compare_by_address);
	for (uint32_t k = 0; k < nr; k++) {
		struct memory_event *e = &m->events[order[k]], *next;

		if (!is_live_alloc(e)) {
			if (!k || !is_live_alloc(&m->events[order[k - 1]]) ||
			    m->events[order[k - 1]].address != e->address ||
			    m->events[order[k - 1]].pid != e->pid ||
			    space_of(&m->events[order[k - 1]]) != space_of(e))
				m->unknown_frees++;
			continue;
		}
		if (k + 1 == nr)
			continue;
		next = &m->events[order[k + 1]];
		if (next->address != e->address || next->pid != e->pid ||
		    space_of(next) != space_of(e))
			continue;
		e->end = order[k + 1];
		freed[order[k + 1]] += e->size;
		freed_device[order[k + 1]] = device_slot(m, e->pid, device_of(e));
	}
	/* In call order: each device's total over time, and its highest. */
	for (size_t i = 0; i < m->nr_devices; i++)
		m->devices[i].live = m->devices[i].peak = m->devices[i].before;
	for (uint32_t i = 0; i < m->nr_events; i++) {
		struct memory_event *e = &m->events[i];

		if (freed[i]) {
			freed_device[i]->live -= freed[i];
			freed_device[i]->nr_frees++;
			m->nr_frees++;
		}
		if (!is_live_alloc(e))
			continue;
		struct device_memory *d = device_slot(m, e->pid, device_of(e));

		if (d->first_event == SIZE_MAX)
			d->first_event = i;
		d->live += e->size;
		d->allocated += e->size;
		d->nr_allocs++;
		m->nr_allocs++;
		m->allocated += e->size;
		if (d->live > d->peak || d->peak_event == SIZE_MAX) {
			d->peak = d->live;
			d->peak_event = i;
			d->peak_time_ns = e->time_ns > m->start_ns ? e->time_ns - m->start_ns : 0;
		}
	}
	m->nr_processes = 0;
	for (size_t i = 0; i < m->nr_devices; i++) {
		bool seen = false;

		m->devices[i].end_live = m->devices[i].live;
		for (size_t k = 0; k < i && !seen; k++)
			seen = m->devices[k].pid == m->devices[i].pid;
		m->nr_processes += !seen;
	}
	free(order);
	free(freed);
	free(freed_device);
	return 0;
}

static bool in_view(const struct gpu_memory *m, const struct memory_event *e, uint32_t index,
		    enum gpu_memory_view view)
{
	const struct device_memory *d;

	if (!is_live_alloc(e))
		return false;
	switch (view) {
	case GPU_MEMORY_VIEW_ALLOC:
		return true;
	case GPU_MEMORY_VIEW_LEAKS:
		return e->end == NO_END;
	default:
		d = find_device(m, e->pid, device_of(e));
		return d && d->peak_event != SIZE_MAX && index <= d->peak_event &&
		       (e->end == NO_END || e->end > d->peak_event);
	}
}

struct frame_map {
	const struct profile *from;
	struct profile *to;
	int64_t *ids; /* from's frame id -> to's, or -1 */
};

static int64_t map_frame(struct frame_map *map, uint32_t id)
{
	const struct frame *f = &map->from->frames[id];

	if (map->ids[id] < 0)
		map->ids[id] = profile__intern_frame(map->to, f->name, f->file, f->line, f->kind);
	return map->ids[id];
}

static int64_t device_frame(struct profile *p, int32_t device)
{
	char name[64];

	if (device == GPU_MEMORY_HOST_DEVICE)
		snprintf(name, sizeof(name), FRAME_GPU_MEMORY_MARK "host (pinned)");
	else
		snprintf(name, sizeof(name), FRAME_GPU_MEMORY_MARK "GPU %d", device);
	return profile__intern_frame(p, name, NULL, 0, FRAME_GPU_MEMORY);
}

/* The process frame of a process's stacks: that of one of its calls, or
 * the profile's only one. */
static int64_t process_frame(const struct gpu_memory *m, struct frame_map *map, pid_t pid)
{
	char name[64];

	for (size_t i = 0; i < m->nr_events; i++) {
		const struct memory_event *e = &m->events[i];

		if (e->pid == pid && e->nr_frames &&
		    map->from->frames[m->stacks.frames[e->frames]].kind == FRAME_PROCESS)
			return map_frame(map, m->stacks.frames[e->frames]);
	}
	for (size_t i = 0; m->nr_processes <= 1 && i < map->from->nr_frames; i++)
		if (map->from->frames[i].kind == FRAME_PROCESS)
			return map_frame(map, i);
	snprintf(name, sizeof(name), "[process %d]", pid);
	return profile__intern_frame(map->to, name, NULL, 0, FRAME_PROCESS);
}

/* More than one device in any process: the device goes under each
 * process frame. */
static bool several_devices(const struct gpu_memory *m)
{
	for (size_t i = 0; i < m->nr_devices; i++)
		for (size_t k = 0; k < i; k++)
			if (m->devices[k].device != m->devices[i].device)
				return true;
	return false;
}

int gpu_memory__profile(const struct gpu_memory *m, enum gpu_memory_view view, struct profile **out)
{
	const struct profile *cpu = m->frames_profile;
	struct frame_map map = {.from = cpu};
	uint32_t frames[1024 + 2];
	bool per_device = several_devices(m);
	struct profile *p;
	int err = -ENOMEM;

	if (!m->finished)
		return -EINVAL;
	p = profile__new();
	map.to = p;
	map.ids = malloc((cpu->nr_frames ? cpu->nr_frames : 1) * sizeof(*map.ids));
	if (!p || !map.ids)
		goto fail;
	for (size_t i = 0; i < cpu->nr_frames; i++)
		map.ids[i] = -1;
	p->unit = UNIT_BYTES;
	p->start_ns = m->start_ns;
	p->duration_ns = m->duration_ns;
	if (cpu->name && !(p->name = strdup(cpu->name)))
		goto fail;
	for (uint32_t i = 0; i < m->nr_events; i++) {
		const struct memory_event *e = &m->events[i];
		size_t depth = 0, n = e->nr_frames < 1024 ? e->nr_frames : 1024;
		char leaf[96], size[32];
		int64_t id;

		if (!in_view(m, e, i, view))
			continue;
		for (size_t k = 0; k < n; k++) {
			id = map_frame(&map, m->stacks.frames[e->frames + k]);
			if (id < 0)
				goto fail;
			frames[depth++] = id;
			/* The device under the process frame. */
			if (!k && per_device) {
				id = device_frame(p, device_of(e));
				if (id < 0)
					goto fail;
				frames[depth++] = id;
			}
		}
		gpu_memory__format_bytes(size, sizeof(size), e->size);
		snprintf(leaf, sizeof(leaf), FRAME_GPU_MEMORY_MARK "%s %s", call_of(e)->name, size);
		id = profile__intern_frame(p, leaf, NULL, 0, FRAME_GPU_MEMORY);
		if (id < 0)
			goto fail;
		frames[depth++] = id;
		id = profile__intern_stack(p, frames, depth);
		if (id < 0)
			goto fail;
		profile__add_weight(p, id, e->size);
	}
	/* What the process held before the probes were in. */
	for (size_t i = 0; view != GPU_MEMORY_VIEW_ALLOC && i < m->nr_devices; i++) {
		const struct device_memory *d = &m->devices[i];
		size_t depth = 0;
		int64_t id;

		if (!d->before)
			continue;
		id = process_frame(m, &map, d->pid);
		if (id < 0)
			goto fail;
		frames[depth++] = id;
		if (per_device) {
			id = device_frame(p, d->device);
			if (id < 0)
				goto fail;
			frames[depth++] = id;
		}
		id = profile__intern_frame(p, "[before attach]", NULL, 0, FRAME_NATIVE);
		if (id < 0)
			goto fail;
		frames[depth++] = id;
		id = profile__intern_stack(p, frames, depth);
		if (id < 0)
			goto fail;
		profile__add_weight(p, id, d->before);
	}
	err = gpu_memory__facts(m, p);
	if (err)
		goto fail;
	free(map.ids);
	*out = p;
	return 0;
fail:
	free(map.ids);
	profile__free(p);
	return err;
}

/* ---- summary ---------------------------------------------------------- */

struct summary_row {
	uint32_t stack; /* the session's raw stack */
	uint16_t call;
	int64_t result;
	uint32_t first; /* its first event */
	uint64_t bytes, count;
};

static int compare_rows(const void *a, const void *b)
{
	const struct summary_row *x = a, *y = b;

	if (x->bytes != y->bytes)
		return x->bytes < y->bytes ? 1 : -1;
	if (x->count != y->count)
		return x->count < y->count ? 1 : -1;
	return x->first < y->first ? -1 : x->first > y->first;
}

/* Rows of the events select() takes, one per stack, call and result. */
static size_t group_rows(const struct gpu_memory *m,
			 bool (*select)(const struct gpu_memory *, const struct memory_event *,
					uint32_t, const void *),
			 const void *ctx, struct summary_row **out)
{
	struct summary_row *rows = NULL;
	size_t nr = 0, cap = 0;

	for (uint32_t i = 0; i < m->nr_events; i++) {
		const struct memory_event *e = &m->events[i];
		size_t k;

		if (!select(m, e, i, ctx))
			continue;
		for (k = 0; k < nr; k++) {
			const struct memory_event *first = &m->events[rows[k].first];

			if (rows[k].call == e->call && rows[k].result == e->result &&
			    first->nr_frames == e->nr_frames &&
			    !memcmp(m->stacks.frames + first->frames, m->stacks.frames + e->frames,
				    e->nr_frames * sizeof(*m->stacks.frames)))
				break;
		}
		if (k == nr) {
			if (array__grow((void **)&rows, &cap, nr + 1, sizeof(*rows)))
				break;
			rows[nr++] = (struct summary_row){e->stack, e->call, e->result, i, 0, 0};
		}
		rows[k].bytes += e->size;
		rows[k].count++;
	}
	if (nr)
		qsort(rows, nr, sizeof(*rows), compare_rows);
	*out = rows;
	return nr;
}

static bool select_peak(const struct gpu_memory *m, const struct memory_event *e, uint32_t i,
			const void *ctx)
{
	const struct device_memory *d = ctx;

	return e->pid == d->pid && device_of(e) == d->device &&
	       in_view(m, e, i, GPU_MEMORY_VIEW_PEAK);
}

static bool select_failed(const struct gpu_memory *m, const struct memory_event *e, uint32_t i,
			  const void *ctx)
{
	return is_alloc(e) && e->result;
}

const char *gpu_memory__error_name(const struct memory_event *e)
{
	bool runtime = gpu_memory_calls[e->call].library == LIBRARY_RUNTIME;

	switch (e->result) {
	case 1:
		return runtime ? "cudaErrorInvalidValue" : "CUDA_ERROR_INVALID_VALUE";
	case 2:
		return runtime ? "cudaErrorMemoryAllocation" : "CUDA_ERROR_OUT_OF_MEMORY";
	case 3:
		return runtime ? "cudaErrorInitializationError" : "CUDA_ERROR_NOT_INITIALIZED";
	case 35:
		return runtime ? "cudaErrorInsufficientDriver" : "error 35";
	case 100:
		return runtime ? "cudaErrorNoDevice" : "CUDA_ERROR_NO_DEVICE";
	case 101:
		return runtime ? "cudaErrorInvalidDevice" : "CUDA_ERROR_INVALID_DEVICE";
	default:
		return "error";
	}
}

/* The process of a call as its stacks' root frame names it. */
static const char *process_name(const struct gpu_memory *m, const struct memory_event *e)
{
	const struct frame *root;

	if (!e || !e->nr_frames)
		return "[process]";
	root = &m->frames_profile->frames[m->stacks.frames[e->frames]];
	return root->kind == FRAME_PROCESS ? root->name : "[process]";
}

/* "GPU 0", and with several processes "python [rank 1] (PID 42), GPU 0". */
static void device_name(const struct gpu_memory *m, const struct device_memory *d, char *buf,
			size_t size)
{
	int n = 0;

	if (m->nr_processes > 1) {
		n = snprintf(
		    buf, size, "%s (PID %d), ",
		    process_name(m, d->first_event != SIZE_MAX ? &m->events[d->first_event] : NULL),
		    d->pid);
		if (n < 0 || (size_t)n >= size)
			return;
	}
	if (d->device == GPU_MEMORY_HOST_DEVICE)
		snprintf(buf + n, size - n, "pinned host memory");
	else
		snprintf(buf + n, size - n, "GPU %d", d->device);
}

void gpu_memory__print_summary(const struct gpu_memory *m)
{
	struct device_memory devices[GPU_MEMORY_MAX_SLOTS];
	double seconds = m->duration_ns / 1e9;
	char bytes[32], total[32], stack[512];
	struct summary_row *rows;
	size_t nr;

	if (!m || !m->finished)
		return;
	gpu_memory__format_bytes(total, sizeof(total), m->allocated);
	status__info("GPU memory: %" PRIu64 " allocations (%s) and %" PRIu64
		     " frees in %.2f s: %.1f allocations/s; %" PRIu64 " failed",
		     m->nr_allocs, total, m->nr_frees, seconds,
		     seconds > 0 ? m->nr_allocs / seconds : 0.0, m->nr_failed);
	if (!m->probe.nr_libraries)
		status__info("  no CUDA library (libcuda, libcudart) was loaded: nothing to probe");
	if (m->probe.lost)
		status__warn("%" PRIu64 " GPU memory calls lost (ring buffer full): the "
			     "accounting is incomplete",
			     m->probe.lost);
	if (m->attach_mode && !m->before_known)
		status__info("  memory allocated before attach is not known (no NVML): the peak "
			     "counts what was allocated since");
	if (m->unknown_frees)
		status__info("  %" PRIu64 " frees of memory allocated before the probes were in",
			     m->unknown_frees);
	memcpy(devices, m->devices, m->nr_devices * sizeof(*devices));
	qsort(devices, m->nr_devices, sizeof(*devices), compare_devices);
	for (size_t i = 0; i < m->nr_devices; i++) {
		const struct device_memory *d = &devices[i];
		char name[TASK_COMM_LEN + 128], end[32], before[64] = "";

		device_name(m, d, name, sizeof(name));
		gpu_memory__format_bytes(bytes, sizeof(bytes), d->peak);
		gpu_memory__format_bytes(end, sizeof(end), d->end_live);
		if (d->before) {
			gpu_memory__format_bytes(total, sizeof(total), d->before);
			snprintf(before, sizeof(before), " (%s before attach)", total);
		}
		status__info("  %s: peak %s at %.3f s%s; %s still allocated at the end", name,
			     bytes, d->peak_time_ns / 1e9, before, end);
		nr = group_rows(m, select_peak, d, &rows);
		for (size_t k = 0; k < nr && k < SUMMARY_TOP_STACKS; k++) {
			const struct memory_event *e = &m->events[rows[k].first];

			gpu_memory__format_bytes(bytes, sizeof(bytes), rows[k].bytes);
			library_probe__describe_stack(m->frames_profile,
						      m->stacks.frames + e->frames, e->nr_frames,
						      stack, sizeof(stack));
			status__info("    %10s %5.1f%%  %" PRIu64 " x %s at %s", bytes,
				     d->peak ? 100.0 * rows[k].bytes / d->peak : 0.0, rows[k].count,
				     gpu_memory_calls[rows[k].call].name, stack);
		}
		free(rows);
	}
	nr = group_rows(m, select_failed, NULL, &rows);
	if (nr)
		status__info("  failed allocations:");
	for (size_t k = 0; k < nr && k < SUMMARY_TOP_STACKS; k++) {
		const struct memory_event *e = &m->events[rows[k].first];
		char where[TASK_COMM_LEN + 128] = "";

		gpu_memory__format_bytes(bytes, sizeof(bytes), e->size);
		library_probe__describe_stack(m->frames_profile, m->stacks.frames + e->frames,
					      e->nr_frames, stack, sizeof(stack));
		if (m->nr_processes > 1)
			snprintf(where, sizeof(where), " in %s (PID %d)", process_name(m, e),
				 e->pid);
		status__info("    %" PRIu64 " x %s of %s: %s (%" PRId64 ") at %s%s", rows[k].count,
			     gpu_memory_calls[e->call].name, bytes, gpu_memory__error_name(e),
			     e->result, stack, where);
	}
	free(rows);
}
