// SPDX-License-Identifier: GPL-2.0
/*
 * The load gate (see session.h): a process stopped at a library load goes
 * on once every family that stops it has probed the new libraries and
 * their unwind rules are ready (within its LOAD_GATE_UNWIND_BUDGET_MS), or
 * after LOAD_GATE_TIMEOUT_MS.
 */
#include <signal.h>

#include <linux/types.h>

#include "sampling/session_private.h"
#include "sampling/unwind_table.h"

void session__add_load_stopper(struct session *s)
{
	s->load_stoppers++;
}

/* The process's entry, for its unwind wait; NULL where it has none. */
static struct tracked_process *waiting_process(struct session *s, pid_t pid)
{
	int64_t i = process_table__find(&s->processes, pid);

	return i < 0 ? NULL : &s->processes.processes[i];
}

static void load_continue(struct session *s, int i)
{
	struct tracked_process *p = waiting_process(s, s->load_waits[i].pid);

	if (p && s->load_waits[i].answered)
		p->unwind_wait_ns += clock__monotonic_ns() - s->load_waits[i].answered_ns;
	kill(s->load_waits[i].pid, SIGCONT);
	s->load_waits[i] = s->load_waits[--s->nr_load_waits];
}

void session__load_handled(struct session *s, pid_t pid)
{
	struct tracked_process *p;
	uint64_t budget;
	int i = 0;

	while (i < s->nr_load_waits && s->load_waits[i].pid != pid)
		i++;
	if (i == s->nr_load_waits) {
		if (s->nr_load_waits == MAX_LOAD_WAITS) {
			kill(pid, SIGCONT);
			return;
		}
		s->load_waits[s->nr_load_waits++] =
		    (struct load_wait){pid, 0, clock__monotonic_ns()};
	}
	if (++s->load_waits[i].handled < s->load_stoppers)
		return;
	/* The libraries just mapped get their unwind rules before they run
	 * (their constructors, the first allocations), within the gate's
	 * time: session__load_gate_expire() lets the process go once they
	 * are ready. */
	p = waiting_process(s, pid);
	budget = LOAD_GATE_UNWIND_BUDGET_MS * 1000000ULL;
	if (s->unwind_tables && unwind_tables__pending(s->unwind_tables, false) &&
	    (!p || p->unwind_wait_ns < budget)) {
		s->load_waits[i].answered = true;
		s->load_waits[i].answered_ns = clock__monotonic_ns();
		s->load_waits[i].unwind_deadline_ns =
		    s->load_waits[i].answered_ns + budget - (p ? p->unwind_wait_ns : 0);
	} else {
		load_continue(s, i);
	}
}

void session__load_gate_expire(struct session *s, bool all)
{
	uint64_t now = clock__monotonic_ns();

	for (int i = s->nr_load_waits; i-- > 0;)
		if (all || now - s->load_waits[i].since_ns > LOAD_GATE_TIMEOUT_MS * 1000000ULL) {
			load_continue(s, i);
		} else if (s->load_waits[i].answered && now > s->load_waits[i].unwind_deadline_ns) {
			load_continue(s, i);
		} else if (s->load_waits[i].answered &&
			   !unwind_tables__pending(s->unwind_tables, false)) {
			/* The rows into BPF first, then the process runs on. */
			unwind_tables__poll(s->unwind_tables);
			load_continue(s, i);
		}
}
