// SPDX-License-Identifier: GPL-2.0
/*
 * Off-CPU time.  On every context switch a thread of the target set that
 * leaves the CPU has the time, its state and its syscall noted (a small
 * entry per thread); when it runs again, the wait's length is known, a wait
 * shorter than min_block_ns is only counted, and the others are drawn
 * (offcpu.h: in wall mode, in proportion to their length).
 *
 * The stacks of a wait are taken where that costs least.  A wait in a
 * syscall leaves the user and Python stacks as they were until the thread
 * leaves the syscall, so with the syscall probe (sys_exit, in the thread)
 * they are taken there, and only for the waits drawn: a thread that blocks
 * thousands of times a second costs a few captures.  The kernel stack is
 * walked once for each place where threads block, and kept.  A thread's
 * whole stacks are also stashed as it blocks, at a bounded rate, for the
 * waits still open when the session ends, and so are those of every wait
 * outside a syscall (preempted, a page fault).  Without the syscall
 * probe every wait's stacks are taken as it blocks (under the overhead
 * governor, 1 in N).  Threads outside the target set cost one hash lookup
 * at each switch and syscall exit.
 */
#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>

#include "capture.bpf.h"
#include "offcpu.h"

#define PF_EXITING 0x00000004

const volatile __u64 min_block_ns = 10000;
/* Wall mode's sampling period; 0: every wait's stacks (offcpu.h). */
const volatile __u64 wait_period_ns = 0;
/* With the syscall probe, a thread's whole stacks are stashed as it blocks
 * once per interval on average, up to a burst of stash_burst of them: a
 * thread that blocks now and then always has its stacks stashed, one that
 * blocks thousands of times a second a few dozen times. */
const volatile __u64 stash_interval_ns = 20000000;
const volatile __u64 stash_burst = 16;
/* Past that rate, the stacks of 1 in this many waits of a thread preempted
 * or outside a syscall (which only its blocking shows) are taken. */
#define PREEMPTED_EVERY 4
#define WALL_STASH_SLOWER 10
/* A thread's entry as it first blocks. */
const volatile struct offcpu_wait empty_wait = {};
/* Set by userspace once the syscall probe is attached. */
volatile bool syscall_probe = false;

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__uint(max_entries, OFFCPU_MAX_THREADS);
	__type(key, __u32);
	__type(value, struct offcpu_wait);
} offcpu_waits SEC(".maps");

/* Record-sized stashes, by OFFCPU_STASH_KEY, allocated when first needed;
 * userspace sets the value size (struct sample_event plus the stack copy)
 * before loading. */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__uint(max_entries, OFFCPU_MAX_THREADS);
	__uint(key_size, sizeof(__u64)); /* no BTF: the value has none */
	__uint(value_size, sizeof(struct sample_event));
} offcpu_pending SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__uint(max_entries, OFFCPU_KERNEL_STACKS);
	__type(key, __u64);
	__type(value, struct offcpu_kernel_stack);
} offcpu_kernel_stacks SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct offcpu_kernel_stack);
} offcpu_kernel_blank SEC(".maps");

static __always_inline void add(__u32 counter, __u64 value)
{
	__u64 *slot = bpf_map_lookup_elem(&counters, &counter);

	if (slot)
		*slot += value;
}

static __always_inline __u64 random64(void)
{
	return (__u64)bpf_get_prandom_u32() << 32 | bpf_get_prandom_u32();
}

/* Where in user space the current thread is: the same until it leaves the
 * syscall it is in. */
static __always_inline __u64 site_of(const struct pt_regs *regs)
{
	return regs->ip ^ regs->sp << 17 ^ regs->orig_ax << 48;
}

/* The current thread's kernel stack at kernel site key, from the ones kept
 * or walked now (the thread must be where it blocks); NULL if none. */
static __always_inline struct offcpu_kernel_stack *kernel_stack_at(void *ctx, __u64 key)
{
	struct offcpu_kernel_stack *stack = bpf_map_lookup_elem(&offcpu_kernel_stacks, &key);
	__u32 zero = 0;

	if (stack || !collect_kernel)
		return stack;
	stack = bpf_map_lookup_elem(&offcpu_kernel_blank, &zero);
	if (!stack)
		return NULL;
	stack->bytes = bpf_get_stack(ctx, stack->frames, sizeof(stack->frames), 0);
	if (stack->bytes <= 0) {
		add(COUNTER_KERNEL_STACK_ERROR, 1);
		return NULL;
	}
	bpf_map_update_elem(&offcpu_kernel_stacks, &key, stack, BPF_ANY);
	return stack;
}

static __always_inline void copy_kernel_stack(struct sample_event *event,
					      const struct offcpu_kernel_stack *stack)
{
	event->kernel_stack_bytes = 0;
	if (stack && stack->bytes > 0 &&
	    !bpf_probe_read_kernel(event->kernel_stack, sizeof(event->kernel_stack), stack->frames))
		event->kernel_stack_bytes = stack->bytes;
}

/* A stash of the thread, created from a record of the right size borrowed
 * from the ring (every field that is read is written before). */
static __always_inline struct sample_event *stash_of(__u32 tid, __u32 i)
{
	__u64 key = OFFCPU_STASH_KEY(tid, i);
	struct sample_event *event = bpf_map_lookup_elem(&offcpu_pending, &key);
	void *blank;
	long err;

	if (event)
		return event;
	blank = bpf_ringbuf_reserve(&samples, sizeof(*event) + STACK_COPY_RECORD_BYTES, 0);
	if (!blank) {
		add(COUNTER_LOST_OFFCPU, 1);
		return NULL;
	}
	err = bpf_map_update_elem(&offcpu_pending, &key, blank, BPF_NOEXIST);
	bpf_ringbuf_discard(blank, BPF_RB_NO_WAKEUP);
	return err ? NULL : bpf_map_lookup_elem(&offcpu_pending, &key);
}

/* The header of a record of the current thread's wait. */
static __always_inline void fill_header(struct sample_event *event, __u64 start_ns, __u64 syscall,
					__u64 state)
{
	__u64 id = bpf_get_current_pid_tgid();

	event->time_ns = start_ns;
	event->pid = id >> 32;
	event->tid = (__u32)id;
	event->cpu = bpf_get_smp_processor_id();
	event->kind = SAMPLE_KIND_OFF_CPU;
	event->correlation = 0;
	__builtin_memset(event->detail, 0, sizeof(event->detail));
	event->detail[OFFCPU_DETAIL_SYSCALL] = syscall;
	event->detail[OFFCPU_DETAIL_STATE] = state;
	bpf_get_current_comm(event->comm, sizeof(event->comm));
}

/* What a record says of the wait it sends. */
static __always_inline void fill_wait(struct sample_event *event, __u64 delta, __u64 weight,
				      bool sampled, __u64 thread_ns)
{
	event->detail[OFFCPU_DETAIL_DURATION_NS] = delta;
	event->detail[OFFCPU_DETAIL_WEIGHT_NS] = weight == delta ? 0 : weight;
	event->detail[OFFCPU_DETAIL_THINNING] = sampled ? OFFCPU_THINNED_KEPT : OFFCPU_ALL;
	event->detail[OFFCPU_DETAIL_THINNED_NS] = thread_ns;
	event->detail[OFFCPU_DETAIL_OPEN] = 0;
	add(COUNTER_OFFCPU, 1);
}

/* The due wait's record, the current thread still in its syscall: user and
 * Python stacks now, the kernel stack as the stash has it from the wait's
 * start. */
static __always_inline void take_due(void *ctx, struct offcpu_wait *w, __u32 tid)
{
	__u64 start_ns = w->due_start_ns, delta = w->due_ns, weight = w->due_weight;
	bool sampled = w->due_sampled, urgent;
	struct sample_event *event;

	w->due_start_ns = 0;
	event = bpf_ringbuf_reserve(&samples, sizeof(*event) + STACK_COPY_RECORD_BYTES, 0);
	if (!event) {
		add(COUNTER_LOST_OFFCPU, 1);
		return;
	}
	fill_header(event, start_ns, w->due_syscall, w->due_state);
	urgent = capture__stacks(ctx, event, false);
	add(COUNTER_OFFCPU_DUE, 1);
	copy_kernel_stack(event, bpf_map_lookup_elem(&offcpu_kernel_stacks, &w->due_kernel_site));
	fill_wait(event, delta, weight, sampled, w->thread_ns);
	capture__submit(event, urgent);
}

/* The stash for the thread's site: the one it has, or a new one taken
 * round robin (left empty). */
static __always_inline __u32 stash_for_site(struct offcpu_wait *w)
{
	__u32 i;

	for (i = 0; i < OFFCPU_STASHES; i++)
		if (w->stash_sites[i] == w->site && w->stashed_ns[i])
			return i;
	i = w->next_stash++ % OFFCPU_STASHES;
	w->stash_sites[i] = w->site;
	w->stashed_ns[i] = 0;
	return i;
}

/* Whether the thread stashes its stacks again at a site that has a stash
 * (a token bucket). */
static __always_inline bool stash_again(struct offcpu_wait *w, __u64 now)
{
	/* In wall mode, where most waits are not drawn, a tenth of the rate. */
	__u64 interval = wait_period_ns ? WALL_STASH_SLOWER * stash_interval_ns : stash_interval_ns;
	__u64 credit = w->stash_credit_ns + (now - w->credit_at_ns);

	if (!w->credit_at_ns || credit > stash_burst * interval)
		credit = stash_burst * interval;
	w->credit_at_ns = now;
	if (credit < interval) {
		w->stash_credit_ns = credit;
		return false;
	}
	w->stash_credit_ns = credit - interval;
	return true;
}

static __always_inline void forget(__u32 tid)
{
	bpf_map_delete_elem(&offcpu_waits, &tid);
	for (__u32 i = 0; i < OFFCPU_STASHES; i++) {
		__u64 key = OFFCPU_STASH_KEY(tid, i);

		bpf_map_delete_elem(&offcpu_pending, &key);
	}
}

/*
 * The record in event holds the current thread's stacks at the site of its
 * due wait: it goes out as that wait's (its header, kernel stack and
 * figures), in a copy, leaving event to be filled again.
 */
static __always_inline void send_due(struct sample_event *event, struct offcpu_wait *w)
{
	fill_header(event, w->due_start_ns, w->due_syscall, w->due_state);
	copy_kernel_stack(event, bpf_map_lookup_elem(&offcpu_kernel_stacks, &w->due_kernel_site));
	fill_wait(event, w->due_ns, w->due_weight, w->due_sampled, w->thread_ns);
	if (bpf_ringbuf_output(&samples, event, sizeof(*event) + STACK_COPY_RECORD_BYTES,
			       bpf_ringbuf_query(&samples, BPF_RB_AVAIL_DATA) > wakeup_bytes
				   ? BPF_RB_FORCE_WAKEUP
				   : BPF_RB_NO_WAKEUP))
		add(COUNTER_LOST_OFFCPU, 1);
	else
		add(COUNTER_OFFCPU_DUE, 1);
	w->due_start_ns = 0;
}

/*
 * Thread prev leaves the CPU: its wait begins, and its stacks are stashed
 * when they are wanted (a new site, the bucket's rate, or no syscall probe
 * to take them later).  One capture serves both this wait and a due one
 * at the same site (the thread blocks again without leaving its syscall):
 * each call site of capture__stacks() is verified on its own, at the cost
 * of a whole unwinder.
 */
static __always_inline void switched_out(void *ctx, struct task_struct *prev, __u32 state)
{
	struct sample_event *event;
	bool due = false, stash = true;
	struct offcpu_wait *w;
	__u32 tid = prev->pid, i;
	struct pt_regs *regs;
	__u64 now, site;

	/* A thread that is exiting never comes back: forget it. */
	if (prev->flags & PF_EXITING) {
		forget(tid);
		return;
	}
	w = bpf_map_lookup_elem(&offcpu_waits, &tid);
	if (!w) {
		bpf_map_update_elem(&offcpu_waits, &tid, (const void *)&empty_wait, BPF_NOEXIST);
		w = bpf_map_lookup_elem(&offcpu_waits, &tid);
		if (!w)
			return;
	}
	now = bpf_ktime_get_ns();
	regs = (struct pt_regs *)bpf_task_pt_regs(prev);
	site = site_of(regs);
	/* A drawn wait's stacks are still due: the thread blocks again in
	 * the same syscall, its user stack as it was (at another site it
	 * left that syscall unseen, and the wait is lost). */
	if (w->due_start_ns) {
		due = w->due_site == site;
		if (!due) {
			add(COUNTER_OFFCPU_UNSEEN, 1);
			w->due_start_ns = 0;
		}
	}
	w->start_ns = now;
	w->state = state;
	w->syscall = regs->orig_ax;
	w->site = site;
	w->kernel_site = site ^ regs->di * 0x9e3779b97f4a7c15ULL ^
			 (__u64)prev->tgid * 0xc2b2ae3d27d4eb4fULL ^ (__u64)(state != 0) << 63;
	i = stash_for_site(w);
	w->stash = i;
	if (syscall_probe) {
		/* Walked (once per kernel site) for this wait's record however
		 * its stacks are taken: at its syscall's exit they are not
		 * where it blocked. */
		kernel_stack_at(ctx, w->kernel_site);
		w->thinning = OFFCPU_ALL;
		/* A thread preempted (runnable) may be past its syscall's
		 * exit already, and one outside a syscall has none: their
		 * stacks only now. */
		w->every = 1;
		if (state && (__s64)w->syscall >= 0) {
			/* Its stacks are taken as it leaves the syscall if the
			 * wait is drawn.  Stashed now where the site has none
			 * (for a wait still open at the end) and, where every
			 * wait is kept (off-CPU mode), at the bucket's rate: in
			 * wall mode most waits are not drawn. */
			stash = !(i < OFFCPU_STASHES && w->stashed_ns[i] &&
				  (wait_period_ns || !stash_again(w, now)));
		} else if (!stash_again(w, now)) {
			/* Past the rate, 1 in PREEMPTED_EVERY of these, each
			 * standing for as many. */
			w->every = PREEMPTED_EVERY;
			stash = !(bpf_get_prandom_u32() % PREEMPTED_EVERY);
		}
		if (stash && (!state || (__s64)w->syscall < 0))
			add(COUNTER_OFFCPU_PREEMPTED, 1);
	} else {
		__u32 every = governor_divisor();

		w->thinning = every <= 1		      ? OFFCPU_ALL
			      : bpf_get_prandom_u32() % every ? OFFCPU_THINNED_DROPPED
							      : OFFCPU_THINNED_KEPT;
		stash = w->thinning != OFFCPU_THINNED_DROPPED;
	}
	if (!stash && !due)
		return;
	w->stash_now = stash;
	w->due_now = due;
	/* Written whole below: a stash not kept is only scratch (a stash is
	 * read for the wait that wrote it, stashed_ns). */
	event = stash_of(tid, i);
	if (!event) {
		if (due) {
			add(COUNTER_LOST_OFFCPU, 1);
			w->due_start_ns = 0;
		}
		return;
	}
	capture__stacks(ctx, event, !syscall_probe);
	/* Read back from the map: see stash_now. */
	if (*(volatile __u8 *)&w->due_now)
		send_due(event, w);
	if (!*(volatile __u8 *)&w->stash_now)
		return;
	fill_header(event, w->start_ns, w->syscall, w->state);
	if (syscall_probe)
		copy_kernel_stack(event, kernel_stack_at(ctx, w->kernel_site)); /* kept above */
	i = *(volatile __u32 *)&w->stash;
	if (i < OFFCPU_STASHES)
		w->stashed_ns[i] = w->start_ns;
	add(COUNTER_OFFCPU_STASHED, 1);
}

/* The end of thread tid's wait w (not the current thread): counted, drawn,
 * and sent with the stacks stashed as it began, or its stacks made due. */
static __always_inline void switched_in(struct offcpu_wait *w, __u32 tid)
{
	__u64 delta = bpf_ktime_get_ns() - w->start_ns, weight = delta, period, key;
	bool sampled = false, kept = true;
	struct sample_event *event;
	__u32 i = w->stash;

	if (delta < min_block_ns) {
		add(COUNTER_OFFCPU_SHORT, 1);
		add(COUNTER_OFFCPU_SHORT_NS, delta);
		w->start_ns = 0;
		return;
	}
	if (!syscall_probe) {
		sampled = w->thinning != OFFCPU_ALL;
		kept = w->thinning != OFFCPU_THINNED_DROPPED;
	} else if (wait_period_ns) {
		period = wait_period_ns * governor_divisor();
		sampled = true;
		if (delta < period) {
			kept = random64() % period < delta;
			weight = period;
		}
	} else if (governor_divisor() > 1) {
		sampled = true;
		kept = bpf_get_prandom_u32() % governor_divisor() == 0;
	}
	/* A wait with no stash and no syscall to leave has no stacks (one
	 * of the preempted waits not drawn): it is in its thread's time. */
	if (syscall_probe && i < OFFCPU_STASHES && w->stashed_ns[i] != w->start_ns &&
	    (!w->state || (__s64)w->syscall < 0)) {
		sampled = true;
		kept = false;
	}
	if (sampled) {
		add(COUNTER_THINNED_WAITS, 1);
		add(COUNTER_THINNED_WAIT_NS, delta);
		w->thread_ns += delta;
	}
	if (!kept || i >= OFFCPU_STASHES) {
		w->start_ns = 0;
		return;
	}
	if (syscall_probe && w->every > 1) {
		sampled = true;
		weight *= w->every;
	}
	if (w->stashed_ns[i] == w->start_ns) {
		key = OFFCPU_STASH_KEY(tid, i);
		event = bpf_map_lookup_elem(&offcpu_pending, &key);
		if (event) {
			fill_wait(event, delta, weight, sampled, w->thread_ns);
			if (bpf_ringbuf_output(
				&samples, event, sizeof(*event) + STACK_COPY_RECORD_BYTES,
				bpf_ringbuf_query(&samples, BPF_RB_AVAIL_DATA) > wakeup_bytes
				    ? BPF_RB_FORCE_WAKEUP
				    : BPF_RB_NO_WAKEUP))
				add(COUNTER_LOST_OFFCPU, 1);
		}
	} else {
		w->due_start_ns = w->start_ns;
		w->due_ns = delta;
		w->due_weight = weight;
		w->due_sampled = sampled;
		w->due_syscall = w->syscall;
		w->due_state = w->state;
		w->due_site = w->site;
		w->due_kernel_site = w->kernel_site;
	}
	w->start_ns = 0;
}

SEC("tp_btf/sched_switch")
int BPF_PROG(offcpu_switch, bool preempt, struct task_struct *prev, struct task_struct *next,
	     unsigned int prev_state)
{
	__u32 tid = next->pid;
	struct offcpu_wait *w;

	if (targets__contains(prev->tgid))
		switched_out(ctx, prev, prev_state);
	/* Only threads of the target set have an entry (made as they block,
	 * dropped as they exit): one lookup, not two, on the wakeup's path. */
	w = bpf_map_lookup_elem(&offcpu_waits, &tid);
	if (w && w->start_ns)
		switched_in(w, tid);
	return 0;
}

/* A syscall returns, in its thread: the stacks of a wait in it that was
 * drawn are taken now. */
SEC("tp_btf/sys_exit")
int BPF_PROG(offcpu_syscall_exit, struct pt_regs *regs, long ret)
{
	__u32 tid = (__u32)bpf_get_current_pid_tgid();
	struct offcpu_wait *w;

	/* Every syscall of the machine comes here: one lookup, in the map
	 * that only the target set's threads are in. */
	if (!syscall_probe)
		return 0;
	w = bpf_map_lookup_elem(&offcpu_waits, &tid);
	if (w && w->due_start_ns) {
		if (w->due_site == site_of(regs))
			take_due(ctx, w, tid);
		else
			add(COUNTER_OFFCPU_UNSEEN, 1);
		w->due_start_ns = 0;
	}
	return 0;
}

char LICENSE[] SEC("license") = "GPL";
