// SPDX-License-Identifier: GPL-2.0
/* CFI unwinding of copied user stacks through libdwfl; see unwinder.h. */
#include <dwarf.h>
#include <elfutils/libdwfl.h>
#include <linux/types.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "base/clock.h"
#include "status.h"
#include "sampler.h"
#include "sampling/symbolizer.h"
#include "sampling/unwinder.h"

struct unwinder {
	struct symbolizer *symbolizer;
	pid_t pid;
	bool complete_with_fp;
	Dwfl *dwfl;		  /* the symbolizer's, once attached to our callbacks */
	uint64_t dwfl_generation; /* of the symbolizer session attached to */
	bool attach_failed;

	/* The sample being unwound. */
	uint32_t tid;
	const struct user_stack_copy *copy;
	uint64_t sp, copy_end;
	uint64_t *frames;
	size_t nr_frames, max_frames;
	uint64_t last_sp;
	bool past_copy;	    /* a read above the copy failed: the stack goes on */
	bool last_complete; /* the CFI reached the outermost frame */

	struct unwind_stats stats;
};

static pid_t next_thread(Dwfl *dwfl, void *dwfl_arg, void **thread_argp)
{
	struct unwinder *u = dwfl_arg;

	if (*thread_argp)
		return 0;
	*thread_argp = u;
	return u->tid;
}

static bool get_thread(Dwfl *dwfl, pid_t tid, void *dwfl_arg, void **thread_argp)
{
	struct unwinder *u = dwfl_arg;

	*thread_argp = u;
	return (uint32_t)tid == u->tid;
}

/* Stack words come from the copy; code and read-only data from the files
 * the symbolizer holds open (what the target maps is what is on disk). */
static bool memory_read(Dwfl *dwfl, Dwarf_Addr addr, Dwarf_Word *result, void *dwfl_arg)
{
	struct unwinder *u = dwfl_arg;
	const struct module *m;
	uint64_t offset;

	if (addr >= u->sp && addr + sizeof(*result) <= u->copy_end &&
	    addr + sizeof(*result) > addr) {
		memcpy(result, u->copy->data + (addr - u->sp), sizeof(*result));
		return true;
	}
	m = symbolizer__module_of(u->symbolizer, addr, &offset);
	if (m && m->fd >= 0 && pread(m->fd, result, sizeof(*result), offset) == sizeof(*result))
		return true;
	/* libdwfl takes a return address it cannot read for the end of the
	 * stack: note that it was not. */
	if (addr >= u->copy_end)
		u->past_copy = true;
	return false;
}

static bool set_initial_registers(Dwfl_Thread *thread, void *thread_arg)
{
	struct unwinder *u = thread_arg;
	Dwarf_Word regs[UNWIND_NR_REGS];

	for (int i = 0; i < UNWIND_NR_REGS; i++)
		regs[i] = u->copy->regs[i];
	if (!dwfl_thread_state_registers(thread, 0, UNWIND_NR_REGS, regs))
		return false;
	dwfl_thread_state_register_pc(thread, u->copy->regs[UNWIND_REG_RIP]);
	return true;
}

static const Dwfl_Thread_Callbacks thread_callbacks = {
    .next_thread = next_thread,
    .get_thread = get_thread,
    .memory_read = memory_read,
    .set_initial_registers = set_initial_registers,
};

int unwinder__new(struct symbolizer *symbolizer, pid_t pid, bool complete_with_fp,
		  struct unwinder **out)
{
	struct unwinder *u = calloc(1, sizeof(*u));

	if (!u)
		return -ENOMEM;
	u->symbolizer = symbolizer;
	u->pid = pid;
	u->complete_with_fp = complete_with_fp;
	*out = u;
	return 0;
}

void unwinder__free(struct unwinder *u)
{
	/* The Dwfl, and the process state attached to it, belong to the
	 * symbolizer. */
	free(u);
}

const struct unwind_stats *unwinder__stats(const struct unwinder *u)
{
	return &u->stats;
}

static int on_frame(Dwfl_Frame *frame, void *arg)
{
	struct unwinder *u = arg;
	bool activation = false;
	Dwarf_Addr pc;
	Dwarf_Word sp;

	if (!dwfl_frame_pc(frame, &pc, &activation))
		return DWARF_CB_ABORT;
	if (u->nr_frames) {
		/* Each caller's frame lies above its callee's: anything else
		 * is a guess gone wrong (a frame pointer that was none). */
		if (!pc || dwfl_frame_reg(frame, UNWIND_REG_RSP, &sp) || sp <= u->last_sp)
			return DWARF_CB_ABORT;
		u->last_sp = sp;
		/* Past a signal frame the pc is where the thread was
		 * interrupted, not a return address; the symbolizer looks up
		 * pc - 1 for every frame but the leaf. */
		if (activation)
			pc++;
	}
	u->frames[u->nr_frames++] = pc;
	return u->nr_frames < u->max_frames ? DWARF_CB_OK : DWARF_CB_ABORT;
}

static int attach(struct unwinder *u)
{
	struct Dwfl *dwfl;
	int err;

	if (u->attach_failed)
		return -ENOEXEC;
	/* Modules seen since the last refresh are reported here, so the
	 * CFI of a library dlopen()ed after attach is used. */
	err = symbolizer__dwfl(u->symbolizer, &dwfl);
	if (err)
		return err;
	/* The symbolizer begins a new session after letting the debug
	 * information go (symbolizer__resolve_all()). */
	if (u->dwfl && u->dwfl_generation == symbolizer__dwfl_generation(u->symbolizer))
		return 0;
	u->dwfl = NULL;
	if (!dwfl_attach_state(dwfl, NULL, u->pid, &thread_callbacks, u)) {
		status__warn("cannot unwind with libdwfl: %s; using frame pointers",
			     dwfl_errmsg(-1));
		u->attach_failed = true;
		return -ENOEXEC;
	}
	u->dwfl = dwfl;
	u->dwfl_generation = symbolizer__dwfl_generation(u->symbolizer);
	return 0;
}

/* The length of the run of equal addresses that ends at unwound[i] and
 * fp[j], walking towards the leaf: how well the two stacks agree there. */
static size_t run_length(const uint64_t *unwound, size_t i, const uint64_t *fp, size_t j)
{
	size_t n = 0;

	while (unwound[i - n] == fp[j - n]) {
		n++;
		if (n > i || n > j)
			break;
	}
	return n;
}

/*
 * Completes the unwound stack with the frame-pointer chain.  The chain
 * skips the frames without a frame pointer, so it is a subsequence of the
 * true stack, and the unwound stack a prefix of it: find the outermost
 * unwound address that the chain also holds; the unwound frames past it are
 * ones the chain skipped, and the chain's frames past it are their callers.
 * What lies between (callers beyond the copy without frame pointers) is
 * lost.  Returns the frames appended.
 */
static size_t complete_from_fp(struct unwinder *u, const uint64_t *fp, size_t nr_fp)
{
	size_t best_j = 0, best_run = 0, added = 0;
	ssize_t best_i = -1;

	for (ssize_t i = (ssize_t)u->nr_frames - 1; i >= 0 && best_i < 0; i--) {
		for (size_t j = 0; j < nr_fp; j++) {
			size_t run;

			if (fp[j] != u->frames[i])
				continue;
			/* Recursion repeats return addresses: align on the
			 * longest agreeing run. */
			run = run_length(u->frames, i, fp, j);
			if (run > best_run) {
				best_run = run;
				best_i = i;
				best_j = j;
			}
		}
	}
	if (best_i < 0)
		return 0;
	for (size_t j = best_j + 1; j < nr_fp && u->nr_frames < u->max_frames; j++) {
		/* A chain that runs through code without frame pointers can
		 * turn to garbage: stop at the first address in no code. */
		if (!symbolizer__covers(u->symbolizer, fp[j]))
			break;
		u->frames[u->nr_frames++] = fp[j];
		added++;
	}
	return added;
}

int unwinder__unwind(struct unwinder *u, uint32_t tid, const struct user_stack_copy *copy,
		     size_t copy_bytes, uint64_t *addrs, uint16_t *nr, size_t max)
{
	uint64_t fp[MAX_STACK_DEPTH], frames[MAX_STACK_DEPTH], start = clock__thread_cpu_ns();
	size_t nr_fp = *nr < MAX_STACK_DEPTH ? *nr : MAX_STACK_DEPTH;
	bool stale = false;
	int err, ret;

	u->stats.samples++;
	u->last_complete = false;
	u->stats.record_bytes += sizeof(struct sample_event) + copy_bytes;
	if (copy_bytes < sizeof(*copy) || copy->error || !copy->size ||
	    copy->size > copy_bytes - sizeof(*copy)) {
		u->stats.copy_failed++;
		return 0; /* the frame-pointer chain stays */
	}
	err = attach(u);
	if (err) {
		u->stats.copy_failed++;
		return err == -ENOEXEC ? 0 : err;
	}
	memcpy(fp, addrs, nr_fp * sizeof(*fp));
	u->stats.copy_bytes += copy->size;
	u->tid = tid;
	u->copy = copy;
	u->sp = copy->regs[UNWIND_REG_RSP];
	u->copy_end = u->sp + copy->size;
	u->frames = frames;
	u->nr_frames = 0;
	u->max_frames = max < MAX_STACK_DEPTH ? max : MAX_STACK_DEPTH;
	u->last_sp = u->sp;
	u->past_copy = false;

	ret = dwfl_getthread_frames(u->dwfl, tid, on_frame, u);
	if (ret == 0 && u->past_copy)
		ret = -1;
	if (ret == 0) {
		u->stats.complete++;
		u->last_complete = true;
	} else if (u->nr_frames >= u->max_frames) {
		u->stats.truncated++;
	} else if (u->complete_with_fp && complete_from_fp(u, fp, nr_fp)) {
		u->stats.completed_by_fp++;
	} else {
		u->stats.truncated++;
	}
	if (ret &&
	    (!u->nr_frames || !symbolizer__covers(u->symbolizer, u->frames[u->nr_frames - 1]))) {
		/* Into code no module covers: a library mapped since the last
		 * refresh, whose CFI the caller can still fetch. */
		stale = true;
	}
	if (!u->nr_frames) {
		/* Not even the leaf: keep what the frame pointers gave. */
		u->stats.ns += clock__thread_cpu_ns() - start;
		return stale ? UNWIND_STALE : 0;
	}
	memcpy(addrs, frames, u->nr_frames * sizeof(*addrs));
	*nr = u->nr_frames;
	u->stats.frames += u->nr_frames;
	u->stats.ns += clock__thread_cpu_ns() - start;
	return stale ? UNWIND_STALE : 0;
}

bool unwinder__last_complete(const struct unwinder *u)
{
	return u->last_complete;
}

void unwinder__report(const struct unwinder *u)
{
	const struct unwind_stats *st = &u->stats;
	double n = st->samples ? st->samples : 1;

	status__debug(
	    "unwind: %llu samples with a stack copy of %.0f bytes (records of %.0f bytes, "
	    "%.0f written), %.1f us and %.1f frames per sample; %.1f%% complete by CFI, "
	    "%.1f%% completed from frame pointers, %.1f%% cut short, %.1f%% without a copy",
	    (unsigned long long)st->samples, st->copy_bytes / n, st->record_bytes / n,
	    sizeof(struct sample_event) + sizeof(struct user_stack_copy) + st->copy_bytes / n,
	    st->ns / n / 1000.0, st->frames / n, 100.0 * st->complete / n,
	    100.0 * st->completed_by_fp / n, 100.0 * st->truncated / n,
	    100.0 * st->copy_failed / n);
}
