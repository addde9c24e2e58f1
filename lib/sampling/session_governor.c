// SPDX-License-Identifier: GPL-2.0
/* The session's side of --max-overhead: the targets' CPU time fed to the
 * governor each window, its decisions applied to the sampling and said on
 * stderr.  The measure and the decision are governor.c's. */
#include <bpf/libbpf.h>
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "base/procfs.h"
#include "offcpu.h"
#include "sampler.h"
#include "status.h"
#include "sampling/governor.h"
#include "sampling/sampling_clock.h"
#include "sampling/session_private.h"

#include "sampler.skel.h"

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

/* Off-CPU waits and GPU launches cost a stack capture each, which no
 * clock slows: while the CPU clock is slowed by divisor, only the stacks
 * of 1 wait in divisor are taken, and launch stacks are divisor times
 * rarer. */
static int thin_stacks(struct session *s, unsigned int divisor)
{
	struct governor_settings settings = {.divisor = divisor};
	uint32_t zero = 0;

	if (bpf_map__update_elem(s->skel->maps.governor_settings, &zero, sizeof(zero), &settings,
				 sizeof(settings), BPF_ANY))
		return -errno;
	return 0;
}

int session__govern(struct session *s, uint64_t now)
{
	unsigned int was = s->governor.divisor, divisor;
	char waits[128];
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
	err = thin_stacks(s, divisor);
	if (err)
		return err;
	err = governor__changed(&s->governor, now, divisor);
	if (err)
		return err;
	if (s->options.mode == SESSION_MODE_CPU)
		waits[0] = '\0';
	else if (divisor > 1)
		snprintf(waits, sizeof(waits), "; the stacks of 1 off-CPU wait in %u", divisor);
	else
		snprintf(waits, sizeof(waits), "; the stacks of every off-CPU wait");
	if (divisor > 1 && session__counter(s, COUNTER_LAUNCH_STACKS) +
			       session__counter(s, COUNTER_LAUNCH_SKIPPED))
		snprintf(waits + strlen(waits), sizeof(waits) - strlen(waits),
			 "; GPU launch stacks %u times rarer", divisor);
	if (s->options.mode == SESSION_MODE_OFF_CPU) {
		status__info("overhead %.1f%% of the target's CPU, budget %.1f%% (--max-overhead): "
			     "%s from %.1f s",
			     100 * s->governor.last_share, 100 * s->governor.budget, waits + 2,
			     now > s->start_ns ? (now - s->start_ns) / 1e9 : 0.0);
		return 0;
	}
	status__info("overhead %.1f%% of the target's CPU, budget %.1f%% (--max-overhead): "
		     "sampling at %.0f Hz from %.1f s (asked %u Hz; each sample weighs %u%s)",
		     100 * s->governor.last_share, 100 * s->governor.budget,
		     (double)s->options.frequency / divisor,
		     now > s->start_ns ? (now - s->start_ns) / 1e9 : 0.0, s->options.frequency,
		     divisor, waits);
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

void session__scale_thinned_waits(struct session *s, const uint64_t *counters)
{
	uint64_t kept_ns = 0, by_thread_ns = 0, scaled_ns = 0;
	uint64_t all_ns = counters[COUNTER_THINNED_WAIT_NS];
	double rest;
	size_t kept = 0;

	if (counters[COUNTER_OFFCPU_STASHED] || counters[COUNTER_OFFCPU_DUE])
		status__debug(
		    "off-CPU stacks: %llu taken as threads blocked (%llu preempted or outside a "
		    "syscall), %llu as threads left their syscall, %llu waits drawn left unseen",
		    (unsigned long long)counters[COUNTER_OFFCPU_STASHED],
		    (unsigned long long)counters[COUNTER_OFFCPU_PREEMPTED],
		    (unsigned long long)counters[COUNTER_OFFCPU_DUE],
		    (unsigned long long)counters[COUNTER_OFFCPU_UNSEEN]);

	/* Every wait drawn from (wall mode's draw in proportion to length,
	 * the governor's 1 in N), not only the kept ones, was timed, by
	 * thread: scaling each thread's kept waits' weights to its total
	 * keeps it exact, where the weights alone would keep it only on
	 * average (a long wait kept or not moves it by its weight). */
	for (size_t i = 0; i < s->nr_threads; i++)
		by_thread_ns += s->threads[i].kept_ns ? s->threads[i].thinned_ns : 0;
	for (size_t i = 0; i < s->nr_samples; i++) {
		struct raw_sample *sample = &s->samples[i];
		const struct raw_thread *t = &s->threads[sample->thread];

		if (!sample->thinned)
			continue;
		kept_ns += sample->off_cpu_ns;
		kept++;
		sample->off_cpu_ns =
		    llround(sample->off_cpu_ns * ((double)t->thinned_ns / t->kept_ns)) | 1;
		scaled_ns += sample->off_cpu_ns;
	}
	if (!scaled_ns || !all_ns)
		return;
	/* The waits after a thread's last kept one: shared by all. */
	rest = all_ns > by_thread_ns ? (double)(all_ns - by_thread_ns) / scaled_ns : 0;
	if (rest > 0)
		for (size_t i = 0; i < s->nr_samples; i++)
			if (s->samples[i].thinned)
				s->samples[i].off_cpu_ns =
				    llround(s->samples[i].off_cpu_ns * (1 + rest)) | 1;
	status__debug("off-CPU: %llu waits (%.3f s) drawn from, the stacks of %zu (%.3f s) kept, "
		      "scaled to stand for them all, thread by thread "
		      "(%.3f s after the threads' last kept waits shared by all)",
		      (unsigned long long)counters[COUNTER_THINNED_WAITS], all_ns / 1e9, kept,
		      kept_ns / 1e9, all_ns > by_thread_ns ? (all_ns - by_thread_ns) / 1e9 : 0.0);
}
