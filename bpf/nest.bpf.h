/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Scratch slots for the captures running at once on a CPU.  The walks
 * (user stack, Python stack, pending uretprobes) keep their state in
 * per-CPU maps, and more than one capture can be in progress on a CPU: the
 * CPU sampler's perf_event program interrupts a uprobe program in the middle
 * of its walk (a CPU sample of a thread in a launch or allocation probe),
 * and on a preemptible kernel another thread's probe runs between a
 * preempted probe's steps.  A walk that shared its state with another would
 * go on from where the other stopped: a launch stack ending in a word of
 * the stack's top (argv, environment) as an outermost frame.  So each
 * capture takes a free slot of its CPU and every scratch map holds one
 * entry a slot; the walk's owner, checked at its end, catches the rest.
 */
#ifndef LLMPROF_NEST_BPF_H
#define LLMPROF_NEST_BPF_H

#include "sampler.h"

/* The CPU's slots in use, a bit each. */
struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, __u32);
} capture_slots SEC(".maps");

/* A free slot of this CPU, taken; -1 when every one is in use.  An
 * interrupt between the read and the write gives its slot back before it
 * returns, so the bits read are still true.  The index is computed, not
 * chosen by branches: the verifier then walks the capture once, not once
 * for each slot (0.8 s more to load the sampler). */
_Static_assert(CAPTURE_NEST == 4, "nest__take() computes indexes 0 to 3");
static __always_inline int nest__take(void)
{
	__u32 zero = 0, *used = bpf_map_lookup_elem(&capture_slots, &zero);
	__u32 free, lowest;

	if (!used)
		return -1;
	free = ~*used & ((1u << CAPTURE_NEST) - 1);
	if (!free)
		return -1;
	lowest = free & -free;
	*used |= lowest;
	/* 1, 2, 4, 8: 0, 1, 2, 3. */
	return (lowest >> 1) - (lowest >> 3);
}

static __always_inline void nest__give(int slot)
{
	__u32 zero = 0, *used = bpf_map_lookup_elem(&capture_slots, &zero);

	if (used && slot >= 0 && slot < CAPTURE_NEST)
		*used &= ~(1u << slot);
}

#endif /* LLMPROF_NEST_BPF_H */
