// SPDX-License-Identifier: GPL-2.0
/*
 * Each findings rule on profiles built with known contents: where it must
 * fire, with the exact cost the contents imply, and a healthy profile where
 * it must stay quiet.  The recorded profiles of real fixtures are checked
 * by findings_e2e.sh.
 */
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "findings/brief.h"
#include "findings/findings.h"
#include "profile/profile.h"

static int failures;

#define EXPECT(cond, ...)                                                                          \
	do {                                                                                       \
		if (!(cond)) {                                                                     \
			fprintf(stderr, "FAIL %s:%d: ", __func__, __LINE__);                       \
			fprintf(stderr, __VA_ARGS__);                                              \
			fputc('\n', stderr);                                                       \
			failures++;                                                                \
		}                                                                                  \
	} while (0)

/* A stack from "frame;frame;..." names; "name (file:line)" is a Python
 * frame, "[gpu] x" a GPU leaf, "[off-cpu] x" a wait. */
static uint32_t stack_of(struct profile *p, const char *text)
{
	uint32_t frames[64];
	size_t n = 0;
	char *copy = strdup(text), *save = NULL;

	for (char *name = strtok_r(copy, ";", &save); name; name = strtok_r(NULL, ";", &save)) {
		enum frame_kind kind = n ? FRAME_NATIVE : FRAME_PROCESS;
		char *file = NULL, *open = strstr(name, " (");
		uint32_t line = 0;

		if (!strncmp(name, "[gpu] ", 6)) {
			name += 6;
			kind = FRAME_GPU;
		} else if (!strncmp(name, FRAME_OFF_CPU_MARK, strlen(FRAME_OFF_CPU_MARK))) {
			kind = FRAME_OFF_CPU;
		} else if (n && open && name[strlen(name) - 1] == ')') {
			*open = '\0';
			file = open + 2;
			file[strlen(file) - 1] = '\0';
			if (strchr(file, ':')) {
				line = atoi(strchr(file, ':') + 1);
				*strchr(file, ':') = '\0';
			}
			kind = FRAME_PYTHON;
		}
		frames[n++] = profile__intern_frame(p, name, file, line, kind);
	}
	free(copy);
	return profile__intern_stack(p, frames, n);
}

static void weigh(struct profile *p, const char *stack, uint64_t weight)
{
	profile__add_weight(p, stack_of(p, stack), weight);
}

static void gpu(struct profile *p, enum gpu_activity_kind kind, const char *name, uint32_t device,
		double start_ms, double end_ms)
{
	char leaf[256];
	struct gpu_activity a = {
	    .start_ns = start_ms * 1e6,
	    .end_ns = end_ms * 1e6,
	    .device = device,
	    .kind = kind,
	};

	snprintf(leaf, sizeof(leaf), "app;main;launch;[gpu] %s", name);
	a.stack = stack_of(p, leaf);
	a.frame = p->stacks[a.stack].frames[p->stacks[a.stack].depth - 1];
	profile__add_gpu(p, &a);
	profile__add_weight(p, a.stack, (a.end_ns - a.start_ns) / 1000);
}

static struct profile *new_profile(enum profile_unit unit, double seconds)
{
	struct profile *p = profile__new();

	p->unit = unit;
	p->frequency = 1000;
	p->duration_ns = seconds * 1e9;
	return p;
}

static const struct finding *find(const struct findings *fs, const char *rule)
{
	for (size_t i = 0; i < fs->nr_items; i++)
		if (!strcmp(fs->items[i].rule, rule))
			return &fs->items[i];
	return NULL;
}

static const struct rule_outcome *outcome(const struct findings *fs, const char *rule)
{
	for (size_t i = 0; i < fs->nr_rules; i++)
		if (!strcmp(fs->rules[i].rule, rule))
			return &fs->rules[i];
	return NULL;
}

/* Runs the rules; checks that rule fired with cost (within 1e-6) or, with
 * cost < 0, that it did not fire.  Returns the findings for more checks. */
static struct findings *check(struct profile *p, const char *rule, double cost)
{
	struct findings *fs = NULL;
	const struct finding *f;

	if (findings__analyze(p, &fs)) {
		EXPECT(0, "%s: analysis failed", rule);
		return NULL;
	}
	f = find(fs, rule);
	if (cost < 0) {
		EXPECT(!f, "%s fired on a healthy profile: %s", rule, f ? f->title : "");
	} else {
		EXPECT(f, "%s did not fire: %s", rule,
		       outcome(fs, rule) && outcome(fs, rule)->note ? outcome(fs, rule)->note : "");
		if (f)
			EXPECT(fabs(f->cost - cost) < 1e-6, "%s cost %.6f, want %.6f", rule,
			       f->cost, cost);
	}
	return fs;
}

static bool evidence_has(const struct finding *f, const char *text)
{
	for (size_t i = 0; f && i < f->nr_evidence; i++)
		if (strstr(f->evidence[i], text))
			return true;
	return false;
}

static void test_gpu_idle(void)
{
	struct profile *p = new_profile(UNIT_MICROSECONDS, 1);
	struct findings *fs;
	uint32_t waiting;

	gpu(p, GPU_KERNEL, "gemm", 0, 0, 300);
	gpu(p, GPU_KERNEL, "gemm", 0, 500, 600);
	waiting = stack_of(p, "app;main;load_batch (train.py:12);read");
	profile__add_thread(p, 1, 1, "app");
	profile__add_sample(p, 0, waiting, 350e6, 1000);
	profile__add_sample(p, 0, waiting, 800e6, 1000);
	fs = check(p, "gpu-idle", 0.6);
	EXPECT(evidence_has(find(fs, "gpu-idle"), "load_batch (train.py:12)"),
	       "the CPU work in the gaps is not named");
	EXPECT(find(fs, "gpu-idle") && find(fs, "gpu-idle")->location &&
		   strstr(find(fs, "gpu-idle")->location, "train.py:12"),
	       "no location");
	findings__free(fs);
	profile__free(p);

	p = new_profile(UNIT_MICROSECONDS, 1);
	gpu(p, GPU_KERNEL, "gemm", 0, 0, 950);
	findings__free(check(p, "gpu-idle", -1));
	profile__free(p);
}

static void test_exposed_communication(void)
{
	struct profile *p = new_profile(UNIT_MICROSECONDS, 1);

	gpu(p, GPU_KERNEL, "gemm", 0, 0, 400);
	gpu(p, GPU_KERNEL, "ncclDevKernel_AllReduce_Sum_f32_RING_LL", 0, 300, 500);
	gpu(p, GPU_KERNEL, "ncclDevKernel_AllReduce_Sum_f32_RING_LL", 0, 700, 800);
	/* Compute on another device hides nothing on device 0. */
	gpu(p, GPU_KERNEL, "gemm", 1, 0, 1000);
	/* 200 ms exposed on device 0 of 2 devices x 1 s. */
	findings__free(check(p, "exposed-communication", 0.1));
	profile__free(p);

	p = new_profile(UNIT_MICROSECONDS, 1);
	gpu(p, GPU_KERNEL, "gemm", 0, 0, 900);
	gpu(p, GPU_KERNEL, "ncclDevKernel_AllGather_RING_LL", 0, 100, 800);
	findings__free(check(p, "exposed-communication", -1));
	profile__free(p);
}

static void test_launch_bound(void)
{
	struct profile *p = new_profile(UNIT_MICROSECONDS, 1);

	for (int i = 0; i < 300; i++)
		gpu(p, GPU_KERNEL, "tiny", 0, i * 0.1, i * 0.1 + 0.005);
	/* 300 kernels of 5 us: 1.5 ms of GPU; 30 ms of CPU launching. */
	weigh(p, "app;main;step (model.py:40);cudaLaunchKernel", 30000);
	weigh(p, "app;main;other", 970000);
	findings__free(check(p, "launch-bound", 0.03));
	profile__free(p);

	p = new_profile(UNIT_MICROSECONDS, 1);
	for (int i = 0; i < 300; i++)
		gpu(p, GPU_KERNEL, "big", 0, i * 3.0, i * 3.0 + 2.5);
	weigh(p, "app;main;step (model.py:40);cudaLaunchKernel", 30000);
	findings__free(check(p, "launch-bound", -1));
	profile__free(p);
}

static void test_pageable_copy(void)
{
	struct profile *p = new_profile(UNIT_MICROSECONDS, 1);
	struct findings *fs;

	gpu(p, GPU_KERNEL, "gemm", 0, 0, 900);
	for (int i = 0; i < 10; i++) {
		gpu(p, GPU_MEMCPY, "memcpy HtoD (pageable)", 0, 900 + i * 10, 905 + i * 10);
		p->gpu[p->nr_gpu - 1].src_memory = GPU_MEMORY_PAGEABLE;
		p->gpu[p->nr_gpu - 1].dst_memory = GPU_MEMORY_DEVICE;
		p->gpu[p->nr_gpu - 1].bytes = 1 << 20;
	}
	fs = check(p, "pageable-copy", 0.05);
	findings__free(fs);
	/* Folded input keeps only the frame names: the same from weights. */
	p->nr_gpu = 0;
	fs = check(p, "pageable-copy", 50000.0 / 950000);
	findings__free(fs);
	profile__free(p);

	p = new_profile(UNIT_MICROSECONDS, 1);
	gpu(p, GPU_MEMCPY, "memcpy HtoD (pinned)", 0, 0, 100);
	p->gpu[0].src_memory = GPU_MEMORY_PINNED;
	findings__free(check(p, "pageable-copy", -1));
	profile__free(p);
}

static void test_host_sync(void)
{
	struct profile *p = new_profile(UNIT_SAMPLES, 1);
	struct findings *fs;

	weigh(p,
	      "python;train (train.py:80);step (train.py:88);THPVariable_item;"
	      "at::native::_local_scalar_dense;cudaMemcpyAsync;cudaStreamSynchronize",
	      30);
	weigh(p, "python;train (train.py:80);forward (model.py:10);at::native::mm;sgemm", 70);
	fs = check(p, "host-sync", 0.3);
	EXPECT(find(fs, "host-sync") && find(fs, "host-sync")->location &&
		   strstr(find(fs, "host-sync")->location, "step (train.py:88)"),
	       "host-sync not located at train.py:88");
	findings__free(fs);
	profile__free(p);

	p = new_profile(UNIT_SAMPLES, 1);
	weigh(p, "python;train (train.py:80);step (train.py:88);cudaStreamSynchronize", 2);
	weigh(p, "python;train (train.py:80);forward (model.py:10);at::native::mm;sgemm", 98);
	findings__free(check(p, "host-sync", -1));
	profile__free(p);
}

static void test_gil(void)
{
	struct profile *p = new_profile(UNIT_MICROSECONDS, 1);

	weigh(p, "python;worker (pool.py:5);PyEval_RestoreThread;take_gil;[off-cpu] futex", 200);
	weigh(p, "python;main (run.py:3);compute (run.py:9)", 800);
	findings__free(check(p, "gil-contention", 0.2));
	profile__free(p);

	p = new_profile(UNIT_MICROSECONDS, 1);
	weigh(p, "python;main (run.py:3);compute (run.py:9)", 800);
	findings__free(check(p, "gil-contention", -1));
	profile__free(p);
}

static void test_python_overhead(void)
{
	struct profile *p = new_profile(UNIT_SAMPLES, 1);

	weigh(p, "python;main (loop.py:1);inner (loop.py:7)", 50);
	weigh(p, "python;main (loop.py:1);inner (loop.py:7);PyNumber_Add", 10);
	weigh(p, "python;main (loop.py:1);work (loop.py:12);THPVariable_mm;at::native::mm;sgemm",
	      40);
	findings__free(check(p, "python-overhead", 0.6));
	profile__free(p);

	p = new_profile(UNIT_SAMPLES, 1);
	weigh(p, "python;main (loop.py:1);inner (loop.py:7)", 10);
	weigh(p, "python;main (loop.py:1);work (loop.py:12);THPVariable_mm;at::native::mm;sgemm",
	      90);
	findings__free(check(p, "python-overhead", -1));
	profile__free(p);

	/* No Python frames: the rule says nothing, and why. */
	p = new_profile(UNIT_SAMPLES, 1);
	weigh(p, "app;main;burn", 100);
	{
		struct findings *fs = check(p, "python-overhead", -1);

		EXPECT(fs && !outcome(fs, "python-overhead")->ran, "ran without Python frames");
		findings__free(fs);
	}
	profile__free(p);
}

static void test_oversubscription(void)
{
	struct profile *p = new_profile(UNIT_MICROSECONDS, 1);

	weigh(p, "app;main;compute;[off-cpu] preempted", 300);
	weigh(p, "app;main;compute", 700);
	findings__free(check(p, "cpu-oversubscription", 0.3));
	profile__free(p);

	p = new_profile(UNIT_MICROSECONDS, 1);
	weigh(p, "app;main;compute;[off-cpu] preempted", 20);
	weigh(p, "app;main;compute", 980);
	findings__free(check(p, "cpu-oversubscription", -1));
	profile__free(p);
}

static void test_straggler(void)
{
	struct profile *p = new_profile(UNIT_SAMPLES, 1);
	struct findings *fs;

	weigh(p, "python [rank 0];main;step", 100);
	weigh(p, "python [rank 1];main;step", 100);
	weigh(p, "python [rank 2];main;step", 200);
	fs = check(p, "straggler", 0.5);
	EXPECT(find(fs, "straggler") && strstr(find(fs, "straggler")->title, "[rank 2]"),
	       "straggler not rank 2");
	findings__free(fs);
	profile__free(p);

	p = new_profile(UNIT_SAMPLES, 1);
	weigh(p, "python [rank 0];main;step", 100);
	weigh(p, "python [rank 1];main;step", 105);
	weigh(p, "python [rank 2];main;step", 98);
	findings__free(check(p, "straggler", -1));
	profile__free(p);

	/* A rank's DataLoader workers are not ranks: however busy, they are
	 * not compared with the ranks, nor the launcher. */
	p = new_profile(UNIT_SAMPLES, 1);
	weigh(p, "python;main;spawn", 10);
	weigh(p, "python [rank 0];main;step", 100);
	weigh(p, "python [rank 1];main;step", 104);
	weigh(p, "python [rank 0] [worker 0];_worker_loop;decode", 900);
	weigh(p, "python [rank 1] [worker 0];_worker_loop;decode", 20);
	findings__free(check(p, "straggler", -1));
	profile__free(p);

	/* Rank 0 hosts the store and waits there for the others to join
	 * (TCPStore::waitForWorkers: a Work in the name, a ::wait too): the
	 * rendezvous, not a collective, so no rank is a straggler. */
	p = new_profile(UNIT_MICROSECONDS, 1);
	weigh(p,
	      "python [rank 0];main;c10d::TCPStore::TCPStore;c10d::TCPStore::waitForWorkers;"
	      "[off-cpu] nanosleep",
	      900000);
	weigh(p, "python [rank 0];main;train;c10d::Work::wait;[off-cpu] futex", 100000);
	weigh(p, "python [rank 0];main;train;step", 400000);
	weigh(p, "python [rank 1];main;train;c10d::Work::wait;[off-cpu] futex", 120000);
	weigh(p, "python [rank 1];main;train;step", 400000);
	findings__free(check(p, "straggler", -1));
	profile__free(p);
}

/*
 * As a recording of a real DataLoader shows it: the training thread waits
 * under __next__, the index queues' feeder threads (one per worker) wait in
 * Queue._feed all the time, the shutdown joins the workers; each worker
 * has its loop thread and a feeder.  The share is of the training thread's
 * wall time alone: 400 waiting of its 400 + 200 + 50.
 */
static void test_data_loading(void)
{
	static const char main_thread[] =
	    "python;_start;<module> (train.py:40);train (train.py:20)";
	static const char feeder[] = "python;clone;Thread.run (threading.py:900);"
				     "Queue._feed (multiprocessing/queues.py:231);"
				     "Condition.wait (threading.py:320);[off-cpu] futex";
	static const char worker_loop[] =
	    "_start;_worker_loop (torch/utils/data/_utils/worker.py:300)";
	struct profile *p = new_profile(UNIT_MICROSECONDS, 1);
	const struct finding *f;
	struct findings *fs;
	char stack[512];

	snprintf(stack, sizeof(stack),
		 "%s;next_batch (train.py:12);_BaseDataLoaderIter.__next__ "
		 "(torch/utils/data/dataloader.py:630);"
		 "_get_data (torch/utils/data/dataloader.py:1100);"
		 "get (multiprocessing/queues.py:113);[off-cpu] futex",
		 main_thread);
	weigh(p, stack, 400);
	snprintf(stack, sizeof(stack), "%s;step (train.py:30)", main_thread);
	weigh(p, stack, 200);
	snprintf(stack, sizeof(stack),
		 "%s;_MultiProcessingDataLoaderIter.__del__ (torch/utils/data/dataloader.py:1470);"
		 "join (multiprocessing/process.py:149);[off-cpu] poll",
		 main_thread);
	weigh(p, stack, 50);
	weigh(p, feeder, 650);
	for (int w = 0; w < 2; w++) {
		snprintf(stack, sizeof(stack), "python [worker %d];%s;decode (data.py:9)", w,
			 worker_loop);
		weigh(p, stack, 180);
		snprintf(stack, sizeof(stack),
			 "python [worker %d];%s;decode (data.py:9);"
			 "[off-cpu] preempted",
			 w, worker_loop);
		weigh(p, stack, 20);
		snprintf(stack, sizeof(stack),
			 "python [worker %d];%s;get (queues.py:100);"
			 "[off-cpu] futex",
			 w, worker_loop);
		weigh(p, stack, 50);
		snprintf(stack, sizeof(stack),
			 "python [worker %d];clone;"
			 "Queue._feed (multiprocessing/queues.py:231);[off-cpu] futex",
			 w);
		weigh(p, stack, 250);
	}
	fs = check(p, "data-loading", 400.0 / 650);
	f = find(fs, "data-loading");
	EXPECT(f && f->location && !strcmp(f->location, "next_batch (train.py:12)"),
	       "the wait is not located at the loop's call: %s", f ? f->location : "");
	EXPECT(evidence_has(f, "decode (data.py)"), "the workers' hot code is not named");
	EXPECT(evidence_has(f, "2 worker loops were on the CPU or runnable 80.0%"),
	       "the workers' busy share is not of their loop threads");
	findings__free(fs);
	profile__free(p);

	/* Healthy: the step is the work, the loop hardly waits; the feeder
	 * threads' waits do not count. */
	p = new_profile(UNIT_MICROSECONDS, 1);
	snprintf(stack, sizeof(stack), "%s;step (train.py:30)", main_thread);
	weigh(p, stack, 900);
	snprintf(stack, sizeof(stack),
		 "%s;next_batch (train.py:12);__next__ (torch/utils/data/dataloader.py:630);"
		 "[off-cpu] futex",
		 main_thread);
	weigh(p, stack, 20);
	weigh(p, feeder, 920);
	findings__free(check(p, "data-loading", -1));
	profile__free(p);
}

/* The stack of text with a --per-thread frame under its process. */
static uint32_t thread_stack_of(struct profile *p, const char *thread, const char *text)
{
	uint32_t id = stack_of(p, text), frames[64], depth = p->stacks[id].depth;

	memcpy(frames, p->stacks[id].frames, depth * sizeof(*frames));
	memmove(frames + 2, frames + 1, (depth - 1) * sizeof(*frames));
	frames[1] = profile__intern_frame(p, thread, NULL, 0, FRAME_THREAD);
	return profile__intern_stack(p, frames, depth + 1);
}

/*
 * The training thread's wall time where the profile knows the threads:
 * from the samples of a timeline, or from --per-thread frames.  A feeder
 * thread whose stack has no thread start in it still does not count.
 */
static void test_data_loading_threads(void)
{
	static const char wait[] = "python;train (train.py:20);next_batch (train.py:12);"
				   "__next__ (torch/utils/data/dataloader.py:630);[off-cpu] futex";
	static const char step[] = "python;train (train.py:20);step (train.py:30)";
	static const char feed[] = "python;Queue._feed (multiprocessing/queues.py:231);"
				   "[off-cpu] futex";
	static const char decode[] = "python [worker 0];"
				     "_worker_loop (torch/utils/data/_utils/worker.py:300);"
				     "decode (data.py:9)";
	struct profile *p = new_profile(UNIT_MICROSECONDS, 1);
	const struct finding *f;
	struct findings *fs;

	profile__add_thread(p, 100, 100, "python");
	profile__add_thread(p, 100, 101, "python");
	profile__add_thread(p, 200, 200, "pt_data_worker");
	profile__add_sample(p, 0, stack_of(p, wait), 0, 300);
	profile__add_sample(p, 0, stack_of(p, step), 300000, 100);
	profile__add_sample(p, 1, stack_of(p, feed), 0, 400);
	profile__add_sample(p, 2, stack_of(p, decode), 0, 400);
	fs = check(p, "data-loading", 0.75);
	f = find(fs, "data-loading");
	EXPECT(evidence_has(f, "the 1 worker loop was on the CPU or runnable 100.0% of its"),
	       "the worker loop's busy share from the timeline");
	findings__free(fs);
	profile__free(p);

	p = new_profile(UNIT_MICROSECONDS, 1);
	profile__add_weight(p, thread_stack_of(p, "python/100", wait), 300);
	profile__add_weight(p, thread_stack_of(p, "python/100", step), 100);
	profile__add_weight(p, thread_stack_of(p, "python/101", feed), 400);
	profile__add_weight(p, thread_stack_of(p, "python/200", decode), 400);
	findings__free(check(p, "data-loading", 0.75));
	profile__free(p);
}

/*
 * A loop that loads its own batches, on a timeline: one slow batch near the
 * end of a healthy loop is no loop of loading.  Its span would run from that
 * one sample to the thread's end, two steps, of which it is half.
 */
static void test_inline_loading_one_batch(void)
{
	static const char step[] = "python [rank 0];train (train.py:20);step (train.py:30)";
	static const char load[] =
	    "python [rank 0];train (train.py:20);"
	    "_BaseDataLoaderIter.__next__ (torch/utils/data/dataloader.py:630);"
	    "_MapDatasetFetcher.fetch (torch/utils/data/_utils/fetch.py:51);"
	    "Characters.__getitem__ (data.py:5);tokenise (data.py:9)";
	struct profile *p = new_profile(UNIT_MICROSECONDS, 1);
	const struct finding *f;
	struct findings *fs;

	profile__add_thread(p, 100, 100, "python");
	for (int k = 0; k < 50; k++)
		profile__add_sample(p, 0, stack_of(p, step), k * 10000000ULL, 10000);
	profile__add_sample(p, 0, stack_of(p, load), 495000000ULL, 10000);
	profile__add_sample(p, 0, stack_of(p, step), 505000000ULL, 10000);
	findings__free(check(p, "data-loading", -1));
	profile__free(p);

	/* Every step loads: the loop's share, over its span. */
	p = new_profile(UNIT_MICROSECONDS, 1);
	profile__add_thread(p, 100, 100, "python");
	for (int k = 0; k < 50; k++) {
		profile__add_sample(p, 0, stack_of(p, load), k * 20000000ULL, 10000);
		profile__add_sample(p, 0, stack_of(p, step), k * 20000000ULL + 10000000, 10000);
	}
	fs = check(p, "data-loading", 0.5);
	f = find(fs, "data-loading");
	EXPECT(f && strstr(f->title, "loaded in the training process"), "not inline: %s",
	       f ? f->title : "");
	findings__free(fs);
	profile__free(p);
}

/* Findings come largest cost first, and every writer accepts them. */
static void test_order_and_writers(void)
{
	struct profile *p = new_profile(UNIT_MICROSECONDS, 1);
	struct findings_write_options options = {.name = "t", .verbose = true};
	struct findings *fs = NULL;
	char *text = NULL;
	size_t size = 0;
	FILE *out;

	weigh(p, "app;main;compute;[off-cpu] preempted", 300);
	weigh(p, "python;worker (pool.py:5);take_gil;[off-cpu] futex", 100);
	weigh(p, "python;main (run.py:3);compute (run.py:9)", 600);
	EXPECT(!findings__analyze(p, &fs), "analysis failed");
	EXPECT(fs && fs->nr_items >= 2 && fs->items[0].cost >= fs->items[1].cost,
	       "findings out of order");
	for (int format = TEXT_FORMAT_TEXT; format <= TEXT_FORMAT_MARKDOWN; format++) {
		out = open_memstream(&text, &size);
		EXPECT(!findings__write(fs, &options, format, out), "writer %d failed", format);
		fclose(out);
		EXPECT(strstr(text, "cpu-oversubscription"), "writer %d lacks a rule", format);
		free(text);
		text = NULL;
	}
	findings__free(fs);
	profile__free(p);
}

#define MiB (1024ULL * 1024)

/* A memory profile's accounting, as gpu_memory__facts() fills it. */
static struct profile *memory_profile(uint64_t peak, uint64_t allocs, uint64_t allocated,
				      double seconds)
{
	struct profile *p = new_profile(UNIT_BYTES, seconds);

	weigh(p, "app;main;load;[gpu-mem] cudaMalloc 64.0 MiB", peak);
	p->memory.known = true;
	p->memory.peak = peak;
	p->memory.nr_allocs = allocs;
	p->memory.nr_frees = allocs;
	p->memory.allocated = allocated;
	p->memory.duration_ns = p->duration_ns;
	p->memory.span_ns = p->duration_ns;
	return p;
}

static void site(struct profile *p, enum memory_site_kind kind, const char *call, uint64_t bytes,
		 uint64_t count, double first_s, double last_s, const char *error)
{
	struct memory_site s = {
	    .kind = kind,
	    .call = (char *)call,
	    .stack = (char *)"alloc_here < main",
	    .location = (char *)"step (train.py:12)",
	    .error = (char *)error,
	    .bytes = bytes,
	    .count = count,
	    .first_ns = first_s * 1e9,
	    .last_ns = last_s * 1e9,
	};

	profile__add_memory_site(p, &s);
}

static void test_memory_rules(void)
{
	struct profile *p = memory_profile(112 * MiB, 5, 120 * MiB, 1);
	struct findings *fs;
	const struct finding *f;

	/* Healthy: nothing failed, little churn, nothing grows. */
	site(p, MEMORY_SITE_LIVE_AT_END, "cudaMalloc", 64 * MiB, 1, 0.1, 0.1, NULL);
	fs = check(p, "allocation-failure", -1);
	findings__free(fs);
	fs = check(p, "allocator-churn", -1);
	findings__free(fs);
	fs = check(p, "memory-leak", -1);
	EXPECT(fs && outcome(fs, "memory-leak")->ran, "memory-leak did not run");
	findings__free(fs);

	/* One failure of 16 MiB beside a 112 MiB peak after frees: cost
	 * 16 / (16 + 112), and fragmentation is named. */
	p->memory.nr_failed = 1;
	site(p, MEMORY_SITE_FAILED, "cudaMalloc", 16 * MiB, 1, 0.5, 0.5,
	     "cudaErrorMemoryAllocation (2)");
	fs = check(p, "allocation-failure", 16.0 / 128);
	f = fs ? find(fs, "allocation-failure") : NULL;
	EXPECT(f && strstr(f->title, "cudaMalloc of 16.0 MiB"), "title: %s", f ? f->title : "");
	EXPECT(f && f->location && !strcmp(f->location, "step (train.py:12)"), "location");
	EXPECT(evidence_has(f, "1 x cudaMalloc of 16.0 MiB: cudaErrorMemoryAllocation (2) at "
			       "alloc_here < main"),
	       "failure evidence");
	EXPECT(f && f->suggestion && strstr(f->suggestion, "expandable_segments:True") &&
		   strstr(f->suggestion, "checkpoint"),
	       "suggestion: %s", f && f->suggestion ? f->suggestion : "");
	findings__free(fs);
	/* A request larger than the peak is no fragmentation. */
	p->memory.sites[p->memory.nr_sites - 1].bytes = 1024 * 1024 * MiB;
	fs = check(p, "allocation-failure", 1024.0 * 1024 / (1024 * 1024 + 112));
	f = fs ? find(fs, "allocation-failure") : NULL;
	EXPECT(f && f->suggestion && !strstr(f->suggestion, "expandable_segments"),
	       "fragmentation named for a huge request");
	findings__free(fs);
	/* A failure that is no lack of memory says so. */
	free(p->memory.sites[p->memory.nr_sites - 1].error);
	p->memory.sites[p->memory.nr_sites - 1].error = strdup("cudaErrorNoDevice (100)");
	fs = check(p, "allocation-failure", 1024.0 * 1024 / (1024 * 1024 + 112));
	f = fs ? find(fs, "allocation-failure") : NULL;
	EXPECT(f && !strncmp(f->title, "GPU allocations fail: ", 22), "title: %s",
	       f ? f->title : "");
	EXPECT(f && f->suggestion && strstr(f->suggestion, "nvidia-smi") &&
		   !strstr(f->suggestion, "batch"),
	       "suggestion: %s", f && f->suggestion ? f->suggestion : "");
	findings__free(fs);
	profile__free(p);

	/* Churn: at the count threshold and the rate; cost is the time in
	 * the calls.  One allocation fewer, or a slow rate with little
	 * reallocation, is quiet. */
	p = memory_profile(4096, 1000, 1000 * 4096, 1);
	p->memory.call_ns = 250000000;
	site(p, MEMORY_SITE_FREQUENT, "cudaMalloc", 1000 * 4096, 1000, 0, 1, NULL);
	fs = check(p, "allocator-churn", 0.25);
	f = fs ? find(fs, "allocator-churn") : NULL;
	EXPECT(evidence_has(f, "1000 x cudaMalloc (3.9 MiB) at alloc_here < main"), "churn site");
	EXPECT(f && f->suggestion && strstr(f->suggestion, "cudaMallocAsync"), "churn suggestion");
	findings__free(fs);
	p->memory.nr_allocs = 999;
	fs = check(p, "allocator-churn", -1);
	findings__free(fs);
	/* 1000 in 2 s is 500/s: fires only on bytes, 1000x the peak. */
	p->memory.nr_allocs = 1000;
	p->memory.duration_ns = 2000000000;
	fs = check(p, "allocator-churn", 0.125);
	findings__free(fs);
	p->memory.allocated = 9 * 4096;
	fs = check(p, "allocator-churn", -1);
	findings__free(fs);
	profile__free(p);

	/* A leak: 4 allocations over half the span; 3, or a short span of a
	 * small share, are quiet; a big share fires however short. */
	p = memory_profile(100 * MiB, 20, 200 * MiB, 2);
	site(p, MEMORY_SITE_LIVE_AT_END, "cudaMalloc", 10 * MiB, 4, 0.5, 1.5, NULL);
	fs = check(p, "memory-leak", 0.10);
	f = fs ? find(fs, "memory-leak") : NULL;
	EXPECT(evidence_has(f, "10.0 MiB in 4 x cudaMalloc from 0.500 s to 1.500 s"),
	       "leak evidence");
	EXPECT(f && f->location && !strcmp(f->location, "step (train.py:12)"), "leak location");
	findings__free(fs);
	p->memory.sites[0].count = 3;
	fs = check(p, "memory-leak", -1);
	findings__free(fs);
	p->memory.sites[0].count = 4;
	p->memory.sites[0].last_ns = 1.4e9;
	fs = check(p, "memory-leak", -1);
	findings__free(fs);
	p->memory.sites[0].bytes = 25 * MiB;
	fs = check(p, "memory-leak", 0.25);
	findings__free(fs);
	profile__free(p);

	/* No memory data: the rules say why they did not run. */
	p = new_profile(UNIT_SAMPLES, 1);
	weigh(p, "app;main;work", 100);
	fs = check(p, "memory-leak", -1);
	EXPECT(fs && !outcome(fs, "memory-leak")->ran &&
		   strstr(outcome(fs, "memory-leak")->note, "--gpu-memory"),
	       "memory-leak note on a CPU profile");
	findings__free(fs);
	profile__free(p);
	p = new_profile(UNIT_BYTES, 1);
	weigh(p, "app;main;load;[gpu-mem] cudaMalloc 64.0 MiB", 64 * MiB);
	fs = check(p, "allocation-failure", -1);
	EXPECT(fs && !outcome(fs, "allocation-failure")->ran &&
		   strstr(outcome(fs, "allocation-failure")->note, "speedscope"),
	       "allocation-failure note on a folded memory profile");
	/* Bytes are no CPU time. */
	EXPECT(fs && !fs->nr_items, "findings on a bytes profile without accounting");
	findings__free(fs);
	profile__free(p);
}

/* The brief within its budget: rows left out from the least important,
 * counted, every section keeping its first rows; with room, all of them. */
static void test_brief_budget(void)
{
	struct profile *p = new_profile(UNIT_SAMPLES, 1);
	char stack[4096], *text = NULL;
	size_t len = 0, paths = 0;
	FILE *out;

	/* 40 deep stacks of long names, one heavier than the next. */
	for (int i = 0; i < 40; i++) {
		int at = snprintf(stack, sizeof(stack), "app;main");

		for (int d = 0; d < 6; d++)
			at +=
			    snprintf(stack + at, sizeof(stack) - at,
				     ";a_rather_long_function_name_of_layer_%d_in_tree_%02d", d, i);
		weigh(p, stack, 1000 - 20 * i);
	}
	out = open_memstream(&text, &len);
	EXPECT(!brief__write(p, &(struct brief_options){.name = "deep", .budget = 2048}, out),
	       "brief__write");
	fclose(out);
	EXPECT(len <= 2048, "the brief is %zu bytes, over its 2048", len);
	EXPECT(strstr(text, "rows left out to stay within 2048 bytes"),
	       "no count of rows left out");
	EXPECT(strstr(text, "Top functions by self share") &&
		   strstr(text, "a_rather_long_function_name_of_layer_5_in_tree_00\n") &&
		   strstr(text, "Top functions by total share") &&
		   strstr(text, "  100.00%  main\n") && strstr(text, "Heaviest call paths") &&
		   strstr(text, "app > main > a_rather_long_function_name_of_layer_0_in_tree_00"),
	       "a section lost its first row:\n%s", text);
	EXPECT(!strstr(text, "tree_39"), "the lightest stack was kept over heavier rows");
	free(text);

	text = NULL;
	out = open_memstream(&text, &len);
	EXPECT(!brief__write(p, &(struct brief_options){.budget = 1 << 20}, out), "brief__write");
	fclose(out);
	for (const char *at = text; (at = strstr(at, "app > main > ")); at++)
		paths++;
	EXPECT(paths == 40, "%zu paths of 40 with room for all", paths);
	EXPECT(!strstr(text, "rows left out"), "rows left out with room for all");
	/* Only paths deeper than 12 frames are cut. */
	EXPECT(!strstr(text, " frames ..."), "a path of 8 frames was cut");
	free(text);
	profile__free(p);
}

int main(void)
{
	test_gpu_idle();
	test_exposed_communication();
	test_launch_bound();
	test_pageable_copy();
	test_host_sync();
	test_gil();
	test_python_overhead();
	test_oversubscription();
	test_straggler();
	test_data_loading();
	test_data_loading_threads();
	test_inline_loading_one_batch();
	test_order_and_writers();
	test_memory_rules();
	test_brief_budget();
	if (failures) {
		fprintf(stderr, "%d failures\n", failures);
		return 1;
	}
	printf("PASS\n");
	return 0;
}
