// SPDX-License-Identifier: GPL-2.0
/*
 * Chrome's Trace Event Format (the JSON that Perfetto UI and chrome://tracing
 * open): a track per thread whose samples become nested B/E slices of their
 * stacks, consecutive samples that share frames keeping them open as
 * speedscope's evented profiles do; off-CPU intervals as slices of their
 * real length; a track per GPU stream with kernels, copies and sets as
 * complete ("X") events at their real times, with flow arrows from the
 * thread that launched them; process and thread names and ranks as
 * metadata.  Times are microseconds since the profile's start.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "base/json_writer.h"
#include "profile/output.h"

/* GPU tracks are processes of their own, numbered above any Linux PID
 * (PID_MAX_LIMIT is 2^22), so they never merge with a real process. */
#define GPU_TRACK_ID_BASE 1000000000u
/* A thread sampled again within this many periods ran in between. */
#define RUN_GAP_PERIODS 3

struct chrome_writer {
	const struct profile *profile;
	FILE *out;
	bool first;	/* no event written yet: no comma before the next */
	uint32_t *open; /* frames of the open slices on the current thread */
	size_t nr_open;
	uint64_t open_end_ns; /* where the thread's last slice ends */
	bool sliced;	      /* the thread has a slice */
	bool after_off_cpu;   /* and the last one is an off-CPU interval */
};

static void write_string(FILE *out, const char *text)
{
	json_writer__string(out, text, 0);
}

/* Microseconds with three decimals: exact for nanoseconds, and the same
 * text for the same input on every machine. */
static void write_time(FILE *out, const char *key, uint64_t ns)
{
	fprintf(out, ",\"%s\":%" PRIu64 ".%03" PRIu64, key, ns / 1000, ns % 1000);
}

/* Starts an event: {"ph":PH,"pid":P,"tid":T,"ts":TS */
static void begin_event(struct chrome_writer *w, char phase, uint32_t pid, uint32_t tid,
			uint64_t ts_ns)
{
	fputs(w->first ? "\n" : ",\n", w->out);
	w->first = false;
	fprintf(w->out, "{\"ph\":\"%c\",\"pid\":%" PRIu32 ",\"tid\":%" PRIu32, phase, pid, tid);
	write_time(w->out, "ts", ts_ns);
}

static void metadata(struct chrome_writer *w, uint32_t pid, uint32_t tid, const char *what,
		     const char *key, const char *text, int64_t number)
{
	begin_event(w, 'M', pid, tid, 0);
	fprintf(w->out, ",\"name\":\"%s\",\"args\":{\"%s\":", what, key);
	if (text)
		write_string(w->out, text);
	else
		fprintf(w->out, "%" PRId64, number);
	fputs("}}", w->out);
}

static const char *kind_category(enum frame_kind kind)
{
	switch (kind) {
	case FRAME_INLINE:
		return "inline";
	case FRAME_KERNEL:
		return "kernel";
	case FRAME_JIT:
		return "jit";
	case FRAME_PYTHON:
		return "python";
	case FRAME_GPU:
		return "gpu";
	case FRAME_UNKNOWN:
		return "unknown";
	default:
		return "native";
	}
}

static bool is_off_cpu_frame(const struct frame *f)
{
	return f->kind == FRAME_OFF_CPU;
}

/* The process and thread are the track: their frames are not slices. */
static bool is_track_frame(const struct frame *f)
{
	return f->kind == FRAME_PROCESS || f->kind == FRAME_THREAD;
}

static void close_slices(struct chrome_writer *w, const struct thread *t, size_t keep,
			 uint64_t at_ns)
{
	while (w->nr_open > keep) {
		w->nr_open--;
		begin_event(w, 'E', t->pid, t->tid, at_ns);
		fputc('}', w->out);
	}
}

static void open_slice(struct chrome_writer *w, const struct thread *t, uint32_t frame,
		       uint64_t at_ns)
{
	const struct frame *f = &w->profile->frames[frame];
	char text[512];

	begin_event(w, 'B', t->pid, t->tid, at_ns);
	fputs(",\"name\":", w->out);
	write_string(w->out, frame__text(f, text, sizeof(text)));
	fprintf(w->out, ",\"cat\":\"%s\"",
		is_off_cpu_frame(f) ? "off-cpu" : kind_category(f->kind));
	if (f->file) {
		fputs(",\"args\":{\"file\":", w->out);
		write_string(w->out, f->file);
		if (f->line)
			fprintf(w->out, ",\"line\":%" PRIu32, f->line);
		fputc('}', w->out);
	}
	fputc('}', w->out);
	w->open[w->nr_open++] = frame;
}

/* A sample's length on the timeline, in nanoseconds. */
static uint64_t sample_ns(const struct profile *p, uint64_t weight)
{
	switch (p->unit) {
	case UNIT_MICROSECONDS:
		return weight * 1000;
	case UNIT_NANOSECONDS:
		return weight;
	default:
		return p->frequency ? weight * 1000000000ull / p->frequency : weight * 1000;
	}
}

static bool stack_is_off_cpu(const struct profile *p, uint32_t stack)
{
	const struct stack *s = &p->stacks[stack];

	return s->depth && is_off_cpu_frame(&p->frames[s->frames[s->depth - 1]]);
}

/*
 * One sample as a slice of the timeline.  A CPU sample stands for the time
 * until the thread's next sample or off-CPU interval where that comes within
 * a few periods (random sampling keeps one timer tick in K, so intervals
 * scatter around the period, and a thread seen again that soon ran between),
 * else for one period; right after an off-CPU interval it starts where that
 * ended, since the thread ran from then.  An off-CPU interval has its
 * measured start and length.  Slices of a thread never overlap.
 */
static void write_sample(struct chrome_writer *w, const struct thread *t, const struct sample *s,
			 const struct sample *next)
{
	const struct profile *p = w->profile;
	const struct stack *st = &p->stacks[s->stack];
	uint64_t length = sample_ns(p, s->weight), reach = RUN_GAP_PERIODS * length;
	uint64_t start = s->time_ns, end = s->time_ns + length;
	bool off_cpu = stack_is_off_cpu(p, s->stack);
	size_t common = 0, depth = 0;

	if (!off_cpu && w->after_off_cpu && start > w->open_end_ns &&
	    start - w->open_end_ns <= reach)
		start = w->open_end_ns;
	if (!off_cpu && next && next->time_ns > end && next->time_ns - s->time_ns <= reach)
		end = next->time_ns;
	if (next && next->time_ns < end)
		end = next->time_ns;
	if (w->sliced && start < w->open_end_ns)
		start = w->open_end_ns;
	if (end <= start)
		return;
	if (w->nr_open && start > w->open_end_ns)
		close_slices(w, t, 0, w->open_end_ns);
	for (uint32_t d = 0; d < st->depth; d++) {
		if (is_track_frame(&p->frames[st->frames[d]]))
			continue;
		if (depth == common && common < w->nr_open && w->open[common] == st->frames[d])
			common++;
		depth++;
	}
	close_slices(w, t, common, start);
	depth = 0;
	for (uint32_t d = 0; d < st->depth; d++) {
		if (is_track_frame(&p->frames[st->frames[d]]))
			continue;
		if (depth++ >= common)
			open_slice(w, t, st->frames[d], start);
	}
	w->open_end_ns = end;
	w->sliced = true;
	w->after_off_cpu = off_cpu;
}

/* The process's name: the root frame of its samples where it is a process
 * frame ("python [rank 1]"), else the name of its main thread.  Its threads
 * are order[first ...], sorted by process. */
static const char *process_name(const struct profile *p, const uint32_t *order, size_t first,
				const uint32_t *by_thread, const size_t *thread_start)
{
	uint32_t pid = p->threads[order[first]].pid;
	const char *main_thread = NULL;

	for (size_t i = first; i < p->nr_threads && p->threads[order[i]].pid == pid; i++) {
		const struct thread *t = &p->threads[order[i]];

		for (size_t k = thread_start[order[i]]; k < thread_start[order[i] + 1]; k++) {
			const struct stack *s = &p->stacks[p->samples[by_thread[k]].stack];

			if (s->depth && p->frames[s->frames[0]].kind == FRAME_PROCESS)
				return p->frames[s->frames[0]].name;
		}
		if (t->name && (t->tid == pid || !main_thread))
			main_thread = t->name;
	}
	return main_thread ? main_thread : "process";
}

static void write_process(struct chrome_writer *w, const char *name, uint32_t pid)
{
	const char *rank = strstr(name, "[rank "), *worker = strstr(name, "[worker ");
	char label[48];
	int value, number = 0;

	metadata(w, pid, 0, "process_name", "name", name, 0);
	if (rank && sscanf(rank, "[rank %d]", &value) == 1) {
		/* A rank's DataLoader workers sort with it. */
		if (worker && sscanf(worker, "[worker %d]", &number) == 1)
			snprintf(label, sizeof(label), "rank %d, worker %d", value, number);
		else
			snprintf(label, sizeof(label), "rank %d", value);
		metadata(w, pid, 0, "process_labels", "labels", label, 0);
		metadata(w, pid, 0, "process_sort_index", "sort_index", NULL, value);
	}
}

/* Sample indices of each thread in time order: a stable counting sort. */
static int write_threads(struct chrome_writer *w, enum output_view view)
{
	const struct profile *p = w->profile;
	uint32_t *order = malloc((p->nr_threads ? p->nr_threads : 1) * sizeof(*order));
	uint32_t *by_thread = NULL;
	size_t *thread_start = NULL, max_depth = 1;
	int err = -ENOMEM;

	if (!order)
		return -ENOMEM;
	for (size_t i = 0; i < p->nr_stacks; i++)
		if (p->stacks[i].depth > max_depth)
			max_depth = p->stacks[i].depth;
	w->open = malloc(max_depth * sizeof(*w->open));
	if (!w->open || profile__samples_by_thread(p, &by_thread, &thread_start))
		goto cleanup;
	profile__thread_order(p, order);
	for (size_t i = 0; i < p->nr_threads; i++) {
		const struct thread *t = &p->threads[order[i]];
		const struct sample *previous = NULL;

		if (!i || p->threads[order[i - 1]].pid != t->pid)
			write_process(w, process_name(p, order, i, by_thread, thread_start),
				      t->pid);
		metadata(w, t->pid, t->tid, "thread_name", "name", t->name ? t->name : "thread", 0);
		w->nr_open = 0;
		w->open_end_ns = 0;
		w->sliced = false;
		w->after_off_cpu = false;
		for (size_t k = thread_start[order[i]]; k < thread_start[order[i] + 1]; k++) {
			const struct sample *s = &p->samples[by_thread[k]];

			if (view == VIEW_GPU || profile__stack_is_gpu(p, s->stack))
				continue;
			if (previous)
				write_sample(w, t, previous, s);
			previous = s;
		}
		if (previous)
			write_sample(w, t, previous, NULL);
		close_slices(w, t, 0, w->open_end_ns);
	}
	err = 0;
cleanup:
	free(order);
	free(by_thread);
	free(thread_start);
	free(w->open);
	w->open = NULL;
	return err;
}

static const char *gpu_category(enum gpu_activity_kind kind)
{
	switch (kind) {
	case GPU_MEMCPY:
		return "gpu.memcpy";
	case GPU_MEMSET:
		return "gpu.memset";
	default:
		return "gpu.kernel";
	}
}

/*
 * A flow from the launching thread, at the launch call, to the span on the
 * GPU: the arrows of Perfetto and chrome://tracing.  "s" binds to the slice
 * of the thread that encloses the launch time, "f" with "bp":"e" to the GPU
 * span that starts at its time.
 */
static void write_launch_flow(struct chrome_writer *w, const struct gpu_activity *a, uint64_t id,
			      uint32_t gpu_pid, uint32_t gpu_tid, uint64_t start_ns)
{
	begin_event(w, 's', a->launch_pid, a->launch_tid, a->launch_ns);
	fprintf(w->out, ",\"name\":\"launch\",\"cat\":\"gpu.launch\",\"id\":%" PRIu64 "}", id);
	begin_event(w, 'f', gpu_pid, gpu_tid, start_ns);
	fprintf(w->out, ",\"bp\":\"e\",\"name\":\"launch\",\"cat\":\"gpu.launch\",\"id\":%" PRIu64,
		id);
	/* How far the two clocks may disagree: a span may seem to start up
	 * to this long before its launch. */
	if (a->launch_error_ns)
		fprintf(w->out, ",\"args\":{\"clock_error_us\":%" PRIu64 ".%03" PRIu64 "}",
			a->launch_error_ns / 1000, a->launch_error_ns % 1000);
	fputc('}', w->out);
}

/* A process per GPU, a thread per stream.  Where the GPU work ran for
 * several processes, a GPU is its process's device (ranks that each see
 * their GPU as device 0 use different GPUs): a track each, named with the
 * process.  Spans on a stream do not overlap; where clock rounding makes
 * them, a span starts at the previous end so the track stays a sequence.
 * With flows, each span with a known launch gets its arrow from the CPU
 * thread's track. */
static int write_gpu(struct chrome_writer *w, bool flows)
{
	const struct profile *p = w->profile;
	const struct gpu_activity **order = calloc(p->nr_gpu ? p->nr_gpu : 1, sizeof(*order));
	bool several = profile__gpu_several_processes(p);
	uint32_t track = 0, gpu = 0;
	char name[320], label[256];

	if (!order)
		return -ENOMEM;
	for (size_t k = 0; k < p->nr_gpu; k++)
		order[k] = &p->gpu[k];
	qsort(order, p->nr_gpu, sizeof(*order), gpu_activity__compare);
	for (size_t i = 0; i < p->nr_gpu;) {
		uint32_t process = order[i]->process, device = order[i]->device;
		uint32_t stream = order[i]->stream, pid, tid = GPU_TRACK_ID_BASE + track++;
		uint64_t cursor = 0;

		if (i && (order[i - 1]->device != device || order[i - 1]->process != process))
			gpu++;
		pid = GPU_TRACK_ID_BASE + (several ? gpu : device);
		if (!i || order[i - 1]->device != device || order[i - 1]->process != process) {
			if (several) {
				profile__gpu_process_label(p, process, label, sizeof(label));
				snprintf(name, sizeof(name), "GPU %" PRIu32 " (%s)", device, label);
			} else {
				snprintf(name, sizeof(name), "GPU %" PRIu32, device);
			}
			metadata(w, pid, 0, "process_name", "name", name, 0);
			/* After the CPU processes. */
			metadata(w, pid, 0, "process_sort_index", "sort_index", NULL, (int64_t)pid);
		}
		snprintf(name, sizeof(name), "stream %" PRIu32, stream);
		metadata(w, pid, tid, "thread_name", "name", name, 0);
		for (; i < p->nr_gpu && order[i]->process == process &&
		       order[i]->device == device && order[i]->stream == stream;
		     i++) {
			const struct gpu_activity *a = order[i];
			uint64_t start = a->start_ns > cursor ? a->start_ns : cursor;
			uint64_t end = a->end_ns > start ? a->end_ns : start;

			begin_event(w, 'X', pid, tid, start);
			write_time(w->out, "dur", end - start);
			fputs(",\"name\":", w->out);
			write_string(w->out,
				     a->frame < p->nr_frames ? p->frames[a->frame].name : "gpu");
			fprintf(w->out,
				",\"cat\":\"%s\",\"args\":{\"device\":%" PRIu32
				",\"stream\":%" PRIu32 ",\"correlation\":%" PRIu32,
				gpu_category(a->kind), device, stream, a->correlation);
			if (a->bytes)
				fprintf(w->out, ",\"bytes\":%" PRIu64, a->bytes);
			fputs("}}", w->out);
			if (flows && a->launch_tid)
				write_launch_flow(w, a, i + 1, pid, tid, start);
			cursor = end;
		}
	}
	free(order);
	return 0;
}

bool chrome__has_timeline(const struct profile *p)
{
	return p->nr_samples || p->nr_gpu || !profile__total_weight(p);
}

int chrome__write(const struct profile *p, enum output_view view, FILE *out)
{
	struct chrome_writer w = {.profile = p, .out = out, .first = true};
	int err = 0;

	if (!chrome__has_timeline(p))
		return -ENODATA;
	fputs("{\"traceEvents\":[", out);
	if (view != VIEW_GPU && p->nr_samples)
		err = write_threads(&w, view);
	if (!err && view != VIEW_CPU && p->nr_gpu)
		err = write_gpu(&w, view != VIEW_GPU && p->nr_samples);
	if (err)
		return err;
	fputs(
	    "\n],\"displayTimeUnit\":\"ms\",\"otherData\":{\"exporter\":\"llmprof " LLMPROF_VERSION
	    "\",\"name\":",
	    out);
	write_string(out, p->name ? p->name : "llmprof profile");
	if (p->frequency)
		fprintf(out, ",\"frequency_hz\":%" PRIu32, p->frequency);
	write_time(out, "duration_us", p->duration_ns);
	fputs("}}\n", out);
	return fflush(out) || ferror(out) ? -EIO : 0;
}
