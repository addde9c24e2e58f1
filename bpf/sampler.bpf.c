// SPDX-License-Identifier: GPL-2.0
/* CPU sampling: a perf_event program on every CPU that records the user and
 * kernel stacks of the target set's threads into the ring buffer; the GPU
 * launch probe, which records the launching thread's stack; and the process
 * tracking that adds the target set's children as they are forked. */
#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>
#include <bpf/usdt.bpf.h>

#include "capture.bpf.h"
#include "launch_rate.h"

SEC("perf_event")
int sample_cpu(struct bpf_perf_event_data *ctx)
{
	struct sample_event *event;
	bool urgent;

	if (!targets__contains(bpf_get_current_pid_tgid() >> 32))
		return 0;
	count(COUNTER_SAMPLES);
	event = capture__reserve(SAMPLE_KIND_CPU);
	if (!event) {
		count(COUNTER_LOST_RINGBUF);
		return 0;
	}
	/* While llmprof looks for a starting interpreter, it reads each
	 * sample at once: Python runs within milliseconds of the exec. */
	urgent = capture__stacks(ctx, event, true);
	capture__submit(event, urgent);
	return 0;
}

/*
 * Launch stacks are a sample of the launch sites, not one per launch: a
 * stack costs the launching thread a BPF stack walk (microseconds), and a
 * launch-bound loop launches tens of thousands of kernels a second.  Each
 * thread takes at most launch_stack_interval_ns's rate of stacks (graph
 * launches, fewer and heavier, graph_stack_interval_ns's), in bursts of
 * LAUNCH_STACK_BURST, each launch with the same chance (launch_rate.h).  GPU time stays exact:
 * every kernel still comes with its own CUPTI record and duration, and one
 * whose launch took no stack is put whole on the stack of a launch of the
 * same kernel that took one (on the same thread, nearest in time; else on
 * another thread of the process; else [unattributed]; see gpu_merge.c), so
 * no kernel time is dropped, scaled or counted twice: per-stack totals are
 * exact wherever a thread launches a kernel from one site, and sum to the
 * exact total in any case.  0: every launch takes its stack.  While the
 * overhead governor slows the CPU clock by N, launch stacks are N times
 * rarer too (the interval N times longer; with none, 1 launch in N), and
 * GPU time stays exact by the same rule.
 */
const volatile __u64 launch_stack_interval_ns = 0;
const volatile __u64 graph_stack_interval_ns = 0;

/* A kernel launch's bucket and a graph launch's, by thread id.  LRU: a
 * thread evicted (with more launching threads than entries) comes back with
 * a full bucket, one burst more; userspace sizes it to 1 when there is no
 * limit. */
struct launch_buckets {
	struct launch_bucket kernel;
	struct launch_bucket graph;
};

struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__uint(max_entries, 8192);
	__type(key, __u32);
	__type(value, struct launch_buckets);
} launch_buckets SEC(".maps");

static __always_inline bool is_graph_launch(__u64 cbid, __u64 domain)
{
	if (domain == LAUNCH_DOMAIN_RUNTIME)
		return cbid == LAUNCH_CBID_CUDA_GRAPH_LAUNCH ||
		       cbid == LAUNCH_CBID_CUDA_GRAPH_LAUNCH_PTSZ;
	return domain == LAUNCH_DOMAIN_DRIVER &&
	       (cbid == LAUNCH_CBID_CU_GRAPH_LAUNCH || cbid == LAUNCH_CBID_CU_GRAPH_LAUNCH_PTSZ);
}

static __always_inline bool launch_stack_allowed(__u32 tid, __u64 cbid, __u64 domain)
{
	struct launch_buckets fresh = {}, *buckets;
	bool graph = is_graph_launch(cbid, domain);
	__u64 interval = graph ? graph_stack_interval_ns : launch_stack_interval_ns;
	__u32 slowing = governor_divisor();

	if (!interval)
		return slowing == 1 || bpf_get_prandom_u32() % slowing == 0;
	buckets = bpf_map_lookup_elem(&launch_buckets, &tid);
	if (!buckets) {
		bpf_map_update_elem(&launch_buckets, &tid, &fresh, BPF_NOEXIST);
		buckets = bpf_map_lookup_elem(&launch_buckets, &tid);
		if (!buckets)
			return true;
	}
	return launch_bucket__take(graph ? &buckets->graph : &buckets->kernel, bpf_ktime_get_ns(),
				   interval * slowing, bpf_get_prandom_u32());
}

/* The CUPTI agent fires llmprof:launch(correlation, callback, domain) in its
 * API-enter callback, on the launching thread: its user stack is the CPU
 * stack that launched the GPU work. */
SEC("usdt")
int BPF_USDT(on_gpu_launch, __u64 correlation, __u64 callback, __u64 domain)
{
	__u64 id = bpf_get_current_pid_tgid();
	struct sample_event *event;

	if (!targets__contains(id >> 32))
		return 0;
	if (!launch_stack_allowed((__u32)id, callback, domain)) {
		count(COUNTER_LAUNCH_SKIPPED);
		return 0;
	}
	/* The same record as a sample, so launch stacks unwind the same way. */
	event = capture__reserve(SAMPLE_KIND_LAUNCH);
	if (!event) {
		count(COUNTER_LOST_LAUNCH);
		return 0;
	}
	count(COUNTER_LAUNCH_STACKS);
	event->correlation = correlation;
	capture__stacks(ctx, event, false);
	capture__submit(event, false);
	return 0;
}

/* With --children (and for record): a process forked by one in the target
 * set joins it in the kernel, before it can run, so a child that lives a few
 * milliseconds is still sampled. */
const volatile bool follow_children = false;

SEC("tp_btf/sched_process_fork")
int BPF_PROG(on_fork, struct task_struct *parent, struct task_struct *child)
{
	__u32 parent_tgid = parent->tgid, child_tgid = child->tgid;
	struct target_info info = {.flags = TARGET_FLAG_CHILD, .parent = parent_tgid};
	struct python_config *config;

	/* A new thread, not a new process. */
	if (!follow_children || child_tgid == parent_tgid || !targets__contains(parent_tgid))
		return 0;
	if (bpf_map_update_elem(&targets, &child_tgid, &info, BPF_NOEXIST)) {
		count(COUNTER_CHILDREN_FULL);
		return 0;
	}
	count(COUNTER_CHILDREN);
	/* Until it execs, the child runs its parent's interpreter at the
	 * same addresses. */
	config = bpf_map_lookup_elem(&python_config, &parent_tgid);
	if (config && config->runtime)
		bpf_map_update_elem(&python_config, &child_tgid, config, BPF_ANY);
	return 0;
}

SEC("tp_btf/sched_process_exec")
int BPF_PROG(on_exec, struct task_struct *task, pid_t old_pid, struct linux_binprm *bprm)
{
	__u32 tgid = task->tgid;
	struct python_config *config;

	if (!targets__contains(tgid))
		return 0;
	/* A new image: the interpreter found before is gone (a search that
	 * waits for this exec is kept). */
	config = bpf_map_lookup_elem(&python_config, &tgid);
	if (config && config->runtime)
		bpf_map_delete_elem(&python_config, &tgid);
	return 0;
}

SEC("tp_btf/sched_process_exit")
int BPF_PROG(on_exit, struct task_struct *task)
{
	__u32 tgid = task->tgid;
	struct target_info *info;

	/* A child leaves the set when its last thread does, so that its PID,
	 * reused, is not profiled; selected processes stay (userspace sees
	 * them exit). */
	if (task->pid != tgid)
		return 0;
	info = bpf_map_lookup_elem(&targets, &tgid);
	if (info && (info->flags & TARGET_FLAG_CHILD)) {
		bpf_map_delete_elem(&targets, &tgid);
		bpf_map_delete_elem(&python_config, &tgid);
	}
	return 0;
}

char LICENSE[] SEC("license") = "GPL";
