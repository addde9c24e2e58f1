// SPDX-License-Identifier: GPL-2.0
/* The overhead governor's measure and decision; see governor.h. */
#include <bpf/bpf.h>
#include <errno.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

#include "array.h"
#include "sampling/bpf_cost.h"
#include "sampling/governor.h"

/* A window in which the target ran less than this is not judged: the
 * share of an idle target's CPU says nothing of the cost to its work. */
#define MIN_TARGET_NS (GOVERNOR_WINDOW_NS / 20)

static uint64_t process_cpu_ns(void)
{
	struct timespec ts;

	if (clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts))
		return 0;
	return ts.tv_sec * 1000000000ULL + ts.tv_nsec;
}

int governor__init(struct governor *g, double budget)
{
	*g = (struct governor){.budget = budget, .stats_fd = -1, .divisor = 1};
	if (budget <= 0)
		return 0;
	/* Off on a kernel without it (before 5.8): the BPF part then
	 * counts as nothing, and the governor holds llmprof's own CPU. */
	g->stats_fd = bpf_enable_stats(BPF_STATS_RUN_TIME);
	return governor__changed(g, 0, 1);
}

void governor__free(struct governor *g)
{
	if (g->stats_fd >= 0)
		close(g->stats_fd);
	g->stats_fd = -1;
	free(g->steps);
	g->steps = NULL;
	g->nr_steps = g->cap_steps = 0;
}

unsigned int governor__next_divisor(unsigned int divisor, double share, double budget,
				    unsigned int *calm)
{
	unsigned int next = divisor;

	if (share > budget) {
		/* The cost goes with the rate: aim at 80 % of the budget. */
		double needed = divisor * share / (0.8 * budget);

		*calm = 0;
		while (next < needed && next < GOVERNOR_MAX_DIVISOR)
			next *= 2;
		return next;
	}
	if (divisor > 1 && share < budget / 3) {
		if (++*calm >= GOVERNOR_CALM_WINDOWS) {
			*calm = 0;
			return divisor / 2;
		}
		return divisor;
	}
	*calm = 0;
	return divisor;
}

void governor__add_target_time(struct governor *g, uint64_t ns)
{
	g->target_ns += ns;
}

unsigned int governor__tick(struct governor *g, uint64_t now)
{
	uint64_t bpf, self, cost;
	double share;

	if (g->budget <= 0)
		return g->divisor;
	/* Read the costs only when a window ends, not at every drain. */
	if (g->started && now - g->window_ns < GOVERNOR_WINDOW_NS)
		return g->divisor;
	bpf = bpf_cost__run_time_ns();
	self = process_cpu_ns();
	/* The first window after the start holds the start's one-off work
	 * (reading the target's files, the first symbols): not judged. */
	if (!g->started || g->target_ns < MIN_TARGET_NS || !g->warm) {
		g->warm = g->started;
		g->started = true;
		g->window_ns = now;
		g->bpf_ns = bpf;
		g->self_ns = self;
		g->target_ns = 0;
		return g->divisor;
	}
	cost = (bpf - g->bpf_ns) + (self - g->self_ns);
	share = (double)cost / g->target_ns;
	g->windows++;
	g->last_share = share;
	g->sum_share += share;
	if (share > g->worst_share)
		g->worst_share = share;
	g->window_ns = now;
	g->bpf_ns = bpf;
	g->self_ns = self;
	g->target_ns = 0;
	return governor__next_divisor(g->divisor, share, g->budget, &g->calm);
}

int governor__changed(struct governor *g, uint64_t now, unsigned int divisor)
{
	int err =
	    array__grow((void **)&g->steps, &g->cap_steps, g->nr_steps + 1, sizeof(*g->steps));

	if (err)
		return err;
	g->steps[g->nr_steps++] = (struct governor_step){.time_ns = now, .divisor = divisor};
	g->divisor = divisor;
	return 0;
}

unsigned int governor__divisor_at(const struct governor *g, uint64_t time_ns)
{
	size_t lo = 0, hi = g->nr_steps;

	/* The last step at or before time_ns. */
	while (hi - lo > 1) {
		size_t mid = lo + (hi - lo) / 2;

		if (g->steps[mid].time_ns <= time_ns)
			lo = mid;
		else
			hi = mid;
	}
	return g->nr_steps ? g->steps[lo].divisor : 1;
}
