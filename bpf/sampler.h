/* SPDX-License-Identifier: GPL-2.0 */
/* The record layout shared by every probe family (capture.bpf.h) and
 * userspace (lib/sampling/session.c). */
#ifndef LLMPROF_BPF_SAMPLER_H
#define LLMPROF_BPF_SAMPLER_H

#include "python.h"

#define MAX_STACK_DEPTH 127
#define TASK_COMM_LEN 16

/* Captures in progress on one CPU at most (nest.bpf.h): a probe, a sample
 * interrupting it, and two preempted probes. */
#define CAPTURE_NEST 4

/* Counters in the per-CPU "counters" map, summed by userspace. */
enum sample_counter {
	COUNTER_SAMPLES = 0,	  /* samples of the target taken */
	COUNTER_LOST_RINGBUF,	  /* ring buffer full: sample lost */
	COUNTER_USER_STACK_ERROR, /* user stack could not be read */
	COUNTER_KERNEL_STACK_ERROR,
	COUNTER_LOST_LAUNCH,	  /* ring buffer full: a GPU launch stack lost */
	COUNTER_OFFCPU,		  /* off-CPU intervals recorded with their stacks */
	COUNTER_OFFCPU_SHORT,	  /* blocks under min_block_ns: counted only */
	COUNTER_OFFCPU_SHORT_NS,  /* their total time */
	COUNTER_LOST_OFFCPU,	  /* ring buffer full: an off-CPU interval lost */
	COUNTER_CHILDREN,	  /* processes that joined the target set by fork */
	COUNTER_CHILDREN_FULL,	  /* forks not followed: the target set was full */
	COUNTER_GPU_MEMORY,	  /* GPU memory calls recorded */
	COUNTER_LOST_GPU_MEMORY,  /* ring buffer full: a GPU memory call lost */
	COUNTER_NCCL,		  /* NCCL calls recorded */
	COUNTER_LOST_NCCL,	  /* ring buffer full: an NCCL call lost */
	COUNTER_LAUNCH_STACKS,	  /* GPU launch stacks taken */
	COUNTER_LAUNCH_SKIPPED,	  /* GPU launches past the rate: no stack taken */
	COUNTER_CAPTURE_NESTED,	  /* captures with every scratch slot of the CPU taken:
				   * no user or Python stack */
	COUNTER_THINNED_WAITS,	  /* off-CPU intervals drawn from (wall mode, or the
				   * governor thinning them), their stacks kept or not */
	COUNTER_THINNED_WAIT_NS,  /* their total time */
	COUNTER_OFFCPU_UNSEEN,	  /* drawn waits whose thread left the syscall unseen */
	COUNTER_OFFCPU_STASHED,	  /* off-CPU stacks taken as a thread blocked */
	COUNTER_OFFCPU_PREEMPTED, /* of them, because it was preempted or not in a syscall */
	COUNTER_OFFCPU_DUE,	  /* off-CPU stacks taken as a thread left its syscall */
	COUNTER_MAX,
};

/* What a record is.  Each probe family owns a kind and says in its own
 * header what sample_event.detail holds for it. */
enum sample_kind {
	SAMPLE_KIND_CPU = 0,	/* a CPU sample (sampler.bpf.c) */
	SAMPLE_KIND_LAUNCH,	/* a GPU launch, from the agent's USDT probe */
	SAMPLE_KIND_OFF_CPU,	/* a thread blocked, then ran again */
	SAMPLE_KIND_GPU_MEMORY, /* a CUDA allocation or free */
	SAMPLE_KIND_NCCL,	/* an NCCL call */
	SAMPLE_KIND_MAX = 16,
};

#define SAMPLE_DETAIL_WORDS 8

/* The launch probe's callback ids of graph launches (CUPTI's
 * cupti_runtime_cbid.h and cupti_driver_cbid.h, checked against them by
 * unit.launch_rate): rate-limited on a bucket of their own. */
#define LAUNCH_DOMAIN_DRIVER 1		       /* CUPTI_CB_DOMAIN_DRIVER_API */
#define LAUNCH_DOMAIN_RUNTIME 2		       /* CUPTI_CB_DOMAIN_RUNTIME_API */
#define LAUNCH_CBID_CUDA_GRAPH_LAUNCH 311      /* cudaGraphLaunch_v10000 */
#define LAUNCH_CBID_CUDA_GRAPH_LAUNCH_PTSZ 312 /* cudaGraphLaunch_ptsz_v10000 */
#define LAUNCH_CBID_CU_GRAPH_LAUNCH 514	       /* cuGraphLaunch */
#define LAUNCH_CBID_CU_GRAPH_LAUNCH_PTSZ 515   /* cuGraphLaunch_ptsz */
/* Stacks a thread may take at once after a quiet spell (a step's first
 * launches), and in a window of as many intervals, on each of its two
 * buckets (launch_rate.h). */
#define LAUNCH_STACK_BURST 16

/* What the overhead governor (--max-overhead) asks of the probes, in the
 * governor_settings map's one entry; userspace writes it. */
struct governor_settings {
	/* The overhead governor's slowing of the CPU clock (0, 1: none): the
	 * stacks of 1 off-CPU wait in this many are taken, and each thread's
	 * GPU launch stacks are this many times rarer. */
	__u32 divisor;
	__u32 pad;
};

/* One CPU sample.  Stack sizes are in bytes as bpf_get_stack() returns
 * them, or a negative errno. */
struct sample_event {
	__u64 time_ns; /* CLOCK_MONOTONIC */
	__u32 pid;
	__u32 tid;
	__u32 cpu;
	__s32 kernel_stack_bytes;
	__s32 user_stack_bytes;
	__u32 kind;			   /* enum sample_kind */
	__u32 correlation;		   /* launches: CUPTI correlation id */
	__u64 detail[SAMPLE_DETAIL_WORDS]; /* per kind; zero for CPU samples */
	char comm[TASK_COMM_LEN];
	__u64 kernel_stack[MAX_STACK_DEPTH];
	__u64 user_stack[MAX_STACK_DEPTH];
	struct python_stack python;
};

#endif /* LLMPROF_BPF_SAMPLER_H */
