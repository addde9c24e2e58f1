// SPDX-License-Identifier: GPL-2.0
/* CPU sampling: a perf_event program on every CPU that records the user and
 * kernel stacks of the target set's threads into the ring buffer, and the
 * GPU launch probe, which records the launching thread's stack. */
#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>
#include <bpf/usdt.bpf.h>

#include "capture.bpf.h"
#include "sampling_clock.bpf.h"

SEC("perf_event")
int sample_cpu(struct bpf_perf_event_data *ctx)
{
	struct sample_event *event;
	bool urgent;

	/* Most ticks of a randomised clock are not samples: decide first,
	 * for every task, so that discarding costs little. */
	if (!sampling_clock__keep())
		return 0;
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

char LICENSE[] SEC("license") = "GPL";
