/* SPDX-License-Identifier: GPL-2.0 */
/* Types shared by sampler.bpf.c and userspace. */
#ifndef LLMPROF_BPF_SAMPLER_H
#define LLMPROF_BPF_SAMPLER_H

#include "python.h"

#define MAX_STACK_DEPTH 127
#define TASK_COMM_LEN 16

/* Counters in the per-CPU "counters" map, summed by userspace. */
enum sample_counter {
	COUNTER_SAMPLES = 0,	   /* samples of the target taken */
	COUNTER_LOST_RINGBUF,	   /* ring buffer full: sample lost */
	COUNTER_USER_STACK_ERROR,  /* user stack could not be read */
	COUNTER_KERNEL_STACK_ERROR,
	COUNTER_LOST_LAUNCH,	   /* ring buffer full: a GPU launch stack lost */
	COUNTER_MAX,
};

/* sample_event.flags */
#define SAMPLE_FLAG_LAUNCH 1 /* a GPU launch, from the agent's USDT probe */

/* One CPU sample.  Stack sizes are in bytes as bpf_get_stack() returns
 * them, or a negative errno. */
struct sample_event {
	__u64 time_ns; /* CLOCK_MONOTONIC */
	__u32 pid;
	__u32 tid;
	__u32 cpu;
	__s32 kernel_stack_bytes;
	__s32 user_stack_bytes;
	__u32 flags;
	__u32 correlation; /* launches: CUPTI correlation id */
	char comm[TASK_COMM_LEN];
	__u64 kernel_stack[MAX_STACK_DEPTH];
	__u64 user_stack[MAX_STACK_DEPTH];
	struct python_stack python;
};

#endif /* LLMPROF_BPF_SAMPLER_H */
