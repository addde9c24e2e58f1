// SPDX-License-Identifier: GPL-2.0
/*
 * The communication rule: how long the ranks wait for each other in
 * collectives on the host (c10d work waits: gloo on the CPU, NCCL's host
 * side), over the training span that the straggler test measures, where
 * they call them, and which rank they wait for.
 */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "findings/analysis.h"
#include "profile/process_report.h"

#define COMMUNICATION_MIN_SHARE 0.10
#define EVIDENCE_TOP 3

/* "gloo" or "NCCL", by the process group that the ranks' stacks run. */
static const char *backend_of(const struct profile *p)
{
	bool gloo = false, nccl = false;

	for (size_t f = 0; f < p->nr_frames; f++) {
		const char *name = p->frames[f].name;

		gloo |= !strncmp(name, "c10d::ProcessGroupGloo", 22) || !strncmp(name, "gloo::", 6);
		nccl |= !strncmp(name, "c10d::ProcessGroupNCCL", 22) || !strncmp(name, "nccl", 4);
	}
	return gloo && nccl ? "gloo and NCCL" : gloo ? "gloo" : nccl ? "NCCL" : "c10d";
}

/* The job's own call of a collective: the innermost Python frame outside
 * torch (the loop's all_reduce, a DDP communication hook; train where
 * DDP's reducer runs it under backward()). */
static const char *collective_caller(const struct profile *p, uint32_t stack, char *buf,
				     size_t size)
{
	const struct stack *s = &p->stacks[stack];

	for (uint32_t k = s->depth; k-- > 0;) {
		const struct frame *f = &p->frames[s->frames[k]];

		if (f->kind == FRAME_PYTHON && f->file && !strstr(f->file, "torch/"))
			return frame__text(f, buf, size);
	}
	return analysis__leaf_name(p, stack);
}

int communication_waits(struct analysis *a, struct rule_outcome *o)
{
	const struct profile *p = a->profile;
	double spw = a->seconds_per_weight;
	struct rank_load *rows = NULL;
	size_t nr = 0, cap = 0, ranks = 0;
	uint64_t waits = 0, span = 0, called = 0;
	struct tally callers = {0};
	struct straggler found;
	struct finding *f;
	char caller[512];
	double share;
	int err;

	if (!a->has_off_cpu)
		return outcome__note(o, "%s", "needs off-CPU data (--off-cpu or --mode wall)");
	err = rank_loads__read(p, &rows, &nr, &cap);
	if (err)
		goto cleanup;
	for (size_t i = 0; i < nr; i++) {
		if (!rows[i].rank)
			continue;
		ranks++;
		waits += rows[i].waits;
		span += rows[i].span;
	}
	if (ranks < 2 || !span) {
		err = ranks < 2
			  ? outcome__note(o, "needs two or more ranks (the profile has %zu)", ranks)
			  : outcome__note(o, "%s", "needs weights in time");
		goto cleanup;
	}
	o->ran = true;
	share = (double)waits / span;
	err = outcome__note(o,
			    "the ranks wait for each other in collectives %.1f%% of their "
			    "training time (fires at %.0f%%)",
			    100 * share, 100 * COMMUNICATION_MIN_SHARE);
	if (err || share < COMMUNICATION_MIN_SHARE)
		goto cleanup;
	err = rank_loads__straggler(rows, nr, &found);
	for (uint32_t i = 0; i < p->nr_stacks && !err; i++) {
		if (a->is_gpu_stack[i] || !p->stacks[i].weight ||
		    !profile__stack_waits_for_collective(p, i))
			continue;
		err = tally__add(&callers, collective_caller(p, i, caller, sizeof(caller)),
				 p->stacks[i].weight);
		called += p->stacks[i].weight;
	}
	if (err)
		goto cleanup;
	tally__sort(&callers);
	f = analysis__add_finding(a, o->rule, share, "the ranks' training time",
				  "Communication: the ranks wait for each other in %s collectives "
				  "%.1f%% of their training time",
				  backend_of(p), 100 * share);
	err = -ENOMEM;
	if (!f || (callers.nr && finding__locate(f, callers.entries[0].key)))
		goto cleanup;
	for (size_t i = 0; i < nr; i++)
		if (rows[i].rank && spw &&
		    finding__evidence(f, "%s waits in collectives %.2f s of %.2f s", rows[i].label,
				      spw * rows[i].waits, spw * rows[i].span))
			goto cleanup;
	if (callers.nr && (finding__evidence(f, "where the job calls them (share of the waits):") ||
			   finding__evidence_from_tally(f, &callers, called, EVIDENCE_TOP)))
		goto cleanup;
	if (found.index >= 0 && spw)
		err = finding__evidence(f,
					"they wait for %s: the others wait %.2f s more than it "
					"does (the straggler finding)",
					rows[found.index].label, spw * found.extra);
	else if (found.busiest >= 0 && found.by_waits && isfinite(found.steadiness))
		err = finding__evidence(f,
					"no rank makes the others wait steadily: they wait for "
					"each other by turns (the lead's t %.1f)",
					found.steadiness);
	else
		err = 0;
	if (err)
		goto cleanup;
	err = finding__suggest(
	    f, found.index >= 0
		   ? "make the straggler's steps as short as the others' (see the straggler "
		     "finding); the others wait for it in every collective"
		   : "the ranks wait for the slower one of each step: even out their steps "
		     "(data wait, shard sizes), and call fewer collectives per step (log a "
		     "loss all-reduced every N steps, DDP's no_sync() over gradient "
		     "accumulation)");
cleanup:
	tally__free(&callers);
	free(rows);
	return err;
}
