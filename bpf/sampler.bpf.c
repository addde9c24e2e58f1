// SPDX-License-Identifier: GPL-2.0
/* CPU sampling: a perf_event program on every CPU that records the target
 * process's user and kernel stacks into a ring buffer. */
#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>
#include <bpf/usdt.bpf.h>

#include "sampler.h"
#include "python.bpf.h"
#include "unwind.bpf.h"

const volatile __u32 target_tgid = 0;
const volatile bool collect_kernel = true;
/* Unread bytes past which the reader is woken; userspace sets half the ring. */
const volatile __u64 wakeup_bytes = 4 * 1024 * 1024;

struct {
	__uint(type, BPF_MAP_TYPE_RINGBUF);
	__uint(max_entries, 16 * 1024 * 1024);
} samples SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, COUNTER_MAX);
	__type(key, __u32);
	__type(value, __u64);
} counters SEC(".maps");

static __always_inline void count(__u32 counter)
{
	__u64 *value = bpf_map_lookup_elem(&counters, &counter);

	if (value)
		*value += 1;
}

SEC("perf_event")
int sample_cpu(struct bpf_perf_event_data *ctx)
{
	__u64 id = bpf_get_current_pid_tgid();
	struct sample_event *event;
	__u64 flags = BPF_RB_NO_WAKEUP;

	if (id >> 32 != target_tgid)
		return 0;
	count(COUNTER_SAMPLES);
	/* With --unwind dwarf or auto the record has room for the stack copy. */
	event = bpf_ringbuf_reserve(&samples, sizeof(*event) + STACK_COPY_RECORD_BYTES, 0);
	if (!event) {
		count(COUNTER_LOST_RINGBUF);
		return 0;
	}
	event->time_ns = bpf_ktime_get_ns();
	event->pid = id >> 32;
	event->tid = (__u32)id;
	event->cpu = bpf_get_smp_processor_id();
	event->flags = 0;
	event->correlation = 0;
	bpf_get_current_comm(event->comm, sizeof(event->comm));
	if (collect_kernel) {
		event->kernel_stack_bytes =
			bpf_get_stack(ctx, event->kernel_stack, sizeof(event->kernel_stack), 0);
		if (event->kernel_stack_bytes < 0)
			count(COUNTER_KERNEL_STACK_ERROR);
	} else {
		event->kernel_stack_bytes = 0;
	}
	event->user_stack_bytes = bpf_get_stack(ctx, event->user_stack, sizeof(event->user_stack),
						BPF_F_USER_STACK);
	if (event->user_stack_bytes < 0)
		count(COUNTER_USER_STACK_ERROR);
	/* While llmprof looks for a starting interpreter, it reads each
	 * sample at once: Python runs within milliseconds of the exec. */
	if (python__capture(&event->python))
		flags = BPF_RB_FORCE_WAKEUP;
	if (stack_copy_bytes)
		unwind__copy_user_stack((struct user_stack_copy *)(event + 1));
	/* Wake the reader only when the buffer fills up; otherwise it drains
	 * on its own timer, which keeps wakeups off the target's CPUs. */
	if (bpf_ringbuf_query(&samples, BPF_RB_AVAIL_DATA) > wakeup_bytes)
		flags = BPF_RB_FORCE_WAKEUP;
	bpf_ringbuf_submit(event, flags);
	return 0;
}

/* The CUPTI agent fires llmprof:launch(correlation, callback, domain) in its
 * API-enter callback, on the launching thread: its user stack is the CPU
 * stack that launched the GPU work. */
SEC("usdt")
int BPF_USDT(on_gpu_launch, __u64 correlation, __u64 callback, __u64 domain)
{
	__u64 id = bpf_get_current_pid_tgid();
	struct sample_event *event;

	if (id >> 32 != target_tgid)
		return 0;
	/* The same record as a sample, so launch stacks unwind the same way. */
	event = bpf_ringbuf_reserve(&samples, sizeof(*event) + STACK_COPY_RECORD_BYTES, 0);
	if (!event) {
		count(COUNTER_LOST_LAUNCH);
		return 0;
	}
	event->time_ns = bpf_ktime_get_ns();
	event->pid = id >> 32;
	event->tid = (__u32)id;
	event->cpu = bpf_get_smp_processor_id();
	event->flags = SAMPLE_FLAG_LAUNCH;
	event->correlation = correlation;
	bpf_get_current_comm(event->comm, sizeof(event->comm));
	event->kernel_stack_bytes = 0;
	event->user_stack_bytes = bpf_get_stack(ctx, event->user_stack, sizeof(event->user_stack),
						BPF_F_USER_STACK);
	python__capture(&event->python);
	if (stack_copy_bytes)
		unwind__copy_user_stack((struct user_stack_copy *)(event + 1));
	bpf_ringbuf_submit(event, 0);
	return 0;
}

char LICENSE[] SEC("license") = "GPL";
