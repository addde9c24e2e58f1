// SPDX-License-Identifier: GPL-2.0
/* The records that BPF sends, drained from the ring buffer: each one's
 * stacks completed (unwound, Python frames read) while the target still
 * maps their code, deduplicated into raw stacks and kept as a raw sample
 * or launch, or passed to the probe family that handles its kind. */
#include <bpf/libbpf.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "array.h"
#include "offcpu.h"
#include "sampler.h"
#include "targets.h"
#include "sampling/process_table.h"
#include "sampling/python_reader.h"
#include "sampling/session_private.h"
#include "sampling/symbolizer.h"
#include "sampling/unwind_compare.h"
#include "sampling/unwind_table.h"
#include "sampling/unwinder.h"

#include "sampler.skel.h"

#define REFRESH_INTERVAL_NS 200000000ULL

static int record_thread(struct session *s, uint32_t tid, uint32_t process, const char *comm)
{
	for (size_t i = s->nr_threads; i-- > 0;) {
		if (s->threads[i].tid == tid && s->threads[i].process == process) {
			/* Threads rename themselves (pthread_setname_np);
			 * keep the latest name. */
			memcpy(s->threads[i].comm, comm, TASK_COMM_LEN);
			return i;
		}
	}
	if (array__grow((void **)&s->threads, &s->cap_threads, s->nr_threads + 1,
			sizeof(*s->threads)))
		return -ENOMEM;
	s->threads[s->nr_threads].tid = tid;
	s->threads[s->nr_threads].process = process;
	memcpy(s->threads[s->nr_threads].comm, comm, TASK_COMM_LEN);
	s->threads[s->nr_threads].thinned_ns = s->threads[s->nr_threads].kept_ns = 0;
	return s->nr_threads++;
}

static uint64_t hash_addrs(const uint64_t *addrs, size_t n)
{
	uint64_t h = 0xcbf29ce484222325ULL;

	for (size_t i = 0; i < n; i++)
		h = (h ^ addrs[i]) * 0x100000001b3ULL;
	return h ^ n;
}

/* Replaces the frame-pointer chain in addrs with the stack unwound from the
 * sample's stack copy.  Unwinding reads CFI now, not at the end, so the code
 * the stack runs through must be known: refresh once where it was not. */
static int unwind_sample(struct session *s, struct tracked_process *proc,
			 const struct sample_event *e, size_t size, size_t copy_offset,
			 uint64_t *addrs, uint16_t *nr_user)
{
	uint16_t nr_fp = *nr_user;
	int err;

	for (int tries = 0;; tries++) {
		err = unwinder__unwind(
		    proc->unwinder, e->tid, (const void *)((const char *)(e + 1) + copy_offset),
		    size - sizeof(*e) - copy_offset, addrs, nr_user, MAX_STACK_DEPTH);
		if (err != UNWIND_STALE || tries || proc->last_refresh_ns >= e->time_ns)
			return err < 0 ? err : 0;
		session__refresh_process(s, proc, clock__monotonic_ns());
		memcpy(addrs, e->user_stack, nr_fp * sizeof(*addrs));
		*nr_user = nr_fp;
	}
}

/* The table entry of the process a record came from; one that joined the
 * target set in the kernel (a forked child) is added at its first record. */
static int64_t session_process(struct session *s, pid_t pid)
{
	int64_t found = process_table__find(&s->processes, pid);
	struct target_info info = {0};
	uint32_t key = pid;

	if (found >= 0)
		return found;
	bpf_map__lookup_elem(s->skel->maps.targets, &key, sizeof(key), &info, sizeof(info), 0);
	found =
	    process_table__get(&s->processes, pid, info.parent, info.flags & TARGET_FLAG_SELECTED);
	if (found >= 0)
		session__refresh_process(s, &s->processes.processes[found], clock__monotonic_ns());
	return found;
}

/* The user stack that the BPF unwinder walked, into addrs; its length. */
static uint16_t bpf_unwound_stack(struct session *s, const struct unwind_frames *frames,
				  uint64_t *addrs)
{
	uint32_t nr = frames->nr < UNWIND_MAX_FRAMES ? frames->nr : UNWIND_MAX_FRAMES;

	if (frames->magic != UNWIND_FRAMES_MAGIC)
		return 0;
	memcpy(addrs, frames->frames, nr * sizeof(*addrs));
	s->bpf_unwind.samples++;
	s->bpf_unwind.frames += nr;
	s->bpf_unwind.by_rules += frames->by_rules;
	if (frames->end == UNWIND_END_OUTERMOST)
		s->bpf_unwind.whole++;
	else if (frames->end == UNWIND_END_DEPTH)
		s->bpf_unwind.cut++;
	else if (frames->end == UNWIND_END_DISTURBED)
		s->bpf_unwind.disturbed++;
	return nr;
}

/* The sample's user stack into addrs, as BPF gave it: the frame-pointer
 * chain, or the walk of the BPF unwinder where it ran.  Its length. */
static uint16_t captured_user_stack(struct session *s, const struct sample_event *e, size_t size,
				    uint64_t *addrs)
{
	uint16_t nr_user = e->user_stack_bytes > 0 ? e->user_stack_bytes / sizeof(__u64) : 0;

	memcpy(addrs, e->user_stack, nr_user * sizeof(__u64));
	if (s->unwind_tables && size >= sizeof(*e) + sizeof(struct unwind_frames)) {
		nr_user = bpf_unwound_stack(s, (const struct unwind_frames *)(e + 1), addrs);
		unwind_tables__note_stack(s->unwind_tables, e->pid, addrs, nr_user);
	}
	return nr_user;
}

/* Notes unknown code now, while the target still maps it: after it exits
 * or unloads a library there is nothing left to read. */
static void note_unknown_code(struct session *s, struct tracked_process *proc,
			      const struct sample_event *e, const uint64_t *addrs, uint16_t nr_user)
{
	for (uint16_t i = 0; i < nr_user; i++) {
		if (proc->symbolizer && !symbolizer__covers(proc->symbolizer, addrs[i])) {
			proc->unknown_since_refresh = true;
			break;
		}
	}
	/* The first unknown address of a process is looked up at once (a
	 * command that just exec'd); later ones at most every interval. */
	if (proc->unknown_since_refresh &&
	    (!proc->refreshed_for_unknown ||
	     e->time_ns > proc->last_refresh_ns + REFRESH_INTERVAL_NS)) {
		proc->refreshed_for_unknown = true;
		session__refresh_process(s, proc, e->time_ns);
	}
}

/* A stack copy, where the sample has one, gives the user stack by the
 * unwind information of each binary; under --unwind compare (a copy after
 * the BPF walk), the reference that the walk is checked against. */
static int unwind_stack_copy(struct session *s, struct tracked_process *proc,
			     const struct sample_event *e, size_t size, uint64_t *addrs,
			     uint16_t *nr_user)
{
	if (proc->unwinder && s->unwind_tables &&
	    size > sizeof(*e) + sizeof(struct unwind_frames)) {
		uint64_t reference[MAX_STACK_DEPTH];
		uint16_t nr_reference = 0;
		int err = unwind_sample(s, proc, e, size, sizeof(struct unwind_frames), reference,
					&nr_reference);

		if (err)
			return err;
		unwind_compare__sample(&s->unwind_compare, proc->symbolizer, addrs, *nr_user,
				       reference, nr_reference,
				       unwinder__last_complete(proc->unwinder));
	} else if (proc->unwinder && size > sizeof(*e)) {
		return unwind_sample(s, proc, e, size, 0, addrs, nr_user);
	}
	return 0;
}

/* The sample's Python frames' keys into keys: their number or -errno.
 * Code objects are read now, while the target still has them. */
static int python_frames(struct tracked_process *proc, const struct sample_event *e, uint64_t *keys)
{
	int nr;

	if (!proc->python)
		return 0;
	nr = python_reader__keys(proc->python, &e->python, e->time_ns, keys, PYTHON_MAX_FRAMES);
	if (nr > 0)
		python_reader__saw_thread(proc->python, e->tid, e->time_ns);
	return nr;
}

/* A GPU launch's CPU stack, kept by its correlation id. */
static int keep_launch(struct session *s, const struct sample_event *e, int thread, uint32_t stack)
{
	struct raw_launch *launch;
	int err = array__grow((void **)&s->launches, &s->cap_launches, s->nr_launches + 1,
			      sizeof(*s->launches));

	if (err)
		return err;
	launch = &s->launches[s->nr_launches++];
	launch->correlation = e->correlation;
	launch->thread = thread;
	launch->stack = stack;
	launch->time_ns = e->time_ns;
	s->launches_sorted = false;
	return 0;
}

/* A CPU sample or an off-CPU wait, with what its leaf will say. */
static int keep_sample(struct session *s, const struct sample_event *e, int thread, uint32_t stack)
{
	struct raw_sample *sample;
	int err = array__grow((void **)&s->samples, &s->cap_samples, s->nr_samples + 1,
			      sizeof(*s->samples));

	if (err)
		return err;
	sample = &s->samples[s->nr_samples++];
	sample->time_ns = e->time_ns;
	sample->thread = thread;
	sample->stack = stack;
	sample->off_cpu_ns = 0;
	sample->thinned = false;
	if (e->kind == SAMPLE_KIND_OFF_CPU) {
		/* What it stands for (a wait drawn in proportion to its
		 * length stands for a period); never 0: that would make it
		 * a CPU sample. */
		sample->off_cpu_ns =
		    (e->detail[OFFCPU_DETAIL_WEIGHT_NS] ? e->detail[OFFCPU_DETAIL_WEIGHT_NS]
							: e->detail[OFFCPU_DETAIL_DURATION_NS]) |
		    1;
		sample->syscall = (int64_t)e->detail[OFFCPU_DETAIL_SYSCALL] < 0 ||
					  e->detail[OFFCPU_DETAIL_SYSCALL] > INT16_MAX
				      ? -1
				      : (int16_t)e->detail[OFFCPU_DETAIL_SYSCALL];
		sample->runnable = e->detail[OFFCPU_DETAIL_STATE] == 0;
		/* A wait still open at the end is not in BPF's count. */
		sample->thinned = e->detail[OFFCPU_DETAIL_THINNING] == OFFCPU_THINNED_KEPT &&
				  !e->detail[OFFCPU_DETAIL_OPEN];
	}
	if (sample->thinned) {
		struct raw_thread *t = &s->threads[thread];

		t->kept_ns += sample->off_cpu_ns;
		if (e->detail[OFFCPU_DETAIL_THINNED_NS] > t->thinned_ns)
			t->thinned_ns = e->detail[OFFCPU_DETAIL_THINNED_NS];
	}
	return 0;
}

static uint64_t raw_stack_rehash(const void *ctx, uint32_t id)
{
	const struct session *s = ctx;

	return s->raw_stacks[id].hash;
}

static int find_raw_stack(struct session *s, uint32_t process, const uint64_t *addrs,
			  uint16_t nr_user, uint16_t nr_kernel, uint16_t nr_python, uint64_t hash,
			  uint32_t *index)
{
	size_t n = nr_user + nr_kernel + nr_python, pos;
	struct hash_index *raw_index = &s->raw_index;
	struct raw_stack *r;

	if (hash_index__reserve(raw_index, 4096, raw_stack_rehash, s))
		return -ENOMEM;
	for (pos = hash_index__first(raw_index, hash); !hash_index__empty(raw_index, pos);
	     pos = hash_index__next(raw_index, pos)) {
		r = &s->raw_stacks[hash_index__id(raw_index, pos)];
		if (r->hash == hash && r->process == process && r->nr_user == nr_user &&
		    r->nr_kernel == nr_kernel && r->nr_python == nr_python &&
		    !memcmp(r->addrs, addrs, n * sizeof(*addrs))) {
			*index = hash_index__id(raw_index, pos);
			return 0;
		}
	}
	if (array__grow((void **)&s->raw_stacks, &s->cap_raw_stacks, s->nr_raw_stacks + 1,
			sizeof(*s->raw_stacks)))
		return -ENOMEM;
	r = &s->raw_stacks[s->nr_raw_stacks];
	r->addrs = malloc((n ? n : 1) * sizeof(*addrs));
	if (!r->addrs)
		return -ENOMEM;
	memcpy(r->addrs, addrs, n * sizeof(*addrs));
	r->nr_user = nr_user;
	r->nr_kernel = nr_kernel;
	r->nr_python = nr_python;
	r->process = process;
	r->hash = hash;
	r->symbolized = -1;
	hash_index__set(raw_index, pos, s->nr_raw_stacks);
	*index = s->nr_raw_stacks++;
	return 0;
}

/* One record from the ring: its stacks resolved to a raw stack while the
 * target still maps their code, then kept by its kind. */
int session__add_record(void *ctx, void *data, size_t size)
{
	struct session *s = ctx;
	const struct sample_event *e = data;
	uint64_t addrs[UNWIND_MAX_FRAMES + MAX_STACK_DEPTH + PYTHON_MAX_FRAMES];
	uint16_t nr_user, nr_kernel = 0;
	struct tracked_process *proc;
	uint32_t stack;
	int64_t process;
	int thread, nr_python, err;

	if (size < sizeof(*e))
		return 0;
	process = session_process(s, e->pid);
	if (process < 0) {
		err = process;
		goto fail;
	}
	proc = &s->processes.processes[process];
	proc->records++;
	if (e->kernel_stack_bytes > 0)
		nr_kernel = e->kernel_stack_bytes / sizeof(__u64);
	nr_user = captured_user_stack(s, e, size, addrs);
	note_unknown_code(s, proc, e, addrs, nr_user);
	/* Taken during a warm-up that has ended (see end_warm_up()). */
	if (e->kind == SAMPLE_KIND_CPU && e->time_ns < s->start_ns) {
		s->warm_up_dropped++;
		return 0;
	}
	err = unwind_stack_copy(s, proc, e, size, addrs, &nr_user);
	if (err)
		goto fail;
	memcpy(addrs + nr_user, e->kernel_stack, nr_kernel * sizeof(__u64));
	nr_python = python_frames(proc, e, addrs + nr_user + nr_kernel);
	if (nr_python < 0) {
		err = nr_python;
		goto fail;
	}

	err = find_raw_stack(s, process, addrs, nr_user, nr_kernel, nr_python,
			     hash_addrs(addrs, nr_user + nr_kernel + nr_python) ^ process, &stack);
	if (err)
		goto fail;
	thread = record_thread(s, e->tid, process, e->comm);
	if (thread < 0) {
		err = thread;
		goto fail;
	}
	if (e->kind >= SAMPLE_KIND_MAX) {
		err = -EPROTO;
		goto fail;
	}
	if (s->handlers[e->kind].fn)
		err = s->handlers[e->kind].fn(s->handlers[e->kind].ctx, e, thread, stack);
	else if (e->kind == SAMPLE_KIND_LAUNCH)
		err = keep_launch(s, e, thread, stack);
	else
		err = keep_sample(s, e, thread, stack);
	if (err)
		goto fail;
	return 0;
fail:
	s->drain_error = err;
	return err;
}
