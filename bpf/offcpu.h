/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Off-CPU records (offcpu.bpf.c) as userspace reads them: a sample_event of
 * kind SAMPLE_KIND_OFF_CPU whose stacks are the thread's at the moment it
 * left the CPU, whose time_ns is that moment, and whose detail says how long
 * it stayed off and why.
 */
#ifndef LLMPROF_BPF_OFFCPU_H
#define LLMPROF_BPF_OFFCPU_H

#include "sampler.h"

/* sample_event.detail[] of an off-CPU record. */
enum offcpu_detail {
	OFFCPU_DETAIL_DURATION_NS = 0, /* off the CPU until it ran again */
	OFFCPU_DETAIL_SYSCALL,	       /* syscall number it blocked in, or -1 */
	OFFCPU_DETAIL_STATE,	       /* prev_state: 0 runnable (preempted) */
	OFFCPU_DETAIL_OPEN,	       /* 1: still off the CPU when the session ended */
	OFFCPU_DETAIL_THINNING,	       /* enum offcpu_thinning */
	OFFCPU_DETAIL_THINNED_NS,      /* the thread's time in thinned waits so far, this one's
					* included */
	OFFCPU_DETAIL_WEIGHT_NS,       /* the time it stands for; 0: its length */
};

/* In wall mode a wait shorter than the sampling period has its stacks
 * taken with a probability of its length over the period, and then stands
 * for a period (wall time sampled as CPU time is); under the overhead
 * governor the period grows N times, or, with no period, the stacks of 1
 * wait in N are taken.  The draws are random, so that no pattern of waits
 * escapes; every wait's time is counted, by thread
 * (OFFCPU_DETAIL_THINNED_NS) and in all (COUNTER_THINNED_WAIT_NS), and
 * userspace scales each thread's kept waits' weights to its total. */
enum offcpu_thinning {
	OFFCPU_ALL = 0,		/* every wait's stacks are taken */
	OFFCPU_THINNED_KEPT,	/* one of the waits drawn while thinning */
	OFFCPU_THINNED_DROPPED, /* not drawn: no stacks, counted, never sent */
};

/* A thread's stashes: one for each of the last few sites it blocked at.
 * One that blocks at a site that has none has its stacks stashed there (a
 * thread that blocks in accept() once for good, after a burst of short
 * waits elsewhere, has them for the end). */
#define OFFCPU_STASHES 4

/* A thread's state between leaving the CPU and running again.  A site is
 * where in user space it blocked (user pc and sp, syscall); its stacks are
 * the same there until it leaves the syscall.  A kernel site adds its
 * state, process and the syscall's first argument. */
struct offcpu_wait {
	__u64 start_ns;			   /* when it left the CPU; 0: it is running */
	__u64 state;			   /* prev_state */
	__u64 syscall;			   /* the syscall it blocked in, or -1 */
	__u64 site, kernel_site;	   /* of this wait */
	__u64 thread_ns;		   /* its time in drawn-from waits so far */
	__u64 stash_credit_ns;		   /* stashes it may take now, in stash intervals */
	__u64 credit_at_ns;		   /* when that was counted */
	__u64 stash_sites[OFFCPU_STASHES]; /* the site of each stash */
	__u64 stashed_ns[OFFCPU_STASHES];  /* start of the wait it holds; 0: empty */
	/* A drawn wait in a syscall whose stacks are due before the thread
	 * leaves that syscall (due_start_ns 0: none). */
	__u64 due_start_ns, due_ns, due_weight, due_syscall, due_state, due_site;
	__u64 due_kernel_site;
	__u32 due_sampled;
	__u32 thinning;	  /* enum offcpu_thinning, drawn as it left (no syscall probe) */
	__u32 stash;	  /* this wait's stash */
	__u32 next_stash; /* the stash a new site takes, round robin */
	__u32 every;	  /* this wait's stacks were stashed with a chance of 1 in every */
	/* switched_out()'s choice for the capture it makes: stash this
	 * wait's stacks, send the due wait's (kept here, not in registers,
	 * so that the verifier walks the capture once, not once per path). */
	__u8 stash_now, due_now;
	__u16 pad;
};

/* The key of thread tid's stash i. */
#define OFFCPU_STASH_KEY(tid, i) ((__u64)(i) << 32 | (__u32)(tid))

/* A kernel stack where threads block, by kernel site (and process). */
struct offcpu_kernel_stack {
	__s32 bytes;
	__u32 pad;
	__u64 frames[MAX_STACK_DEPTH];
};

/* Kernel stacks kept: a thread blocks at a handful of sites, and a stack
 * found here is not walked again. */
#define OFFCPU_KERNEL_STACKS 1024

/* Threads followed at once: the waits (struct offcpu_wait) and the stashes
 * (the record as it will be sent, stack copy after it; OFFCPU_STASHES per
 * thread at most). */
#define OFFCPU_MAX_THREADS 16384

#endif /* LLMPROF_BPF_OFFCPU_H */
