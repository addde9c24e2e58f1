/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Off-CPU records (offcpu.bpf.c) as userspace reads them: a sample_event of
 * kind SAMPLE_KIND_OFF_CPU whose stacks are the thread's at the moment it
 * left the CPU, whose time_ns is that moment, and whose detail says how long
 * it stayed off and why.
 */
#ifndef LLMPROF_BPF_OFFCPU_H
#define LLMPROF_BPF_OFFCPU_H

/* sample_event.detail[] of an off-CPU record. */
enum offcpu_detail {
	OFFCPU_DETAIL_DURATION_NS = 0, /* off the CPU until it ran again */
	OFFCPU_DETAIL_SYSCALL,	       /* syscall number it blocked in, or -1 */
	OFFCPU_DETAIL_STATE,	       /* prev_state: 0 runnable (preempted) */
	OFFCPU_DETAIL_OPEN,	       /* 1: still off the CPU when the session ended */
	OFFCPU_DETAIL_THINNING,	       /* enum offcpu_thinning */
	OFFCPU_DETAIL_THINNED_NS,      /* the thread's time in thinned waits so far, this one's
					* included */
};

/* Under the overhead governor, the stacks of only 1 wait in N are taken
 * (drawn at random, so that no pattern of waits escapes); every wait's time
 * is counted, by thread (OFFCPU_DETAIL_THINNED_NS) and in all
 * (COUNTER_THINNED_WAIT_NS), and userspace scales each thread's kept waits'
 * times to its total. */
enum offcpu_thinning {
	OFFCPU_ALL = 0,		/* every wait's stacks are taken */
	OFFCPU_THINNED_KEPT,	/* one of the waits drawn while thinning */
	OFFCPU_THINNED_DROPPED, /* not drawn: no stacks, counted, never sent */
};

/* The pending entry for a thread that is off the CPU: the record as it
 * will be sent, the stack copy after it (when stack copies are on). */
#define OFFCPU_MAX_THREADS 16384

#endif /* LLMPROF_BPF_OFFCPU_H */
