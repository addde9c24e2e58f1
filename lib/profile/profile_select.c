// SPDX-License-Identifier: GPL-2.0
/*
 * One process out of a profile of several, for -o patterns that write a
 * profile per process (%p) or rank (%r): its threads' samples on their own
 * stacks and frames, and the GPU work launched from its stacks.
 */
#include <errno.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "profile/profile.h"

int64_t profile__copy_stack(const struct profile *from, struct profile *to, uint32_t stack,
			    int64_t *frame_map, uint32_t *scratch)
{
	const struct stack *s = &from->stacks[stack];

	for (uint32_t k = 0; k < s->depth; k++) {
		uint32_t f = s->frames[k];

		if (frame_map[f] < 0) {
			const struct frame *fr = &from->frames[f];

			frame_map[f] =
			    profile__intern_frame(to, fr->name, fr->file, fr->line, fr->kind);
			if (frame_map[f] < 0)
				return frame_map[f];
		}
		scratch[k] = frame_map[f];
	}
	return profile__intern_stack(to, scratch, s->depth);
}

static bool listed(uint32_t pid, const uint32_t *pids, size_t nr)
{
	for (size_t i = 0; i < nr; i++)
		if (pids[i] == pid)
			return true;
	return false;
}

int profile__select_processes(const struct profile *p, const uint32_t *pids, size_t nr_pids,
			      struct profile **out)
{
	struct profile *q = profile__new();
	int64_t *frame_map = malloc((p->nr_frames ? p->nr_frames : 1) * sizeof(*frame_map));
	int64_t *stack_map = malloc((p->nr_stacks ? p->nr_stacks : 1) * sizeof(*stack_map));
	int64_t *thread_map = malloc((p->nr_threads ? p->nr_threads : 1) * sizeof(*thread_map));
	bool *root_mine = calloc(p->nr_frames ? p->nr_frames : 1, sizeof(*root_mine));
	uint32_t *scratch = NULL;
	size_t max_depth = 1;
	int err = -ENOMEM;

	for (size_t i = 0; i < p->nr_stacks; i++)
		if (p->stacks[i].depth > max_depth)
			max_depth = p->stacks[i].depth;
	scratch = malloc(max_depth * sizeof(*scratch));
	if (!q || !frame_map || !stack_map || !thread_map || !scratch || !root_mine)
		goto fail;
	if (p->name && !(q->name = strdup(p->name)))
		goto fail;
	q->unit = p->unit;
	q->start_ns = p->start_ns;
	q->duration_ns = p->duration_ns;
	q->frequency = p->frequency;
	q->processes = nr_pids;
	for (size_t i = 0; i < p->nr_frames; i++)
		frame_map[i] = -1;
	for (size_t i = 0; i < p->nr_stacks; i++)
		stack_map[i] = -1;
	for (size_t i = 0; i < p->nr_threads; i++) {
		const struct thread *t = &p->threads[i];

		thread_map[i] = -1;
		if (!listed(t->pid, pids, nr_pids))
			continue;
		thread_map[i] = profile__add_thread(q, t->pid, t->tid, t->name);
		if (thread_map[i] < 0) {
			err = thread_map[i];
			goto fail;
		}
	}
	for (size_t i = 0; i < p->nr_samples; i++) {
		const struct sample *s = &p->samples[i];

		if (thread_map[s->thread] < 0)
			continue;
		if (stack_map[s->stack] < 0) {
			stack_map[s->stack] =
			    profile__copy_stack(p, q, s->stack, frame_map, scratch);
			if (stack_map[s->stack] < 0) {
				err = stack_map[s->stack];
				goto fail;
			}
		}
		err = profile__add_sample(q, thread_map[s->thread], stack_map[s->stack], s->time_ns,
					  s->weight);
		if (err)
			goto fail;
		q->samples_taken++;
	}
	/* GPU work goes with the process whose stack launched it: the one
	 * whose stacks share its root frame. */
	for (size_t k = 0; k < p->nr_stacks; k++)
		if (stack_map[k] >= 0 && p->stacks[k].depth)
			root_mine[p->stacks[k].frames[0]] = true;
	for (size_t i = 0; i < p->nr_gpu; i++) {
		struct gpu_activity g = p->gpu[i];

		if (g.stack == UINT32_MAX || !p->stacks[g.stack].depth ||
		    !root_mine[p->stacks[g.stack].frames[0]])
			continue;
		if (stack_map[g.stack] < 0) {
			stack_map[g.stack] = profile__copy_stack(p, q, g.stack, frame_map, scratch);
			if (stack_map[g.stack] < 0) {
				err = stack_map[g.stack];
				goto fail;
			}
			profile__add_weight(q, stack_map[g.stack], p->stacks[g.stack].weight);
		}
		g.stack = stack_map[g.stack];
		if (frame_map[g.frame] < 0) {
			const struct frame *fr = &p->frames[g.frame];

			frame_map[g.frame] =
			    profile__intern_frame(q, fr->name, fr->file, fr->line, fr->kind);
			if (frame_map[g.frame] < 0) {
				err = frame_map[g.frame];
				goto fail;
			}
		}
		g.frame = frame_map[g.frame];
		err = profile__add_gpu(q, &g);
		if (err)
			goto fail;
	}
	profile__sort_samples(q);
	free(frame_map);
	free(stack_map);
	free(thread_map);
	free(scratch);
	free(root_mine);
	*out = q;
	return 0;
fail:
	profile__free(q);
	free(frame_map);
	free(stack_map);
	free(thread_map);
	free(scratch);
	free(root_mine);
	return err;
}
