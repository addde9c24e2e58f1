// SPDX-License-Identifier: GPL-2.0
/*
 * Unit tests of agent_server__merge() and the GPU summary: fixed agent
 * records, a fake launch_stack callback standing in for the core, and the
 * folded text checked exactly.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/clock.h"
#include "gpu/gpu_protocol.h"
#include "gpu/agent_server.h"
#include "gpu/agent_server_internal.h"
#include "profile/output.h"
#include "profile/profile.h"
#include "status.h"
#include "test_wire.h"

#define BASE 1000000000ull
#define US(x) (BASE + (uint64_t)(x)*1000)

enum {
	NAME_GEMM = 1,
	NAME_ATTENTION,
	NAME_SOFTMAX,
	NAME_MLP,
	NAME_RESIDUAL,
	NAME_ORPHAN,
};

static void build(struct stream *s)
{
	struct gpu_memcpy c = {
	    .start_ns = US(0),
	    .end_ns = US(100),
	    .bytes = 1 << 20,
	    .stream = 7,
	    .correlation = 31,
	    .runtime_correlation = 13,
	    .copy_kind = GPU_MEMCPY_HTOD,
	};
	struct gpu_memset m = {
	    .start_ns = US(100),
	    .end_ns = US(150),
	    .bytes = 4096,
	    .stream = 7,
	    .correlation = 14,
	};
	struct gpu_goodbye g = {0};

	memset(s, 0, sizeof(*s));
	add_hello(s, GPU_PROTOCOL_VERSION);
	add_name(s, NAME_GEMM, "_Z11gemm_kerneljPf");
	add_name(s, NAME_ATTENTION, "_ZN5flash13attention_fwdILi128EEEvjPf");
	add_name(s, NAME_SOFTMAX, "softmax_kernel");
	add_name(s, NAME_MLP, "_Z10mlp_kerneljPf");
	add_name(s, NAME_RESIDUAL, "_Z12residual_addjPf");
	add_name(s, NAME_ORPHAN, "orphan_kernel");
	/* Out of order on purpose: the merge sorts. */
	add_kernel_on(s, 0, 7, 99, NAME_SOFTMAX, US(8000), US(8100), 0);
	add_kernel_on(s, 0, 7, 11, NAME_GEMM, US(4000), US(6000), 0);
	add_kernel_on(s, 0, 7, 10, NAME_GEMM, US(1000), US(3000), 0);
	add_kernel_on(s, 0, 7, 20, NAME_ATTENTION, US(6000), US(6500), 0);
	add_kernel_on(s, 0, 7, 15, NAME_MLP, US(7000), US(7400), 3);
	add_kernel_on(s, 0, 7, 15, NAME_RESIDUAL, US(7400), US(7700), 3);
	add_kernel_on(s, 1, 9, 16, NAME_GEMM, US(500), US(2500), 0);
	add_kernel_on(s, 0, 7, 17, NAME_GEMM, BASE - 5000000, BASE - 1000000, 0);
	add_kernel_on(s, 0, 7, 18, NAME_GEMM, BASE - 500000, US(500), 0);
	add_kernel_on(s, 0, 8, 19, NAME_SOFTMAX, US(2000), US(4500), 0);
	/* No launch record and no kernel like it: unattributed. */
	add_kernel_on(s, 0, 7, 98, NAME_ORPHAN, US(8200), US(8300), 0);
	/* A worker thread's gemm with a stack, and one whose probe did not
	 * fire: that one takes its own thread's stack, not the nearer main
	 * thread's. */
	add_kernel_on(s, 0, 10, 21, NAME_GEMM, US(8400), US(8500), 0);
	add_kernel_on(s, 0, 10, 22, NAME_GEMM, US(8500), US(8600), 0);
	add(s, GPU_MSG_MEMCPY, &c, sizeof(c), NULL);
	add(s, GPU_MSG_MEMSET, &m, sizeof(m), NULL);
	add_launch(s, 10, 0, GPU_DOMAIN_RUNTIME, 0);
	add_launch(s, 11, 0, GPU_DOMAIN_RUNTIME, 0);
	add_launch(s, 12, 0, GPU_DOMAIN_RUNTIME, 0);
	add_launch(s, 20, 12, GPU_DOMAIN_DRIVER, 0);
	add_launch(s, 13, 0, GPU_DOMAIN_RUNTIME, GPU_LAUNCH_MEMORY);
	add_launch(s, 14, 0, GPU_DOMAIN_RUNTIME, GPU_LAUNCH_MEMORY);
	add_launch(s, 15, 0, GPU_DOMAIN_RUNTIME, GPU_LAUNCH_GRAPH);
	add_launch(s, 16, 0, GPU_DOMAIN_RUNTIME, 0);
	add_launch(s, 18, 0, GPU_DOMAIN_RUNTIME, 0);
	add_launch(s, 19, 0, GPU_DOMAIN_RUNTIME, 0);
	add_launch_on(s, 21, 0, GPU_DOMAIN_RUNTIME, GPU_LAUNCH_PROBED, 5000, 10);
	add_launch_on(s, 22, 0, GPU_DOMAIN_RUNTIME, 0, 5000, US(8450));
	add(s, GPU_MSG_GOODBYE, &g, sizeof(g), NULL);
}

/* The core's BPF launch stacks, by correlation id. */
struct fake_core {
	struct profile *profile;
	uint32_t asked[64];
	size_t nr_asked;
};

static int fake_launch_stack(void *ctx, uint32_t correlation, uint32_t tid, uint64_t time_ns,
			     uint32_t *frames, size_t max, size_t *depth)
{
	struct fake_core *core = ctx;
	const char *path[8] = {"mock_app", "main"};
	size_t n = 2;

	if (core->nr_asked < 64)
		core->asked[core->nr_asked++] = correlation;
	switch (correlation) {
	case 21:
		path[1] = "worker";
		path[n++] = "worker_loop";
		break;
	case 10:
	case 11:
	case 16:
	case 18:
		path[n++] = "train_step";
		path[n++] = "run_gemm";
		break;
	case 12:
		path[n++] = "train_step";
		path[n++] = "run_attention";
		break;
	case 19:
		path[n++] = "train_step";
		path[n++] = "run_softmax";
		break;
	case 15:
		path[n++] = "train_step";
		path[n++] = "run_graph_step";
		break;
	case 13:
		path[n++] = "upload_batch";
		break;
	case 14:
		path[n++] = "clear_tail";
		break;
	default:
		/* 20 is nested: its parent 12 has the stack; 22 and 99 fired
		 * no probe. */
		return -ENOENT;
	}
	if ((tid != 4243 && tid != 5000) || !time_ns)
		return -EINVAL;
	/* The core wants room for its deepest stack, 1024 frames and more. */
	if (max < 2048)
		return -ENOSPC;
	for (size_t i = 0; i < n; i++) {
		int64_t id = profile__intern_frame(core->profile, path[i], NULL, 0,
						   i ? FRAME_NATIVE : FRAME_PROCESS);

		if (id < 0)
			return id;
		frames[i] = id;
	}
	*depth = n;
	return 0;
}

static struct profile *cpu_profile(enum profile_unit unit)
{
	struct profile *p = profile__new();
	uint32_t frames[3];

	p->unit = unit;
	p->start_ns = BASE;
	p->duration_ns = 10000000;
	frames[0] = profile__intern_frame(p, "mock_app", NULL, 0, FRAME_PROCESS);
	frames[1] = profile__intern_frame(p, "main", NULL, 0, FRAME_NATIVE);
	frames[2] = profile__intern_frame(p, "train_step", NULL, 0, FRAME_NATIVE);
	profile__add_weight(p, profile__intern_stack(p, frames, 3), 1000);
	return p;
}

static char *folded(const struct profile *p, enum output_view view)
{
	char *text = NULL;
	size_t len = 0;
	FILE *out = open_memstream(&text, &len);

	EXPECT(folded__write(p, view, out) == 0, "folded__write");
	fclose(out);
	return text;
}

static const char expected_all[] =
    "mock_app;[unattributed];[gpu] orphan_kernel 100\n"
    "mock_app;main;clear_tail;[gpu] memset 50\n"
    "mock_app;main;train_step 1000\n"
    "mock_app;main;train_step;run_attention;[gpu] flash::attention_fwd<128> 500\n"
    "mock_app;main;train_step;run_gemm;[gpu] gemm_kernel 6500\n"
    "mock_app;main;train_step;run_graph_step;[gpu] mlp_kernel 400\n"
    "mock_app;main;train_step;run_graph_step;[gpu] residual_add 300\n"
    "mock_app;main;train_step;run_softmax;[gpu] softmax_kernel 2600\n"
    "mock_app;main;upload_batch;[gpu] memcpy HtoD 100\n"
    "mock_app;worker;worker_loop;[gpu] gemm_kernel 200\n";

static void test_merge(void)
{
	struct agent_server *gs;
	struct profile *p = cpu_profile(UNIT_MICROSECONDS);
	struct fake_core core = {.profile = p};
	struct gpu_merge_options options = {.launch_stack = fake_launch_stack, .ctx = &core};
	struct agent_server_stats stats;
	struct gpu_summary summary;
	struct stream s;
	char *text;
	bool asked_parent_first = false;

	build(&s);
	if (agent_server__open(&gs, NULL))
		exit(1);
	EXPECT(agent_server__ingest(gs, s.data, s.len) == 0, "ingest");
	EXPECT(agent_server__merge(gs, p, &options) == 0, "merge");
	agent_server__stats(gs, &stats);
	EXPECT(stats.merged == 14 && stats.unattributed == 1 && stats.inferred == 2 &&
		   stats.outside_window == 1,
	       "merged %zu unattributed %zu inferred %zu outside %zu", stats.merged,
	       stats.unattributed, stats.inferred, stats.outside_window);
	text = folded(p, VIEW_ALL);
	EXPECT(!strcmp(text, expected_all), "folded:\n%s\nexpected:\n%s", text, expected_all);
	free(text);
	text = folded(p, VIEW_CPU);
	EXPECT(!strcmp(text, "mock_app;main;train_step 1000\n"), "cpu view:\n%s", text);
	free(text);

	/* Kernel 20 is a driver launch inside runtime launch 12: 12 is asked
	 * first. */
	for (size_t i = 0; i < core.nr_asked; i++)
		if (core.asked[i] == 12) {
			asked_parent_first = true;
			break;
		} else if (core.asked[i] == 20) {
			break;
		}
	EXPECT(asked_parent_first, "the nested launch's own id was asked before its parent's");

	EXPECT(p->nr_gpu == 14, "%zu activities", p->nr_gpu);
	for (size_t i = 0; i < p->nr_gpu; i++) {
		const struct gpu_activity *a = &p->gpu[i];

		if (a->correlation == 18)
			EXPECT(a->start_ns == 0 && a->end_ns == 500000, "cut at start: %lu-%lu",
			       (unsigned long)a->start_ns, (unsigned long)a->end_ns);
		if (a->correlation == 98)
			EXPECT(a->stack == UINT32_MAX && !a->launch_tid,
			       "unattributed has a stack or a launch");
		/* The launch call's time and thread, for the timeline; a
		 * driver launch inside a runtime one has the runtime call's,
		 * one before the profile's start the start. */
		if (a->correlation == 22)
			EXPECT(a->launch_ns == 8450000 && a->launch_tid == 5000,
			       "kernel 22 launched at %lu by %u", (unsigned long)a->launch_ns,
			       a->launch_tid);
		if (a->correlation == 20 || a->correlation == 10)
			EXPECT(a->launch_ns == 0 && a->launch_tid == 4243,
			       "kernel %u launched at %lu by %u", a->correlation,
			       (unsigned long)a->launch_ns, a->launch_tid);
		if (a->correlation == 99)
			EXPECT(a->stack != UINT32_MAX, "inferred has no stack");
		if (a->correlation == 10) {
			const struct stack *st = &p->stacks[a->stack];

			EXPECT(a->start_ns == 1000000 && a->end_ns == 3000000 &&
				   a->kind == GPU_KERNEL,
			       "kernel 10 times");
			EXPECT(st->depth == 5 && st->frames[4] == a->frame &&
				   p->frames[a->frame].kind == FRAME_GPU,
			       "kernel 10 stack");
		}
	}
	/* Deterministic order: device, stream, start. */
	for (size_t i = 1; i < p->nr_gpu; i++) {
		const struct gpu_activity *x = &p->gpu[i - 1], *y = &p->gpu[i];

		EXPECT(x->device < y->device ||
			   (x->device == y->device &&
			    (x->stream < y->stream ||
			     (x->stream == y->stream && x->start_ns <= y->start_ns))),
		       "order at %zu", i);
	}

	EXPECT(gpu_summary__compute(p, 3, &summary) == 0, "summary");
	EXPECT(summary.wall_ns == 10000000, "wall %lu", (unsigned long)summary.wall_ns);
	EXPECT(summary.nr_devices == 2, "%u devices", summary.nr_devices);
	for (uint32_t d = 0; d < summary.nr_devices; d++) {
		uint64_t want = summary.devices[d] == 0 ? 7100000 : 2000000;

		EXPECT(summary.busy_ns[d] == want, "device %u busy %lu", summary.devices[d],
		       (unsigned long)summary.busy_ns[d]);
	}
	EXPECT(summary.kernels == 12 && summary.memcpys == 1 && summary.memsets == 1,
	       "counts %lu %lu %lu", (unsigned long)summary.kernels, (unsigned long)summary.memcpys,
	       (unsigned long)summary.memsets);
	EXPECT(summary.unattributed == 1, "unattributed %lu", (unsigned long)summary.unattributed);
	EXPECT(summary.nr_top == 3, "%zu top", summary.nr_top);
	if (summary.nr_top == 3) {
		EXPECT(!strcmp(p->frames[summary.top[0].frame].name, "gemm_kernel") &&
			   summary.top[0].total_ns == 6700000 && summary.top[0].count == 6,
		       "top 0 %s", p->frames[summary.top[0].frame].name);
		EXPECT(!strcmp(p->frames[summary.top[1].frame].name, "softmax_kernel") &&
			   summary.top[1].total_ns == 2600000 && summary.top[1].count == 2,
		       "top 1 %s", p->frames[summary.top[1].frame].name);
		EXPECT(!strcmp(p->frames[summary.top[2].frame].name, "flash::attention_fwd<128>"),
		       "top 2 %s", p->frames[summary.top[2].frame].name);
	}
	gpu_summary__free(&summary);
	EXPECT(agent_server__print_summary(gs, p, 5) == 0, "print summary");
	agent_server__close(gs);
	profile__free(p);
}

/* In samples no weight moves; without a core everything is unattributed,
 * under the profile's own process frame. */
static void test_merge_plain(void)
{
	struct agent_server *gs;
	struct profile *p = cpu_profile(UNIT_SAMPLES);
	struct stream s;
	char *text;

	build(&s);
	if (agent_server__open(&gs, NULL))
		exit(1);
	EXPECT(agent_server__ingest(gs, s.data, s.len) == 0, "ingest");
	EXPECT(agent_server__merge(gs, p, NULL) == 0, "merge");
	EXPECT(p->nr_gpu == 14, "%zu activities", p->nr_gpu);
	text = folded(p, VIEW_ALL);
	EXPECT(!strcmp(text, "mock_app;main;train_step 1000\n"), "samples view:\n%s", text);
	free(text);
	for (size_t i = 0; i < p->nr_gpu; i++)
		EXPECT(p->gpu[i].stack == UINT32_MAX, "activity %zu attributed", i);
	agent_server__close(gs);
	profile__free(p);

	p = cpu_profile(UNIT_MICROSECONDS);
	if (agent_server__open(&gs, NULL))
		exit(1);
	EXPECT(agent_server__ingest(gs, s.data, s.len) == 0, "ingest");
	EXPECT(agent_server__merge(gs, p, NULL) == 0, "merge");
	text = folded(p, VIEW_GPU);
	EXPECT(!strcmp(text, "mock_app;[unattributed];[gpu] flash::attention_fwd<128> 500\n"
			     "mock_app;[unattributed];[gpu] gemm_kernel 6700\n"
			     "mock_app;[unattributed];[gpu] memcpy HtoD 100\n"
			     "mock_app;[unattributed];[gpu] memset 50\n"
			     "mock_app;[unattributed];[gpu] mlp_kernel 400\n"
			     "mock_app;[unattributed];[gpu] orphan_kernel 100\n"
			     "mock_app;[unattributed];[gpu] residual_add 300\n"
			     "mock_app;[unattributed];[gpu] softmax_kernel 2600\n"),
	       "no core:\n%s", text);
	free(text);
	agent_server__close(gs);
	profile__free(p);
}

/* The join with an API call: the fake one takes the launch made on thread
 * 4243 at 119 ns (correlation 19, run_softmax's) as an NCCL call's, and
 * repairs the frame under the leaf as the NCCL probes repair a uretprobe
 * trampoline; every launch with a launch record is offered, copies too. */
struct fake_join {
	size_t offered, offered_copies;
	uint64_t joined_ns;
};

static int64_t fake_join(void *ctx, struct profile *p, struct gpu_join *j)
{
	struct fake_join *f = ctx;
	int64_t frame;

	f->offered++;
	f->offered_copies += j->record->kind == GPU_MEMCPY;
	if (j->tid != 4243 || j->launch_ns != 119)
		return -1;
	if (strcmp(j->kernel, "softmax_kernel") || j->depth != 4)
		return -EINVAL;
	frame = profile__intern_frame(p, "softmax_step", NULL, 0, FRAME_NATIVE);
	if (frame < 0)
		return frame;
	j->frames[j->depth - 1] = frame;
	j->activity_frame =
	    profile__intern_frame(p, "softmax_kernel (AllReduce 1.0 MiB)", NULL, 0, FRAME_GPU);
	f->joined_ns += j->record->end_ns - j->record->start_ns;
	return profile__intern_frame(p, "[nccl] AllReduce 1.0 MiB", NULL, 0, FRAME_NCCL);
}

static void test_join(void)
{
	struct agent_server *gs;
	struct profile *p = cpu_profile(UNIT_MICROSECONDS);
	struct fake_core core = {.profile = p};
	struct fake_join join = {0};
	struct gpu_merge_options options = {
	    .launch_stack = fake_launch_stack, .ctx = &core, .join = fake_join, .join_ctx = &join};
	struct stream s;
	size_t named = 0;
	char *text;

	build(&s);
	if (agent_server__open(&gs, NULL))
		exit(1);
	EXPECT(agent_server__ingest(gs, s.data, s.len) == 0, "ingest");
	EXPECT(agent_server__merge(gs, p, &options) == 0, "merge");
	text = folded(p, VIEW_GPU);
	EXPECT(strstr(text, "mock_app;main;train_step;softmax_step;[nccl] AllReduce 1.0 MiB;"
			    "[gpu] softmax_kernel 2500\n") &&
		   strstr(text, "mock_app;main;train_step;run_softmax;[gpu] softmax_kernel 100\n"),
	       "joined:\n%s", text);
	free(text);
	EXPECT(join.joined_ns == 2500000, "joined %llu ns", (unsigned long long)join.joined_ns);
	/* Kernels, copies and sets with a launch record (a nested driver
	 * launch through its parent's): all but 99 and 98, and 17, which
	 * ended before the profile. */
	EXPECT(join.offered == 12 && join.offered_copies == 1, "offered %zu, %zu copies",
	       join.offered, join.offered_copies);
	for (size_t i = 0; i < p->nr_gpu; i++)
		named +=
		    !strcmp(p->frames[p->gpu[i].frame].name, "softmax_kernel (AllReduce 1.0 MiB)");
	EXPECT(named == 1, "%zu activities named with their call", named);
	agent_server__close(gs);
	profile__free(p);
}

/* Sub-microsecond kernels add up per stack instead of rounding to zero. */
static void test_rounding(void)
{
	struct agent_server *gs;
	struct profile *p = cpu_profile(UNIT_MICROSECONDS);
	struct stream s;
	char *text;

	memset(&s, 0, sizeof(s));
	add_hello(&s, GPU_PROTOCOL_VERSION);
	add_name(&s, 1, "tiny");
	for (int i = 0; i < 40; i++)
		add_kernel(&s, 1000 + i, 1, US(i), US(i) + 300);
	if (agent_server__open(&gs, NULL))
		exit(1);
	EXPECT(agent_server__ingest(gs, s.data, s.len) == 0, "ingest");
	EXPECT(agent_server__merge(gs, p, NULL) == 0, "merge");
	text = folded(p, VIEW_GPU);
	EXPECT(!strcmp(text, "mock_app;[unattributed];[gpu] tiny 12\n"), "rounding:\n%s", text);
	free(text);
	agent_server__close(gs);
	profile__free(p);
}

/*
 * A graph's gemm that the agent sent without a correlation id (CUPTI gave
 * it a wrong one) beside a gemm launched outside the graph, with a stack:
 * the graph's stays unattributed, never under the other call site.
 */
static void test_graph_without_launch(void)
{
	struct fake_core core = {0};
	struct gpu_merge_options options = {.launch_stack = fake_launch_stack, .ctx = &core};
	struct agent_server *gs;
	struct profile *p = cpu_profile(UNIT_MICROSECONDS);
	struct stream s;
	char *text;

	core.profile = p;
	memset(&s, 0, sizeof(s));
	add_hello(&s, GPU_PROTOCOL_VERSION);
	add_name(&s, NAME_GEMM, "_Z11gemm_kerneljPf");
	add_kernel_on(&s, 0, 7, 10, NAME_GEMM, US(1000), US(3000), 0);
	add_kernel_on(&s, 0, 7, 0, NAME_GEMM, US(4000), US(4500), 3);
	add_launch(&s, 10, 0, GPU_DOMAIN_RUNTIME, GPU_LAUNCH_PROBED);
	add_launch(&s, 11, 0, GPU_DOMAIN_RUNTIME, GPU_LAUNCH_GRAPH | GPU_LAUNCH_PROBED);
	if (agent_server__open(&gs, NULL))
		exit(1);
	EXPECT(agent_server__ingest(gs, s.data, s.len) == 0, "ingest");
	EXPECT(agent_server__merge(gs, p, &options) == 0, "merge");
	text = folded(p, VIEW_GPU);
	EXPECT(!strcmp(text, "mock_app;[unattributed];[gpu] gemm_kernel 500\n"
			     "mock_app;main;train_step;run_gemm;[gpu] gemm_kernel 2000\n"),
	       "graph kernel without its launch:\n%s", text);
	free(text);
	agent_server__close(gs);
	profile__free(p);
}

/* Long runs: the core's stacks of a training loop.  Per thread one kernel
 * has one call site; a third of the worker's launches fired no probe. */
static int loop_launch_stack(void *ctx, uint32_t correlation, uint32_t tid, uint64_t time_ns,
			     uint32_t *frames, size_t max, size_t *depth)
{
	struct fake_core *core = ctx;
	const char *path[3] = {"mock_app", "main", "run_gemm"};

	if (correlation % 3 == 1)
		path[2] = "run_attention";
	else if (correlation % 3 == 2)
		path[1] = "worker", path[2] = "worker_loop";
	if ((correlation % 3 == 2 && correlation % 2) || max < 3 || !time_ns ||
	    tid != (correlation % 3 == 2 ? 5000u : 4243u))
		return -ENOENT;
	for (size_t i = 0; i < 3; i++)
		frames[i] = profile__intern_frame(core->profile, path[i], NULL, 0,
						  i ? FRAME_NATIVE : FRAME_PROCESS);
	*depth = 3;
	return 0;
}

/* One thread's gemm from two call sites, every launch probed: the odd
 * correlation ids from run_gemm, the even ones from run_gemm_again. */
static int sites_launch_stack(void *ctx, uint32_t correlation, uint32_t tid, uint64_t time_ns,
			      uint32_t *frames, size_t max, size_t *depth)
{
	struct fake_core *core = ctx;
	const char *path[3] = {"mock_app", "main", correlation % 2 ? "run_gemm" : "run_gemm_again"};

	if (max < 3 || !time_ns || tid != 4243)
		return -ENOENT;
	for (size_t i = 0; i < 3; i++)
		frames[i] = profile__intern_frame(core->profile, path[i], NULL, 0,
						  i ? FRAME_NATIVE : FRAME_PROCESS);
	*depth = 3;
	return 0;
}

/* Merges nr launches and their sub-microsecond kernels, keeping timeline
 * records; with two_sites the launches of sites_launch_stack(), else those
 * of loop_launch_stack().  Returns the GPU view's folded text. */
static char *merge_loop(size_t timeline, uint32_t nr, bool two_sites, size_t *kept, size_t *folds)
{
	struct agent_server_options options = {.target_uid = (uid_t)-1,
					       .timeline_records = timeline};
	struct profile *p = cpu_profile(UNIT_MICROSECONDS);
	struct fake_core core = {.profile = p};
	struct gpu_merge_options merge = {
	    .launch_stack = two_sites ? sites_launch_stack : loop_launch_stack, .ctx = &core};
	uint8_t *data = malloc((size_t)nr * 256 + 4096);
	struct agent_server *gs;
	struct stream s;
	size_t len = 0;
	char *text;

	memset(&s, 0, sizeof(s));
	add_hello(&s, GPU_PROTOCOL_VERSION);
	add_name(&s, NAME_GEMM, "_Z11gemm_kerneljPf");
	add_name(&s, NAME_ATTENTION, "_ZN5flash13attention_fwdILi128EEEvjPf");
	for (uint32_t c = 1; c <= nr; c++) {
		uint32_t tid = c % 3 == 2 && !two_sites ? 5000 : 4243;
		uint32_t name = c % 3 == 1 && !two_sites ? NAME_ATTENTION : NAME_GEMM;
		uint32_t flags = c % 3 == 2 && c % 2 && !two_sites ? 0 : GPU_LAUNCH_PROBED;

		/* The agent sends launches and records in packets of their
		 * own: now and then a record comes before its launch. */
		if (!two_sites || c % 7)
			add_launch_on(&s, c, 0, GPU_DOMAIN_RUNTIME, flags, tid, US(c));
		add_kernel_on(&s, 0, 7, c, name, US(c) + 10, US(c) + 10 + 100 + c * 37 % 800, 0);
		if (two_sites && !(c % 7))
			add_launch_on(&s, c, 0, GPU_DOMAIN_RUNTIME, flags, tid, US(c));
		if (s.nr_boundaries > 48 || c == nr) {
			memcpy(data + len, s.data, s.len);
			len += s.len;
			memset(&s, 0, sizeof(s));
		}
	}
	if (agent_server__open(&gs, &options))
		exit(1);
	EXPECT(agent_server__ingest(gs, data, len) == 0, "ingest");
	EXPECT(agent_server__merge(gs, p, &merge) == 0, "merge");
	*kept = agent_server__nr_records(gs);
	*folds = gs->folds.nr;
	text = folded(p, VIEW_GPU);
	agent_server__close(gs);
	profile__free(p);
	free(data);
	return text;
}

/* Past the timeline records are folded: the kept records stay few, the
 * folds at most one per launch probe past it (and one per kernel and
 * thread before that), and every stack's GPU time is that of a run that
 * kept them all. */
static void test_timeline_fold(void)
{
	size_t kept, folds, all_kept, no_folds, probed = 0;
	char *cut = merge_loop(50, 6000, false, &kept, &folds);
	char *all = merge_loop(1 << 20, 6000, false, &all_kept, &no_folds);

	for (uint32_t c = 51; c <= 6000; c++)
		probed += !(c % 3 == 2 && c % 2);
	EXPECT(kept == 50 && folds <= probed + 3, "%zu records kept, %zu folds for %zu probes",
	       kept, folds, probed);
	EXPECT(all_kept == 6000 && no_folds == 0, "%zu records kept uncut", all_kept);
	EXPECT(!strcmp(cut, all), "cut timeline:\n%s\nwhole:\n%s", cut, all);
	EXPECT(strstr(all, "mock_app;worker;worker_loop;[gpu] gemm_kernel "), "worker:\n%s", all);
	free(cut);
	free(all);
}

/* One kernel launched from two call sites on one thread: past the timeline
 * each site keeps its own GPU time, as in a run that kept every record,
 * also where a record came before its launch. */
static void test_timeline_fold_sites(void)
{
	size_t kept, folds, all_kept, no_folds;
	char *cut = merge_loop(50, 6000, true, &kept, &folds);
	char *all = merge_loop(1 << 20, 6000, true, &all_kept, &no_folds);

	EXPECT(kept == 50 && all_kept == 6000 && no_folds == 0, "%zu and %zu records kept", kept,
	       all_kept);
	EXPECT(strstr(all, "mock_app;main;run_gemm;[gpu] gemm_kernel ") &&
		   strstr(all, "mock_app;main;run_gemm_again;[gpu] gemm_kernel "),
	       "two sites:\n%s", all);
	EXPECT(!strcmp(cut, all), "cut timeline:\n%s\nwhole:\n%s", cut, all);
	free(cut);
	free(all);
}

/* Past the timeline, a record whose launch the agent dropped waits for it
 * FOLD_PENDING_WAIT_NS at most, then folds without it: pending stays
 * bounded however long the run. */
static void test_pending_expires(void)
{
	struct agent_server_options options = {.target_uid = (uid_t)-1, .timeline_records = 1};
	struct agent_server *gs;
	struct stream s;

	memset(&s, 0, sizeof(s));
	add_hello(&s, GPU_PROTOCOL_VERSION);
	add_name(&s, NAME_GEMM, "_Z11gemm_kerneljPf");
	add_launch_on(&s, 1, 0, GPU_DOMAIN_RUNTIME, GPU_LAUNCH_PROBED, 4243, US(1));
	add_kernel_on(&s, 0, 7, 1, NAME_GEMM, US(1) + 10, US(1) + 200, 0);
	add_kernel_on(&s, 0, 7, 2, NAME_GEMM, US(2) + 10, US(2) + 200, 0);
	if (agent_server__open(&gs, &options))
		exit(1);
	EXPECT(agent_server__ingest(gs, s.data, s.len) == 0, "ingest");
	EXPECT(gs->folds.nr_pending == 1, "%zu records wait for their launch",
	       gs->folds.nr_pending);
	EXPECT(fold_table__add_pending(gs, false) == 0 && gs->folds.nr_pending == 1,
	       "a record not yet due still waits");
	gs->folds.pending[0].since_ns = clock__monotonic_ns() - FOLD_PENDING_WAIT_NS - 1;
	EXPECT(fold_table__add_pending(gs, false) == 0 && gs->folds.nr_pending == 0 &&
		   gs->folds.nr == 1 && gs->folds.folds[0].count == 1,
	       "%zu still wait, %zu folds", gs->folds.nr_pending, gs->folds.nr);
	agent_server__close(gs);
}

int main(void)
{
	status__set_level(STATUS_QUIET);
	test_merge();
	test_merge_plain();
	test_join();
	test_rounding();
	test_graph_without_launch();
	test_timeline_fold();
	test_timeline_fold_sites();
	test_pending_expires();
	if (failures)
		fprintf(stderr, "%d failures\n", failures);
	return failures ? 1 : 0;
}
