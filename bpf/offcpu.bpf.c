// SPDX-License-Identifier: GPL-2.0
/*
 * Off-CPU time: on every context switch, a thread of the target set that
 * leaves the CPU has its stacks captured, while it is still current, into its
 * pending entry; when it runs again the entry goes into the ring buffer with
 * the time it was off, unless that was shorter than min_block_ns (then only
 * the counters see it).  Threads outside the target set cost one hash lookup
 * each side of the switch.  Under the overhead governor only 1 wait in N
 * has its stacks taken and sent (offcpu.h).
 */
#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>

#include "capture.bpf.h"
#include "offcpu.h"

#define PF_EXITING 0x00000004

const volatile __u64 min_block_ns = 10000;

/* A record-sized value per thread that has blocked, allocated when it first
 * does; userspace sets the value size (struct sample_event plus the stack
 * copy) before loading, and deletes the entries of threads that exit. */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__uint(max_entries, OFFCPU_MAX_THREADS);
	__type(key, __u32);
	__uint(value_size, sizeof(struct sample_event));
} offcpu_pending SEC(".maps");

static __always_inline void add(__u32 counter, __u64 value)
{
	__u64 *slot = bpf_map_lookup_elem(&counters, &counter);

	if (slot)
		*slot += value;
}

/* Whether this wait's stacks are taken: OFFCPU_ALL, or while the governor
 * thins the waits, whether it was drawn. */
static __always_inline __u64 draw_wait(void)
{
	const struct governor_settings *settings;
	__u32 zero = 0, every;

	settings = bpf_map_lookup_elem(&governor_settings, &zero);
	every = settings ? settings->offcpu_stack_every : 0;
	if (every <= 1)
		return OFFCPU_ALL;
	return bpf_get_prandom_u32() % every ? OFFCPU_THINNED_DROPPED : OFFCPU_THINNED_KEPT;
}

static __always_inline void switched_out(void *ctx, struct task_struct *prev, __u32 state)
{
	__u32 tid = prev->pid;
	struct sample_event *event;
	struct pt_regs *regs;
	__u64 thinning, thinned_ns;

	/* A thread that is exiting never comes back: forget it. */
	if (prev->flags & PF_EXITING) {
		bpf_map_delete_elem(&offcpu_pending, &tid);
		return;
	}
	event = bpf_map_lookup_elem(&offcpu_pending, &tid);
	if (!event) {
		/* A thread's first block: its entry is created from a record
		 * of the right size borrowed from the ring (every field that
		 * is read is written below). */
		void *blank =
		    bpf_ringbuf_reserve(&samples, sizeof(*event) + STACK_COPY_RECORD_BYTES, 0);
		long err;

		if (!blank) {
			add(COUNTER_LOST_OFFCPU, 1);
			return;
		}
		err = bpf_map_update_elem(&offcpu_pending, &tid, blank, BPF_NOEXIST);
		bpf_ringbuf_discard(blank, BPF_RB_NO_WAKEUP);
		if (err)
			return;
		event = bpf_map_lookup_elem(&offcpu_pending, &tid);
		if (!event)
			return;
		event->detail[OFFCPU_DETAIL_THINNED_NS] = 0;
	}
	thinning = draw_wait();
	event->time_ns = bpf_ktime_get_ns();
	event->detail[OFFCPU_DETAIL_THINNING] = thinning;
	if (thinning == OFFCPU_THINNED_DROPPED)
		return;
	event->pid = prev->tgid;
	event->tid = tid;
	event->cpu = bpf_get_smp_processor_id();
	event->kind = SAMPLE_KIND_OFF_CPU;
	event->correlation = 0;
	thinned_ns = event->detail[OFFCPU_DETAIL_THINNED_NS];
	__builtin_memset(event->detail, 0, sizeof(event->detail));
	event->detail[OFFCPU_DETAIL_THINNING] = thinning;
	event->detail[OFFCPU_DETAIL_THINNED_NS] = thinned_ns;
	regs = (struct pt_regs *)bpf_task_pt_regs(prev);
	event->detail[OFFCPU_DETAIL_SYSCALL] = regs->orig_ax;
	event->detail[OFFCPU_DETAIL_STATE] = state;
	bpf_get_current_comm(event->comm, sizeof(event->comm));
	capture__stacks(ctx, event, true);
}

static __always_inline void switched_in(struct task_struct *next)
{
	__u32 tid = next->pid;
	struct sample_event *event;
	__u64 now, delta;

	event = bpf_map_lookup_elem(&offcpu_pending, &tid);
	if (!event || !event->time_ns)
		return;
	now = bpf_ktime_get_ns();
	delta = now - event->time_ns;
	if (delta < min_block_ns) {
		add(COUNTER_OFFCPU_SHORT, 1);
		add(COUNTER_OFFCPU_SHORT_NS, delta);
	} else {
		if (event->detail[OFFCPU_DETAIL_THINNING] != OFFCPU_ALL) {
			add(COUNTER_THINNED_WAITS, 1);
			add(COUNTER_THINNED_WAIT_NS, delta);
			event->detail[OFFCPU_DETAIL_THINNED_NS] += delta;
		}
		if (event->detail[OFFCPU_DETAIL_THINNING] == OFFCPU_THINNED_DROPPED) {
			event->time_ns = 0;
			return;
		}
		event->detail[OFFCPU_DETAIL_DURATION_NS] = delta;
		add(COUNTER_OFFCPU, 1);
		if (bpf_ringbuf_output(&samples, event, sizeof(*event) + STACK_COPY_RECORD_BYTES,
				       bpf_ringbuf_query(&samples, BPF_RB_AVAIL_DATA) > wakeup_bytes
					   ? BPF_RB_FORCE_WAKEUP
					   : BPF_RB_NO_WAKEUP))
			add(COUNTER_LOST_OFFCPU, 1);
	}
	event->time_ns = 0;
}

SEC("tp_btf/sched_switch")
int BPF_PROG(offcpu_switch, bool preempt, struct task_struct *prev, struct task_struct *next,
	     unsigned int prev_state)
{
	if (targets__contains(prev->tgid))
		switched_out(ctx, prev, prev_state);
	if (targets__contains(next->tgid))
		switched_in(next);
	return 0;
}

char LICENSE[] SEC("license") = "GPL";
