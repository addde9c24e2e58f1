// SPDX-License-Identifier: GPL-2.0
/*
 * Several values per stack (see profile.h): the value types, the stacks'
 * further values beside their weight, and the profile of one value that
 * single-valued writers and views take.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "array.h"
#include "profile/profile.h"

size_t profile__nr_values(const struct profile *p)
{
	return p->nr_value_types > 1 ? p->nr_value_types : 1;
}

struct profile_value_type profile__value_type(const struct profile *p, size_t index)
{
	if (p->nr_value_types && index < p->nr_value_types)
		return p->value_types[index];
	switch (p->unit) {
	case UNIT_BYTES:
		return (struct profile_value_type){(char *)"space", (char *)"bytes", p->unit};
	case UNIT_MICROSECONDS:
	case UNIT_NANOSECONDS:
		return (struct profile_value_type){(char *)"cpu", (char *)"nanoseconds", p->unit};
	default:
		return (struct profile_value_type){(char *)"samples", (char *)"count", p->unit};
	}
}

int profile__value_index(const struct profile *p, const char *name)
{
	for (size_t i = 0; i < profile__nr_values(p); i++)
		if (!strcmp(profile__value_type(p, i).name, name))
			return i;
	return -ENOENT;
}

static int set_type(struct profile_value_type *t, const char *name, const char *unit_name,
		    enum profile_unit unit)
{
	char *n = strdup(name), *u = strdup(unit_name);

	if (!n || !u) {
		free(n);
		free(u);
		return -ENOMEM;
	}
	free(t->name);
	free(t->unit_name);
	*t = (struct profile_value_type){n, u, unit};
	return 0;
}

const char *profile__weight_name(const struct profile *p, bool gpu)
{
	if (p->unit == UNIT_BYTES)
		return profile__value_type(p, 0).name;
	if (p->unit == UNIT_SAMPLES)
		return "samples";
	return gpu ? "wall" : "cpu";
}

int profile__name_weight(struct profile *p, const char *name, const char *unit_name)
{
	if (!p->nr_value_types) {
		p->value_types = calloc(1, sizeof(*p->value_types));
		if (!p->value_types)
			return -ENOMEM;
		p->nr_value_types = 1;
	}
	return set_type(&p->value_types[0], name, unit_name, p->unit);
}

int profile__add_value_type(struct profile *p, const char *name, const char *unit_name,
			    enum profile_unit unit)
{
	size_t old_extra, new_extra;
	struct profile_value_type *types;
	uint64_t *values = NULL;
	int err;

	if (profile__value_index(p, name) >= 0)
		return -EEXIST;
	if (!p->nr_value_types) {
		struct profile_value_type implied = profile__value_type(p, 0);

		err = profile__name_weight(p, implied.name, implied.unit_name);
		if (err)
			return err;
	}
	old_extra = p->nr_value_types - 1;
	new_extra = old_extra + 1;
	types = realloc(p->value_types, (p->nr_value_types + 1) * sizeof(*types));
	if (!types)
		return -ENOMEM;
	p->value_types = types;
	types[p->nr_value_types] = (struct profile_value_type){0};
	/* The rows widen by one: every stack holds 0 of the new value. */
	if (p->nr_extra_rows) {
		values = calloc(p->nr_extra_rows * new_extra, sizeof(*values));
		if (!values)
			return -ENOMEM;
		for (size_t r = 0; r < p->nr_extra_rows; r++)
			memcpy(values + r * new_extra, p->extra_values + r * old_extra,
			       old_extra * sizeof(*values));
	}
	err = set_type(&types[p->nr_value_types], name, unit_name, unit);
	if (err) {
		free(values);
		return err;
	}
	free(p->extra_values);
	p->extra_values = values;
	p->cap_extra_values = p->nr_extra_rows * new_extra;
	return p->nr_value_types++;
}

int profile__value_names(const struct profile *p, char *buf, size_t size)
{
	size_t used = 0;

	if (size)
		buf[0] = '\0';
	for (size_t i = 0; i < profile__nr_values(p) && used < size; i++)
		used += snprintf(buf + used, size - used, "%s%s", i ? ", " : "",
				 profile__value_type(p, i).name);
	return used;
}

int profile__value_map(const struct profile *into, const struct profile *from, size_t *map)
{
	size_t n = profile__nr_values(from);

	if (n != profile__nr_values(into))
		return -ENOENT;
	for (size_t i = 0; i < n; i++) {
		struct profile_value_type t = profile__value_type(from, i);
		int index = profile__value_index(into, t.name);

		if (index < 0 || strcmp(profile__value_type(into, index).unit_name, t.unit_name))
			return -ENOENT;
		map[i] = index;
	}
	return 0;
}

int profile__copy_value_types(struct profile *into, const struct profile *from)
{
	int err;

	if (profile__nr_values(from) < 2)
		return 0;
	for (size_t i = 0; i < profile__nr_values(from); i++) {
		struct profile_value_type t = profile__value_type(from, i);

		err = i ? profile__add_value_type(into, t.name, t.unit_name, t.unit)
			: profile__name_weight(into, t.name, t.unit_name);
		if (err < 0)
			return err;
	}
	return 0;
}

uint64_t profile__stack_value(const struct profile *p, uint32_t stack, size_t index)
{
	if (!index)
		return p->stacks[stack].weight;
	if (index >= p->nr_value_types || stack >= p->nr_extra_rows)
		return 0;
	return p->extra_values[stack * (p->nr_value_types - 1) + index - 1];
}

int profile__add_stack_value(struct profile *p, uint32_t stack, size_t index, uint64_t value)
{
	size_t extra = p->nr_value_types - 1;

	if (!index) {
		p->stacks[stack].weight += value;
		return 0;
	}
	if (index >= p->nr_value_types)
		return -EINVAL;
	if (stack >= p->nr_extra_rows) {
		if (array__grow((void **)&p->extra_values, &p->cap_extra_values,
				(stack + 1) * extra, sizeof(*p->extra_values)))
			return -ENOMEM;
		memset(p->extra_values + p->nr_extra_rows * extra, 0,
		       (stack + 1 - p->nr_extra_rows) * extra * sizeof(*p->extra_values));
		p->nr_extra_rows = stack + 1;
	}
	p->extra_values[stack * extra + index - 1] += value;
	return 0;
}

static uint32_t max_depth(const struct profile *p)
{
	uint32_t depth = 1;

	for (size_t i = 0; i < p->nr_stacks; i++)
		if (p->stacks[i].depth > depth)
			depth = p->stacks[i].depth;
	return depth;
}

int profile__add_value_profile(struct profile *p, const struct profile *from, const char *name,
			       const char *unit_name)
{
	int64_t *frame_map = malloc((from->nr_frames ? from->nr_frames : 1) * sizeof(*frame_map));
	uint32_t *scratch = malloc(max_depth(from) * sizeof(*scratch));
	int index = -ENOMEM, err;

	if (!frame_map || !scratch)
		goto cleanup;
	for (size_t i = 0; i < from->nr_frames; i++)
		frame_map[i] = -1;
	index = profile__add_value_type(p, name, unit_name, from->unit);
	for (size_t i = 0; index >= 0 && i < from->nr_stacks; i++) {
		int64_t id;

		if (!from->stacks[i].weight)
			continue;
		id = profile__copy_stack(from, p, i, frame_map, scratch);
		err = id < 0 ? id : profile__add_stack_value(p, id, index, from->stacks[i].weight);
		if (err)
			index = err;
	}
cleanup:
	free(frame_map);
	free(scratch);
	return index;
}

static int copy_facts(const struct profile *p, struct profile *q)
{
	q->memory = p->memory;
	q->memory.sites = NULL;
	q->memory.nr_sites = q->memory.cap_sites = 0;
	for (size_t i = 0; i < p->memory.nr_sites; i++)
		if (profile__add_memory_site(q, &p->memory.sites[i]))
			return -ENOMEM;
	q->nccl = p->nccl;
	q->nccl.rows = NULL;
	if (p->nccl.nr_rows) {
		q->nccl.rows = malloc(p->nccl.nr_rows * sizeof(*q->nccl.rows));
		if (!q->nccl.rows) {
			q->nccl.nr_rows = 0;
			return -ENOMEM;
		}
		memcpy(q->nccl.rows, p->nccl.rows, p->nccl.nr_rows * sizeof(*q->nccl.rows));
	}
	return 0;
}

static int copy_metadata(const struct profile *p, struct profile *q, size_t index)
{
	q->unit = profile__value_type(p, index).unit;
	if ((p->name && !(q->name = strdup(p->name))) ||
	    (p->exporter && !(q->exporter = strdup(p->exporter))))
		return -ENOMEM;
	q->python_pyspy_form = p->python_pyspy_form;
	q->start_ns = p->start_ns;
	q->duration_ns = p->duration_ns;
	q->processes = p->processes;
	q->children_followed = p->children_followed;
	q->children_lost = p->children_lost;
	if (index)
		return copy_facts(p, q);
	/* What the timeline counted belongs to the weight. */
	q->frequency = p->frequency;
	q->random_intervals = p->random_intervals;
	q->samples_taken = p->samples_taken;
	q->samples_lost = p->samples_lost;
	q->stack_errors = p->stack_errors;
	q->stack_limit = p->stack_limit;
	q->off_cpu_intervals = p->off_cpu_intervals;
	q->off_cpu_short = p->off_cpu_short;
	q->off_cpu_short_ns = p->off_cpu_short_ns;
	q->off_cpu_lost = p->off_cpu_lost;
	q->gpu_records_dropped = p->gpu_records_dropped;
	q->gpu_kernels_unnamed = p->gpu_kernels_unnamed;
	return copy_facts(p, q);
}

/* The weight's timeline and GPU activity, on q's stacks and frames. */
static int copy_timeline(const struct profile *p, struct profile *q, const int64_t *stack_map,
			 int64_t *frame_map)
{
	int64_t *thread_map = malloc((p->nr_threads ? p->nr_threads : 1) * sizeof(*thread_map));

	if (!thread_map)
		return -ENOMEM;
	for (size_t i = 0; i < p->nr_threads; i++) {
		const struct thread *t = &p->threads[i];

		thread_map[i] = profile__add_thread(q, t->pid, t->tid, t->name);
		if (thread_map[i] < 0) {
			free(thread_map);
			return -ENOMEM;
		}
	}
	for (size_t i = 0; i < p->nr_samples; i++) {
		struct sample s = p->samples[i];

		if (s.stack >= p->nr_stacks || stack_map[s.stack] < 0 || s.thread >= p->nr_threads)
			continue;
		s.stack = stack_map[s.stack];
		s.thread = thread_map[s.thread];
		if (array__grow((void **)&q->samples, &q->cap_samples, q->nr_samples + 1,
				sizeof(*q->samples))) {
			free(thread_map);
			return -ENOMEM;
		}
		q->samples[q->nr_samples++] = s;
	}
	free(thread_map);
	for (size_t i = 0; i < p->nr_gpu; i++) {
		struct gpu_activity g = p->gpu[i];
		int err;

		if (g.stack != UINT32_MAX)
			g.stack = g.stack < p->nr_stacks && stack_map[g.stack] >= 0
				      ? (uint32_t)stack_map[g.stack]
				      : UINT32_MAX;
		if (frame_map[g.frame] < 0) {
			const struct frame *f = &p->frames[g.frame];

			frame_map[g.frame] =
			    profile__intern_frame(q, f->name, f->file, f->line, f->kind);
			if (frame_map[g.frame] < 0)
				return frame_map[g.frame];
		}
		g.frame = frame_map[g.frame];
		err = profile__add_gpu(q, &g);
		if (err)
			return err;
	}
	return 0;
}

int profile__select_value(const struct profile *p, size_t index, struct profile **out)
{
	int64_t *frame_map = malloc((p->nr_frames ? p->nr_frames : 1) * sizeof(*frame_map));
	int64_t *stack_map = malloc((p->nr_stacks ? p->nr_stacks : 1) * sizeof(*stack_map));
	uint32_t *scratch = malloc(max_depth(p) * sizeof(*scratch));
	struct profile *q = profile__new();
	int err = -ENOMEM;

	if (index >= profile__nr_values(p)) {
		err = -EINVAL;
		goto fail;
	}
	if (!frame_map || !stack_map || !scratch || !q)
		goto fail;
	err = copy_metadata(p, q, index);
	if (err)
		goto fail;
	for (size_t i = 0; i < p->nr_frames; i++)
		frame_map[i] = -1;
	for (size_t i = 0; i < p->nr_stacks; i++) {
		uint64_t value = profile__stack_value(p, i, index);

		stack_map[i] = -1;
		if (!value)
			continue;
		stack_map[i] = profile__copy_stack(p, q, i, frame_map, scratch);
		if (stack_map[i] < 0) {
			err = stack_map[i];
			goto fail;
		}
		profile__add_weight(q, stack_map[i], value);
	}
	if (!index) {
		err = copy_timeline(p, q, stack_map, frame_map);
		if (err)
			goto fail;
	}
	free(frame_map);
	free(stack_map);
	free(scratch);
	*out = q;
	return 0;
fail:
	free(frame_map);
	free(stack_map);
	free(scratch);
	profile__free(q);
	return err;
}
