// SPDX-License-Identifier: GPL-2.0
/* The off-CPU probe family's userspace half; see offcpu_probe.h. */
#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include <errno.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "offcpu.h"
#include "sampler.h"
#include "sampling/bpf_cost.h"
#include "sampling/offcpu_probe.h"
#include "sampling/probe_family.h"
#include "sampling/session.h"
#include "status.h"
#include "unwind.h"

#include "offcpu.skel.h"

#define OFFCPU_STACK_COPY 4096
/* The longest period wall mode draws waits at. */
#define WALL_WAIT_PERIOD_NS 1000000ULL

struct offcpu {
	struct offcpu_bpf *skel;
	struct bpf_link *link, *exit_link;
	struct offcpu_kernel_stack kernel_stack; /* flush's copy of one */
	size_t record_bytes;
};

int offcpu__open(struct offcpu **out, const struct session *session, uint64_t min_block_ns,
		 uint64_t wait_period_ns)
{
	struct capture_settings settings;
	struct offcpu *o = calloc(1, sizeof(*o));
	uint64_t load_started;
	int err;

	if (!o)
		return -ENOMEM;
	o->skel = offcpu_bpf__open();
	if (!o->skel) {
		err = -errno;
		goto fail;
	}
	session__capture_settings(session, &settings);
	/* A thread blocks in a system call a few frames below the code that
	 * waits: the top 4 KiB of its stack are enough for the unwinder,
	 * frame pointers complete the rest, and every switch copies less. */
	if (settings.stack_copy_bytes > OFFCPU_STACK_COPY)
		settings.stack_copy_bytes = OFFCPU_STACK_COPY;
	SESSION_SET_CAPTURE_RODATA(o->skel->rodata, &settings, OFFCPU_STACK_COPY);
	o->skel->rodata->min_block_ns = min_block_ns;
	o->skel->rodata->wait_period_ns = wait_period_ns;
	/* The record as the ring carries it: the same layout as a CPU sample
	 * (STACK_COPY_RECORD_BYTES in unwind.bpf.h). */
	o->record_bytes = sizeof(struct sample_event);
	if (settings.unwind_in_bpf)
		o->record_bytes += sizeof(struct unwind_frames);
	if (settings.stack_copy_bytes)
		o->record_bytes +=
		    sizeof(struct user_stack_copy) + settings.stack_copy_bytes + STACK_COPY_PAD;
	err = bpf_map__set_value_size(o->skel->maps.offcpu_pending, o->record_bytes);
	if (!err)
		err = session__share_maps(session, o->skel->obj);
	load_started = bpf_cost__now();
	if (!err)
		err = offcpu_bpf__load(o->skel);
	if (err)
		goto fail;
	bpf_cost__loaded("offcpu", o->skel->obj, load_started);
	*out = o;
	return 0;
fail:
	offcpu__close(o);
	return err;
}

/* The syscall probe, where the kernel has the tracepoint; without it every
 * wait's stacks are taken as it begins, which costs more but sees the
 * same. */
static void attach_syscall_probe(struct offcpu *o)
{
	o->exit_link = bpf_program__attach(o->skel->progs.offcpu_syscall_exit);
	if (!o->exit_link) {
		status__debug("off-CPU: no syscall exit probe (%s): every wait's stacks are "
			      "taken as it begins",
			      strerror(errno));
		return;
	}
	o->skel->bss->syscall_probe = true;
}

int offcpu__attach(struct offcpu *o)
{
	o->link = bpf_program__attach(o->skel->progs.offcpu_switch);
	if (!o->link)
		return -errno;
	attach_syscall_probe(o);
	return 0;
}

void offcpu__detach(struct offcpu *o)
{
	if (!o)
		return;
	if (o->link)
		bpf_cost__ran("off-CPU", o->skel->progs.offcpu_switch);
	if (o->exit_link)
		bpf_cost__ran("off-CPU syscall exit", o->skel->progs.offcpu_syscall_exit);
	bpf_link__destroy(o->link);
	o->link = NULL;
	bpf_link__destroy(o->exit_link);
	o->exit_link = NULL;
}

/* The stacks for thread tid's open wait w into event: those stashed at its
 * site, as it or an earlier wait there began.  False when there are none. */
static bool open_wait_stacks(struct offcpu *o, __u32 tid, const struct offcpu_wait *w,
			     struct sample_event *event)
{
	__u64 key = OFFCPU_STASH_KEY(tid, w->stash);

	if (w->stash >= OFFCPU_STASHES || !w->stashed_ns[w->stash] ||
	    w->stash_sites[w->stash] != w->site ||
	    bpf_map_lookup_elem(bpf_map__fd(o->skel->maps.offcpu_pending), &key, event))
		return false;
	event->time_ns = w->start_ns;
	event->detail[OFFCPU_DETAIL_SYSCALL] = w->syscall;
	event->detail[OFFCPU_DETAIL_STATE] = w->state;
	/* The kernel stack where this wait began, where it was kept. */
	if (!bpf_map_lookup_elem(bpf_map__fd(o->skel->maps.offcpu_kernel_stacks), &w->kernel_site,
				 &o->kernel_stack) &&
	    o->kernel_stack.bytes > 0 &&
	    (size_t)o->kernel_stack.bytes <= sizeof(event->kernel_stack)) {
		memcpy(event->kernel_stack, o->kernel_stack.frames, o->kernel_stack.bytes);
		event->kernel_stack_bytes = o->kernel_stack.bytes;
	}
	return true;
}

int offcpu__flush(struct offcpu *o, uint64_t end_ns,
		  int (*emit)(void *ctx, void *data, size_t size), void *ctx)
{
	int fd = bpf_map__fd(o->skel->maps.offcpu_waits);
	struct sample_event *event = malloc(o->record_bytes);
	uint64_t unseen = 0, unseen_ns = 0;
	struct offcpu_wait w;
	__u32 key, next;
	bool first = true;
	int err = 0;

	if (!event)
		return -ENOMEM;
	while (!bpf_map_get_next_key(fd, first ? NULL : &key, &next)) {
		first = false;
		key = next;
		if (bpf_map_lookup_elem(fd, &key, &w))
			continue;
		/* A wait drawn whose thread had not yet left its syscall. */
		if (w.due_start_ns) {
			unseen++;
			unseen_ns += w.due_ns;
		}
		if (!w.start_ns || w.start_ns > end_ns || w.thinning == OFFCPU_THINNED_DROPPED)
			continue;
		if (!open_wait_stacks(o, key, &w, event)) {
			unseen++;
			unseen_ns += end_ns - w.start_ns;
			continue;
		}
		event->detail[OFFCPU_DETAIL_DURATION_NS] = end_ns - w.start_ns;
		event->detail[OFFCPU_DETAIL_WEIGHT_NS] = 0;
		event->detail[OFFCPU_DETAIL_THINNING] = OFFCPU_ALL;
		event->detail[OFFCPU_DETAIL_OPEN] = 1;
		err = emit(ctx, event, o->record_bytes);
		if (err)
			break;
	}
	if (unseen)
		status__debug("off-CPU: %llu waits at the end (%.3f s) had no stacks taken yet; "
			      "left out",
			      (unsigned long long)unseen, unseen_ns / 1e9);
	free(event);
	return err;
}

void offcpu__close(struct offcpu *o)
{
	if (!o)
		return;
	offcpu__detach(o);
	offcpu_bpf__destroy(o->skel);
	free(o);
}

/* Kernel functions that say what a thread waits for, matched as prefixes
 * from the leaf up: the first match names the wait. */
static const struct {
	const char *function;
	const char *reason;
} kernel_waits[] = {
    {"futex_wait", "futex"},
    {"futex_", "futex"},
    {"do_nanosleep", "nanosleep"},
    {"hrtimer_nanosleep", "nanosleep"},
    {"pipe_read", "read pipe"},
    {"anon_pipe_read", "read pipe"},
    {"fifo_pipe_read", "read pipe"},
    {"anon_pipe_write", "write pipe"},
    {"pipe_write", "write pipe"},
    {"ep_poll", "epoll_wait"},
    {"do_sys_poll", "poll"},
    {"do_select", "select"},
    {"unix_stream_read", "recv unix socket"},
    {"unix_dgram_recvmsg", "recv unix socket"},
    {"tcp_recvmsg", "recv tcp"},
    {"sk_wait_data", "recv socket"},
    {"inet_csk_accept", "accept"},
    {"sk_stream_wait_memory", "send socket"},
    {"n_tty_read", "read tty"},
    {"do_wait", "wait child"},
    {"do_sigtimedwait", "signal wait"},
    {"sigsuspend", "signal wait"},
    {"io_schedule", "io"},
    {"folio_wait", "io"},
    {"wait_on_page", "io"},
    {"blk_", "io"},
    {"rwsem_down", "kernel lock"},
    {"__mutex_lock", "kernel lock"},
};

/* Kernel functions many waits pass through: named only when no frame
 * and no system call says more. */
static const struct {
	const char *function;
	const char *reason;
} generic_waits[] = {
    {"schedule_timeout", "sleep"},
};

/* x86-64 syscall numbers of the common blocking calls, for stacks without
 * kernel frames (--no-kernel). */
static const struct {
	int64_t nr;
	const char *reason;
} syscall_waits[] = {
    {0, "read"},	 {1, "write"},	     {7, "poll"},	  {23, "select"},
    {24, "sched_yield"}, {35, "nanosleep"},  {43, "accept"},	  {45, "recv"},
    {47, "recv"},	 {61, "wait child"}, {202, "futex"},	  {230, "nanosleep"},
    {232, "epoll_wait"}, {270, "select"},    {271, "poll"},	  {281, "epoll_wait"},
    {288, "accept"},	 {299, "recv"},	     {441, "epoll_wait"},
};

const char *offcpu__reason(const char *const *kernel_frames, size_t nr_frames, int64_t syscall,
			   uint64_t state)
{
	if (state == 0)
		return syscall == 24 ? "sched_yield" : "preempted";
	for (size_t i = 0; i < nr_frames; i++)
		for (size_t k = 0; k < sizeof(kernel_waits) / sizeof(kernel_waits[0]); k++)
			if (!strncmp(kernel_frames[i], kernel_waits[k].function,
				     strlen(kernel_waits[k].function)))
				return kernel_waits[k].reason;
	for (size_t k = 0; k < sizeof(syscall_waits) / sizeof(syscall_waits[0]); k++)
		if (syscall_waits[k].nr == syscall)
			return syscall_waits[k].reason;
	for (size_t i = 0; i < nr_frames; i++)
		for (size_t k = 0; k < sizeof(generic_waits) / sizeof(generic_waits[0]); k++)
			if (!strncmp(kernel_frames[i], generic_waits[k].function,
				     strlen(generic_waits[k].function)))
				return generic_waits[k].reason;
	return "blocked";
}

static bool offcpu_wanted(const struct probe_family_env *env)
{
	return env->sampling->mode != SESSION_MODE_CPU;
}

static int offcpu_open(void **state, const struct probe_family_env *env)
{
	/* Wall mode samples waits as it samples CPU time, once a period, or
	 * once a millisecond where the period is longer: a collective or a
	 * queue wait lasts milliseconds, and the findings that weigh them
	 * against each other step by step need more of them than the CPU
	 * rate gives (a capture costs a few microseconds). */
	uint64_t period = 0;

	if (env->sampling->mode == SESSION_MODE_WALL && env->sampling->frequency)
		period = 1000000000ULL / env->sampling->frequency;
	if (period > WALL_WAIT_PERIOD_NS)
		period = WALL_WAIT_PERIOD_NS;
	int err = offcpu__open((struct offcpu **)state, env->session, env->sampling->off_cpu_min_ns,
			       period);

	if (err)
		status__error("cannot load the off-CPU probe: %s", status__bpf_error(err));
	return err;
}

static int offcpu_attach(void **state, const struct probe_family_env *env)
{
	int err = offcpu__attach(*state);

	(void)env;
	if (err)
		status__error("cannot attach the off-CPU probe: %s", status__bpf_error(err));
	return err;
}

static void offcpu_detach(void *state)
{
	offcpu__detach(state);
}

/* Threads still waiting count up to the end. */
static int offcpu_flush(void *state, struct session *session)
{
	return offcpu__flush(state, session__end_time(session), session__add_record, session);
}

static void offcpu_close(void *state)
{
	offcpu__close(state);
}

const struct probe_family offcpu_family = {
    .name = "off-CPU",
    .wanted = offcpu_wanted,
    .open = offcpu_open,
    .attach = offcpu_attach,
    .detach = offcpu_detach,
    .flush = offcpu_flush,
    .close = offcpu_close,
};
