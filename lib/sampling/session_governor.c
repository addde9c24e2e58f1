// SPDX-License-Identifier: GPL-2.0
/* The session's side of --max-overhead: the targets' CPU time fed to the
 * governor each window, its decisions applied to the sampling and said on
 * stderr.  The measure and the decision are governor.c's. */
#include <linux/types.h>
#include <unistd.h>

#include "base/procfs.h"
#include "status.h"
#include "sampling/governor.h"
#include "sampling/sampling_clock.h"
#include "sampling/session_private.h"

/* The target's CPU time since the last look, for the governor: each
 * process's own, so that one that exits takes nothing back. */
static void add_target_time(struct session *s)
{
	static long ticks_per_s;

	if (!ticks_per_s)
		ticks_per_s = sysconf(_SC_CLK_TCK) > 0 ? sysconf(_SC_CLK_TCK) : 100;
	for (size_t i = 0; i < s->processes.nr; i++) {
		struct tracked_process *proc = &s->processes.processes[i];
		struct procfs_stat st;
		uint64_t ticks;

		if (procfs__stat(proc->pid, 0, &st))
			continue;
		ticks = st.utime + st.stime;
		if (ticks > proc->cpu_ticks && proc->cpu_ticks)
			governor__add_target_time(&s->governor, (ticks - proc->cpu_ticks) *
								    (1000000000ULL / ticks_per_s));
		proc->cpu_ticks = ticks;
	}
}

int session__govern(struct session *s, uint64_t now)
{
	unsigned int was = s->governor.divisor, divisor;
	int err;

	if (s->governor.budget <= 0 || s->stopped)
		return 0;
	add_target_time(s);
	divisor = governor__tick(&s->governor, now);
	if (divisor == was)
		return 0;
	err = sampling_clock__set_divisor(&s->clock, divisor);
	if (err)
		return err;
	err = governor__changed(&s->governor, now, divisor);
	if (err)
		return err;
	status__info("overhead %.1f%% of the target's CPU, budget %.1f%% (--max-overhead): "
		     "sampling at %.0f Hz from %.1f s (asked %u Hz; each sample weighs %u)",
		     100 * s->governor.last_share, 100 * s->governor.budget,
		     (double)s->options.frequency / divisor,
		     now > s->start_ns ? (now - s->start_ns) / 1e9 : 0.0, s->options.frequency,
		     divisor);
	return 0;
}

void session__report_governor(const struct session *s)
{
	const struct governor *g = &s->governor;

	if (g->budget <= 0)
		return;
	status__debug("overhead governor: %llu seconds measured, llmprof cost %.2f%% of "
		      "the target's CPU on average, %.2f%% at most (budget %.2f%%); %zu "
		      "changes of rate",
		      (unsigned long long)g->windows,
		      g->windows ? 100 * g->sum_share / g->windows : 0.0, 100 * g->worst_share,
		      100 * g->budget, g->nr_steps - 1);
}
