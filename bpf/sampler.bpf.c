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

/* The CUPTI agent fires llmprof:launch(correlation, callback, domain) in its
 * API-enter callback, on the launching thread: its user stack is the CPU
 * stack that launched the GPU work. */
SEC("usdt")
int BPF_USDT(on_gpu_launch, __u64 correlation, __u64 callback, __u64 domain)
{
	struct sample_event *event;

	if (!targets__contains(bpf_get_current_pid_tgid() >> 32))
		return 0;
	/* The same record as a sample, so launch stacks unwind the same way. */
	event = capture__reserve(SAMPLE_KIND_LAUNCH);
	if (!event) {
		count(COUNTER_LOST_LAUNCH);
		return 0;
	}
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
	struct target_info info = { .flags = TARGET_FLAG_CHILD, .parent = parent_tgid };
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
