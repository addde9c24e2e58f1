// SPDX-License-Identifier: GPL-2.0
/*
 * From a finished session's raw samples to the profile: each raw stack
 * symbolized once by its process's readers, the process and thread root
 * frames, off-CPU leaves and weights; and, for the GPU merge, the launch
 * stack of a correlation id in that profile.
 */
#include <bpf/libbpf.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "array.h"
#include "sampling/offcpu_probe.h"
#include "sampling/process_table.h"
#include "sampling/python_reader.h"
#include "sampling/session_private.h"
#include "unwind.h"
#include "sampling/symbol_share.h"
#include "sampling/symbolizer.h"
#include "status.h"

/* A stack of a process whose maps could not be read: its user frames as
 * "[unknown+0xADDR]" (nothing names them), root first. */
static int unresolved_stack(struct profile *p, const struct raw_stack *r, uint32_t *frames,
			    size_t max)
{
	size_t n = 0;

	for (int i = r->nr_user - 1; i >= 0 && n < max; i--) {
		char name[48];
		int64_t id;

		snprintf(name, sizeof(name), "[unknown+0x%llx]", (unsigned long long)r->addrs[i]);
		id = profile__intern_frame(p, name, NULL, 0, FRAME_UNKNOWN);
		if (id < 0)
			return id;
		frames[n++] = id;
	}
	if (!n) {
		int64_t id = profile__intern_frame(p, "[no stack]", NULL, 0, FRAME_UNKNOWN);

		if (id < 0)
			return id;
		frames[n++] = id;
	}
	return n;
}

/* A kernel function that runs BPF programs from a tracepoint or a probe.
 * A sample taken while one ran (llmprof's own, taking a wait's stacks as
 * its syscall returns, or another tool's) ends at the kernel function
 * that ran it: the programs are no code of the target's. */
static bool runs_bpf(const char *name)
{
	return name && (!strncmp(name, "__bpf_trace_", 12) || !strncmp(name, "bpf_trace_run", 13) ||
			!strcmp(name, "trace_call_bpf"));
}

/* Symbolizes one raw stack into s-side frame ids, root first. */
static int symbolize_stack(struct session *s, struct profile *p, const struct raw_stack *r,
			   uint32_t *frames, size_t max)
{
	struct tracked_process *proc = &s->processes.processes[r->process];
	size_t n = 0;
	int k;

	/* Without its maps (it was gone when first seen) a process's
	 * addresses stay as they are. */
	if (!proc->symbolizer)
		return unresolved_stack(p, r, frames, max);
	/* A stack as deep as the capture allows was cut: say so at its root
	 * rather than let its outer frames pass for the whole. */
	if (r->nr_user >= (s->unwind_tables ? UNWIND_MAX_FRAMES : MAX_STACK_DEPTH) && max > 1) {
		int64_t id = profile__intern_frame(p, "[truncated]", NULL, 0, FRAME_UNKNOWN);

		if (id < 0)
			return id;
		frames[n++] = id;
	}
	/* Python frames take the place of the interpreter's eval frames. */
	if (r->nr_python && proc->python) {
		k = python_reader__merge(proc->python, proc->symbolizer, p, r->addrs, r->nr_user,
					 r->addrs + r->nr_user + r->nr_kernel, r->nr_python,
					 frames + n, max - n);
		if (k < 0)
			return k;
		n += k;
	}
	/* User frames: captured leaf first, written root first. */
	for (int i = r->nr_python ? -1 : r->nr_user - 1; i >= 0 && n < max; i--) {
		k = symbolizer__user_frames(proc->symbolizer, p, r->addrs[i], i != 0, frames + n,
					    max - n);
		if (k < 0)
			return k;
		n += k;
	}
	for (int i = r->nr_kernel - 1; i >= 0 && n < max; i--) {
		int64_t id =
		    symbolizer__kernel_frame(proc->symbolizer, p, r->addrs[r->nr_user + i], i != 0);

		if (id < 0)
			return id;
		if (runs_bpf(p->frames[id].name))
			break;
		frames[n++] = id;
	}
	if (!n) {
		int64_t id = profile__intern_frame(p, "[no stack]", NULL, 0, FRAME_UNKNOWN);

		if (id < 0)
			return id;
		frames[n++] = id;
	}
	return n;
}

/* Resolves every user address of every raw stack, process by process and
 * in each module by module, so that no more than one module's debug
 * information is held at a time; symbolize_stack() then finds each in its
 * symbolizer's cache.  The lookup addresses of all processes go into one
 * array, grouped by process (a counting sort over the raw stacks). */
static int resolve_addresses(struct session *s, struct profile *p)
{
	size_t nr = s->processes.nr, total = 0, *start = calloc(nr + 1, sizeof(*start));
	uint64_t *pcs;
	int err = 0;

	if (!start)
		return -ENOMEM;
	for (size_t i = 0; i < s->nr_raw_stacks; i++)
		start[s->raw_stacks[i].process + 1] += s->raw_stacks[i].nr_user;
	for (size_t proc = 0; proc < nr; proc++)
		start[proc + 1] += start[proc];
	total = start[nr];
	pcs = malloc((total ? total : 1) * sizeof(*pcs));
	if (!pcs) {
		free(start);
		return -ENOMEM;
	}
	for (size_t i = 0; i < s->nr_raw_stacks; i++) {
		const struct raw_stack *r = &s->raw_stacks[i];

		/* Every frame but the leaf is a return address. */
		for (size_t k = 0; k < r->nr_user; k++)
			pcs[start[r->process]++] = k && r->addrs[k] ? r->addrs[k] - 1 : r->addrs[k];
	}
	/* start[proc] is now where proc's addresses end. */
	for (size_t proc = 0, from = 0; proc < nr && !err; from = start[proc++]) {
		struct symbolizer *symbolizer = s->processes.processes[proc].symbolizer;

		if (symbolizer && start[proc] > from)
			err =
			    symbolizer__resolve_all(symbolizer, p, pcs + from, start[proc] - from);
	}
	free(pcs);
	free(start);
	return err;
}

/* The weight of a sample in the profile's unit: a count of CPU samples, or
 * microseconds when off-CPU time is in the profile.  A CPU sample taken
 * while the overhead governor slowed the clock stands for divisor of
 * them. */
static uint64_t sample_weight(const struct session *s, const struct raw_sample *sample)
{
	unsigned int divisor = governor__divisor_at(&s->governor, sample->time_ns);

	if (sample->off_cpu_ns)
		return sample->off_cpu_ns >= 1000 ? (sample->off_cpu_ns + 500) / 1000 : 1;
	if (s->options.mode == SESSION_MODE_CPU)
		return divisor;
	return divisor * ((1000000 + s->options.frequency / 2) / s->options.frequency);
}

/* The "[off-cpu] REASON" leaf of an off-CPU interval whose symbolized
 * stack is frames[0, n), root first. */
static int64_t off_cpu_leaf(struct profile *p, const uint32_t *frames, size_t n,
			    const struct raw_sample *sample)
{
	const char *kernel[MAX_STACK_DEPTH];
	size_t nr_kernel = 0;
	char name[64];

	for (size_t i = n; i-- > 0 && nr_kernel < MAX_STACK_DEPTH;) {
		const struct frame *f = &p->frames[frames[i]];

		if (f->kind != FRAME_KERNEL)
			break;
		kernel[nr_kernel++] = f->name;
	}
	snprintf(name, sizeof(name), FRAME_OFF_CPU_MARK "%s",
		 offcpu__reason(kernel, nr_kernel, sample->syscall, sample->runnable ? 0 : 1));
	return profile__intern_frame(p, name, NULL, 0, FRAME_OFF_CPU);
}

/* Symbolized raw stacks, without the process and thread prefix. */
struct stack_pool {
	uint32_t *ids;
	size_t nr, cap;
};

/* A raw stack's frames into frames (r->nr_frames of them), symbolized the
 * first time and kept in the pool. */
static int pooled_stack(struct session *s, struct profile *p, struct raw_stack *r,
			struct stack_pool *pool, uint32_t *frames)
{
	int n, err;

	if (r->symbolized >= 0) {
		memcpy(frames, pool->ids + r->symbolized, r->nr_frames * sizeof(*pool->ids));
		return 0;
	}
	n = symbolize_stack(s, p, r, frames, MAX_FRAMES);
	if (n < 0)
		return n;
	err = array__grow((void **)&pool->ids, &pool->cap, pool->nr + n, sizeof(*pool->ids));
	if (err)
		return err;
	memcpy(pool->ids + pool->nr, frames, n * sizeof(*pool->ids));
	r->symbolized = pool->nr;
	r->nr_frames = n;
	pool->nr += n;
	return 0;
}

/* The root frame of each process: its command as its main thread last
 * called itself, and in a profile of several processes its rank or worker
 * number (process_table__label()). */
static int name_processes(struct session *s, struct profile *p)
{
	size_t sampled = 0;

	for (size_t i = 0; i < s->processes.nr; i++) {
		struct tracked_process *proc = &s->processes.processes[i];
		bool named = false;

		sampled += proc->records > 0;
		for (size_t k = s->nr_threads; k-- > 0 && !named;) {
			if (s->threads[k].process != i || s->threads[k].tid != (uint32_t)proc->pid)
				continue;
			snprintf(proc->comm, sizeof(proc->comm), "%s", s->threads[k].comm);
			named = true;
		}
		for (size_t k = 0; k < s->nr_threads && !named && !proc->comm[0]; k++)
			if (s->threads[k].process == i)
				snprintf(proc->comm, sizeof(proc->comm), "%s", s->threads[k].comm);
	}
	process_table__assign_roles(&s->processes);
	for (size_t i = 0; i < s->processes.nr; i++) {
		char label[TASK_COMM_LEN + 64];
		int64_t id;

		process_table__label(&s->processes, i, sampled > 1, s->options.per_process, label,
				     sizeof(label));
		id = profile__intern_frame(p, label, NULL, 0, FRAME_PROCESS);
		if (id < 0)
			return id;
		s->process_frames[i] = id;
	}
	p->processes = sampled;
	return 0;
}

/* The buffers of one build: the frames of the stack being made, the
 * profile's stack of each raw stack where it is the same for every sample
 * (-1 until made), each thread's frame, and the symbolized raw stacks. */
struct profile_build {
	uint32_t *frames;
	int64_t *stack_of_raw, *thread_frame;
	struct stack_pool pool;
};

/* The profile's unit, span, clock and the counters of what was lost. */
static void set_profile_header(struct session *s, struct profile *p, const uint64_t *counters)
{
	p->unit = s->options.mode == SESSION_MODE_CPU ? UNIT_SAMPLES : UNIT_MICROSECONDS;
	p->start_ns = s->start_ns;
	p->duration_ns = s->end_ns - s->start_ns;
	p->frequency = s->options.frequency;
	p->stack_limit = s->unwind_tables ? UNWIND_MAX_FRAMES : MAX_STACK_DEPTH;
	p->random_intervals = s->clock.random;
	p->samples_taken = counters[COUNTER_SAMPLES] > s->warm_up_dropped
			       ? counters[COUNTER_SAMPLES] - s->warm_up_dropped
			       : 0;
	p->samples_lost = counters[COUNTER_LOST_RINGBUF];
	p->stack_errors = counters[COUNTER_USER_STACK_ERROR] + counters[COUNTER_KERNEL_STACK_ERROR];
	p->off_cpu_intervals = counters[COUNTER_OFFCPU];
	p->off_cpu_short = counters[COUNTER_OFFCPU_SHORT];
	p->off_cpu_short_ns = counters[COUNTER_OFFCPU_SHORT_NS];
	p->off_cpu_lost = counters[COUNTER_LOST_OFFCPU];
	if (s->options.mode == SESSION_MODE_OFF_CPU)
		p->frequency = 0;

	p->children_followed = counters[COUNTER_CHILDREN];
	p->children_lost = counters[COUNTER_CHILDREN_FULL];
}

/* Every thread's "comm/tid" frame, for --per-thread stacks. */
static int intern_thread_frames(struct session *s, struct profile *p, int64_t *thread_frame)
{
	for (size_t i = 0; i < s->nr_threads; i++) {
		char name[TASK_COMM_LEN + 16];

		snprintf(name, sizeof(name), "%s/%u", s->threads[i].comm, s->threads[i].tid);
		thread_frame[i] = profile__intern_frame(p, name, NULL, 0, FRAME_THREAD);
		if (thread_frame[i] < 0)
			return thread_frame[i];
	}
	return 0;
}

/* Symbolizes every raw stack and names the processes by what they ran
 * (rank, DataLoader worker). */
static int symbolize_and_name_processes(struct session *s, struct profile *p,
					struct profile_build *b)
{
	int err;

	for (size_t i = 0; i < s->processes.nr; i++)
		if (s->processes.processes[i].python)
			python_reader__read_thread_names(s->processes.processes[i].python);
	for (size_t i = 0; i < s->nr_raw_stacks; i++)
		b->stack_of_raw[i] = -1;
	err = resolve_addresses(s, p);
	if (err)
		return err;
	{
		size_t resolved, reused, cached;

		symbol_share__counts(s->processes.share, &resolved, &reused, &cached);
		status__debug("symbols: %zu addresses in files resolved (%zu of them named as an "
			      "earlier run stored them), %zu more found resolved by another of "
			      "the %zu processes",
			      resolved, cached, reused, s->processes.nr);
	}
	/* What each process ran names its role (rank, DataLoader worker). */
	for (size_t i = 0; i < s->nr_raw_stacks; i++) {
		struct raw_stack *r = &s->raw_stacks[i];

		err = pooled_stack(s, p, r, &b->pool, b->frames);
		if (err)
			return err;
		process_table__mark_stack(&s->processes.processes[r->process], p, b->frames,
					  r->nr_frames);
	}
	return name_processes(s, p);
}

/* The profile's stack of a sample: its process (and thread) frame, its
 * symbolized frames and, for an off-CPU interval, the wait's leaf.  The
 * stack id, or -errno. */
static int64_t sample_stack(struct session *s, struct profile *p, struct profile_build *b,
			    const struct raw_sample *sample)
{
	const struct raw_thread *t = &s->threads[sample->thread];
	struct raw_stack *r = &s->raw_stacks[sample->stack];
	uint32_t *frames = b->frames;
	size_t prefix = 0;
	int64_t stack;
	int n, err;

	frames[prefix++] = s->process_frames[t->process];
	if (s->options.per_thread)
		frames[prefix++] = b->thread_frame[sample->thread];
	err = pooled_stack(s, p, r, &b->pool, frames + prefix);
	if (err)
		return err;
	n = r->nr_frames;
	if (sample->off_cpu_ns) {
		int64_t leaf;

		/* The stack was taken inside the probe: its own
		 * frames are not where the thread waits. */
		while (n && p->frames[frames[prefix + n - 1]].kind == FRAME_KERNEL &&
		       !strncmp(p->frames[frames[prefix + n - 1]].name, "bpf_", 4))
			n--;
		leaf = off_cpu_leaf(p, frames + prefix, n, sample);

		if (leaf < 0)
			return leaf;
		frames[prefix + n++] = leaf;
	}
	stack = profile__intern_stack(p, frames, prefix + n);
	if (stack >= 0 && !s->options.per_thread && !sample->off_cpu_ns)
		b->stack_of_raw[sample->stack] = stack;
	return stack;
}

/* Every sample into the profile, on its thread and stack. */
static int add_samples(struct session *s, struct profile *p, struct profile_build *b)
{
	for (size_t i = 0; i < s->nr_samples; i++) {
		const struct raw_sample *sample = &s->samples[i];
		const struct raw_thread *t = &s->threads[sample->thread];
		const struct tracked_process *proc;
		int64_t thread, stack = b->stack_of_raw[sample->stack];
		int err;

		proc = &s->processes.processes[t->process];
		thread = profile__add_thread(
		    p, proc->pid, t->tid,
		    python_reader__thread_name(proc->python, t->tid, t->comm, proc->comm));
		if (thread < 0)
			return thread;
		if (stack < 0 || s->options.per_thread || sample->off_cpu_ns) {
			stack = sample_stack(s, p, b, sample);
			if (stack < 0)
				return stack;
		}
		err = profile__add_sample(p, thread, stack, sample->time_ns - s->start_ns,
					  sample_weight(s, sample));
		if (err)
			return err;
	}
	return 0;
}

int session_profile__build(struct session *s, const uint64_t *counters, struct profile **out)
{
	struct profile_build b = {0};
	struct profile *p = NULL;
	int err;

	p = profile__new();
	b.frames = malloc((MAX_FRAMES + 3) * sizeof(*b.frames));
	b.stack_of_raw =
	    malloc((s->nr_raw_stacks ? s->nr_raw_stacks : 1) * sizeof(*b.stack_of_raw));
	b.thread_frame = malloc((s->nr_threads ? s->nr_threads : 1) * sizeof(*b.thread_frame));
	free(s->process_frames);
	s->process_frames =
	    malloc((s->processes.nr ? s->processes.nr : 1) * sizeof(*s->process_frames));
	if (!p || !b.frames || !b.stack_of_raw || !b.thread_frame || !s->process_frames) {
		err = -ENOMEM;
		goto cleanup;
	}
	set_profile_header(s, p, counters);
	err = intern_thread_frames(s, p, b.thread_frame);
	if (!err)
		err = symbolize_and_name_processes(s, p, &b);
	if (!err)
		err = add_samples(s, p, &b);
	if (err)
		goto cleanup;
	profile__sort_samples(p);
	s->profile = p;
	*out = p;
	p = NULL;
	err = 0;
cleanup:
	profile__free(p);
	free(b.frames);
	free(b.pool.ids);
	free(b.stack_of_raw);
	free(b.thread_frame);
	return err;
}

static int compare_launches(const void *a, const void *b)
{
	const struct raw_launch *x = a, *y = b;

	if (x->correlation != y->correlation)
		return x->correlation < y->correlation ? -1 : 1;
	return x->time_ns < y->time_ns ? -1 : x->time_ns > y->time_ns;
}

/* Frames of the CUDA stack itself (the agent, CUPTI, the driver) sit above
 * the API call that launched the work; they are cut from launch stacks. */
static bool is_cuda_internal(const struct module *m)
{
	return m && (strstr(m->name, "llmprof") || strstr(m->name, "libcupti") ||
		     !strncmp(m->name, "libcuda.so", 10));
}

static int stack_frames(struct session *s, uint32_t thread, const struct raw_stack *raw,
			uint32_t *frames, size_t max, size_t *depth);

static bool is_cuda_runtime(const struct module *m)
{
	return m && !strncmp(m->name, "libcudart", 9);
}

int session__launch_stack(void *ctx, uint32_t correlation, uint32_t tid, uint64_t time_ns,
			  uint32_t *frames, size_t max, size_t *depth)
{
	struct session *s = ctx;
	struct raw_launch key = {.correlation = correlation}, *launch;
	struct symbolizer *symbolizer;
	struct raw_stack trimmed;
	size_t lo = 0, hi;

	if (!s->profile)
		return -EINVAL;
	if (!s->launches_sorted) {
		qsort(s->launches, s->nr_launches, sizeof(*s->launches), compare_launches);
		s->launches_sorted = true;
	}
	hi = s->nr_launches;
	while (lo < hi) {
		size_t mid = (lo + hi) / 2;

		if (compare_launches(&s->launches[mid], &key) < 0)
			lo = mid + 1;
		else
			hi = mid;
	}
	if (lo == s->nr_launches || s->launches[lo].correlation != correlation) {
		status__debug("no launch stack for correlation %u (of %zu launches, first %u)",
			      correlation, s->nr_launches,
			      s->nr_launches ? s->launches[0].correlation : 0);
		return -ENOENT;
	}
	/* Every process counts its ids from 1: of the launches with this id,
	 * the one on the agent's thread (any when tid is 0), nearest in time. */
	launch = NULL;
	for (size_t i = lo; i < s->nr_launches && s->launches[i].correlation == correlation; i++) {
		struct raw_launch *l = &s->launches[i];

		if ((!tid || s->threads[l->thread].tid == tid) &&
		    (!launch || llabs((long long)(l->time_ns - time_ns)) <
				    llabs((long long)(launch->time_ns - time_ns))))
			launch = l;
	}
	if (!launch)
		return -ENOENT;
	trimmed = s->raw_stacks[launch->stack];
	symbolizer = s->processes.processes[trimmed.process].symbolizer;
	while (symbolizer && trimmed.nr_user > 1 &&
	       is_cuda_internal(symbolizer__module_of(symbolizer, trimmed.addrs[0], NULL))) {
		trimmed.addrs++;
		trimmed.nr_user--;
	}
	/* Of the runtime's own frames keep the API entry the program called. */
	while (symbolizer && trimmed.nr_user > 2 &&
	       is_cuda_runtime(symbolizer__module_of(symbolizer, trimmed.addrs[0], NULL)) &&
	       is_cuda_runtime(symbolizer__module_of(symbolizer, trimmed.addrs[1], NULL))) {
		trimmed.addrs++;
		trimmed.nr_user--;
	}
	return stack_frames(s, launch->thread, &trimmed, frames, max, depth);
}

int session__stack_frames(const struct session *session, uint32_t thread, uint32_t stack,
			  uint32_t *frames, size_t max, size_t *depth)
{
	struct session *s = (struct session *)session;

	if (!s->profile)
		return -EINVAL;
	if (thread >= s->nr_threads || stack >= s->nr_raw_stacks)
		return -ENOENT;
	return stack_frames(s, thread, &s->raw_stacks[stack], frames, max, depth);
}

/* The process (and with --per-thread the thread) frame, then the
 * symbolized raw stack, root first, into the finished profile. */
static int stack_frames(struct session *s, uint32_t thread, const struct raw_stack *raw,
			uint32_t *frames, size_t max, size_t *depth)
{
	size_t prefix = 0;
	int n;

	if (max < 3)
		return -ENOSPC;
	frames[prefix++] = s->process_frames[s->threads[thread].process];
	if (s->options.per_thread) {
		const struct raw_thread *t = &s->threads[thread];
		char name[TASK_COMM_LEN + 16];
		int64_t id;

		snprintf(name, sizeof(name), "%s/%u", t->comm, t->tid);
		id = profile__intern_frame(s->profile, name, NULL, 0, FRAME_THREAD);
		if (id < 0)
			return id;
		frames[prefix++] = id;
	}
	n = symbolize_stack(s, s->profile, raw, frames + prefix, max - prefix);
	if (n < 0)
		return n;
	*depth = prefix + n;
	return 0;
}
