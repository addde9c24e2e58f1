// SPDX-License-Identifier: GPL-2.0
/*
 * The rules that read GPU activity: idle GPU time and what the CPU did
 * meanwhile, launch-bound steps, pageable copies, and communication not
 * hidden behind compute.  Thresholds are in llmprof-report(1).
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "findings/analysis.h"
#include "spans.h"

#define GPU_IDLE_MIN_SHARE 0.20
#define GPU_IDLE_GAP_NS 1000000ULL
#define LAUNCH_MIN_KERNELS 200
#define LAUNCH_MAX_MEDIAN_NS 20000ULL
#define LAUNCH_MIN_CPU_RATIO 0.5
#define PAGEABLE_MIN_SHARE 0.01
#define EXPOSED_MIN_SHARE 0.05
#define EVIDENCE_TOP 5
#define PAGEABLE_SUGGESTION                                                                        \
	"pin the host memory: DataLoader(pin_memory=True) or tensor.pin_memory(), then copy "      \
	"with .to(device, non_blocking=True) so the copy overlaps compute"

static const char *const launch_calls[] = {
    "cudaLaunchKernel",		"cudaLaunchKernel_ptsz", "cudaLaunchKernelExC",
    "cudaLaunchKernelExC_ptsz", "cuLaunchKernel",	 "cuLaunchKernel_ptsz",
    "cuLaunchKernelEx",		"cuLaunchKernelEx_ptsz", NULL,
};

/* Spans gathered from the profile's GPU activity. */
struct intervals {
	struct span *items;
	size_t nr;
};

/* Sorts and merges overlapping intervals in place; returns the busy time. */
static uint64_t intervals__merge(struct intervals *v)
{
	v->nr = spans__union(v->items, v->nr);
	return spans__length(v->items, v->nr);
}

static bool is_nccl_kernel(const struct profile *p, const struct gpu_activity *g)
{
	const char *name = p->frames[g->frame].name;

	return g->kind == GPU_KERNEL && name && strcasestr(name, "nccl");
}

/* Every GPU activity of the given device (UINT32_MAX: any) passing the
 * filter, merged. */
/* A GPU as the recording saw it: the process (its agent) and the device
 * number, since ranks that each see their GPU as device 0 use different
 * GPUs.  ALL_DEVICES: every one. */
#define ALL_DEVICES UINT64_MAX

static uint64_t device_key(const struct gpu_activity *g)
{
	return (uint64_t)g->process << 32 | g->device;
}

static int collect(const struct profile *p, uint64_t device,
		   bool (*filter)(const struct profile *p, const struct gpu_activity *g),
		   struct intervals *out)
{
	out->items = malloc((p->nr_gpu ? p->nr_gpu : 1) * sizeof(*out->items));
	out->nr = 0;
	if (!out->items)
		return -ENOMEM;
	for (size_t i = 0; i < p->nr_gpu; i++) {
		const struct gpu_activity *g = &p->gpu[i];

		if ((device != ALL_DEVICES && device_key(g) != device) || g->end_ns <= g->start_ns)
			continue;
		if (filter && !filter(p, g))
			continue;
		out->items[out->nr++] = (struct span){g->start_ns, g->end_ns};
	}
	return 0;
}

static size_t list_devices(const struct profile *p, uint64_t *devices, size_t max)
{
	size_t n = 0;

	for (size_t i = 0; i < p->nr_gpu; i++) {
		size_t k;

		for (k = 0; k < n && devices[k] != device_key(&p->gpu[i]); k++)
			;
		if (k == n && n < max)
			devices[n++] = device_key(&p->gpu[i]);
	}
	return n;
}

static const char *sample_location(const struct profile *p, uint32_t stack, char *buf, size_t size)
{
	if (analysis__python_location(p, stack, -1, buf, size))
		return buf;
	snprintf(buf, size, "%s", analysis__leaf_name(p, stack));
	return buf;
}

/* The launching process of a GPU of the profile (its device key), 0 when
 * unknown. */
static uint32_t device_pid(const struct profile *p, uint64_t device)
{
	for (size_t i = 0; i < p->nr_gpu; i++)
		if (device_key(&p->gpu[i]) == device && p->gpu[i].launch_pid)
			return p->gpu[i].launch_pid;
	return 0;
}

/* What the gpu-idle rule measures on the GPU it looks at (device, all
 * of them in one process): its busy spans, its gaps, and what its process's
 * CPU did in them. */
struct gpu_idle {
	struct intervals busy;
	struct tally during;
	uint64_t busy_ns, gap_weight, longest, window, device;
	uint64_t devices[64];
	size_t gaps, nr_devices;
	bool several;
	char label[320];
	uint32_t pid;
	double idle;
};

/* Of several processes' GPUs, the idlest: its device key, its process and
 * its label. */
static int gpu_idle__pick_device(struct gpu_idle *g, const struct profile *p)
{
	uint64_t least = UINT64_MAX;
	int err;

	g->nr_devices = list_devices(p, g->devices, 64);
	for (size_t d = 0; d < g->nr_devices; d++) {
		err = collect(p, g->devices[d], NULL, &g->busy);
		if (err)
			return err;
		g->busy_ns = intervals__merge(&g->busy);
		free(g->busy.items);
		g->busy.items = NULL;
		if (g->busy_ns < least) {
			least = g->busy_ns;
			g->device = g->devices[d];
		}
	}
	g->pid = device_pid(p, g->device);
	profile__gpu_process_label(p, g->device >> 32, g->label, sizeof(g->label) - 64);
	snprintf(g->label + strlen(g->label), sizeof(g->label) - strlen(g->label), " (GPU %u)",
		 (unsigned int)g->device);
	return 0;
}

/* The gaps of 1 ms or more between the busy spans, and the longest. */
static void gpu_idle__count_gaps(struct gpu_idle *g)
{
	for (size_t i = 0; i <= g->busy.nr; i++) {
		uint64_t start = i ? g->busy.items[i - 1].end : 0;
		uint64_t end = i < g->busy.nr ? g->busy.items[i].start : g->window;

		if (end > start && end - start >= GPU_IDLE_GAP_NS) {
			g->gaps++;
			if (end - start > g->longest)
				g->longest = end - start;
		}
	}
}

/* What the CPU did while no GPU work ran: that GPU's process's. */
static int gpu_idle__tally_cpu(struct gpu_idle *g, const struct analysis *a)
{
	const struct profile *p = a->profile;
	int err;

	for (size_t i = 0; i < p->nr_samples; i++) {
		const struct sample *s = &p->samples[i];
		char location[512];

		if (a->is_gpu_stack[s->stack] || s->time_ns >= g->window ||
		    spans__cover(g->busy.items, g->busy.nr, s->time_ns))
			continue;
		if (g->pid && s->thread < p->nr_threads && p->threads[s->thread].pid != g->pid)
			continue;
		g->gap_weight += s->weight;
		err =
		    tally__add(&g->during, sample_location(p, s->stack, location, sizeof(location)),
			       s->weight);
		if (err)
			return err;
	}
	tally__sort(&g->during);
	return 0;
}

/* The finding: the gaps, every GPU's busy share where there are several
 * processes, and what the CPU did meanwhile. */
static int gpu_idle__finding(const struct gpu_idle *g, struct analysis *a, struct rule_outcome *o)
{
	const struct profile *p = a->profile;
	struct finding *f;

	if (g->several)
		f = analysis__add_finding(a, o->rule, g->idle, "GPU time",
					  "The GPU of %s is idle %.1f%% of the time", g->label,
					  100 * g->idle);
	else
		f = analysis__add_finding(a, o->rule, g->idle, "GPU time",
					  "The GPU is idle %.1f%% of the time", 100 * g->idle);
	if (!f)
		return -ENOMEM;
	if (finding__evidence(
		f, "%zu idle gaps of 1 ms or more, the longest %.1f ms; GPU busy %.3f s of %.3f s",
		g->gaps, g->longest / 1e6, g->busy_ns / 1e9, g->window / 1e9))
		return -ENOMEM;
	for (size_t d = 0; g->several && d < g->nr_devices; d++) {
		struct intervals other = {0};
		char name[320];
		uint64_t ns;

		if (collect(p, g->devices[d], NULL, &other))
			return -ENOMEM;
		ns = intervals__merge(&other);
		free(other.items);
		profile__gpu_process_label(p, g->devices[d] >> 32, name, sizeof(name));
		if (finding__evidence(f, "GPU %u of %s: busy %.1f%%", (unsigned int)g->devices[d],
				      name, g->window ? 100.0 * ns / g->window : 0.0))
			return -ENOMEM;
	}
	if (g->during.nr) {
		if (finding__locate(f, g->during.entries[0].key) ||
		    finding__evidence(f, "what the CPU did while the GPU waited:") ||
		    finding__evidence_from_tally(f, &g->during, g->gap_weight, EVIDENCE_TOP))
			return -ENOMEM;
	}
	return finding__suggest(f,
				"the GPU waits for the CPU: prepare the next batch while the "
				"step runs (DataLoader workers, pin_memory, prefetch), take host "
				"synchronisation out of the step, and batch small kernels (CUDA "
				"graphs, torch.compile); the code above is what ran instead");
}

/*
 * Where the GPU work ran for several processes, each one's devices are
 * GPUs of their own (ranks that each see their GPU as device 0): the rule
 * looks at the idlest of them, and at what its process's CPU did meanwhile;
 * a busy rank must not hide an idle one.  In one process, the GPUs are
 * idle where none of them runs anything.
 */
static int gpu_idle(struct analysis *a, struct rule_outcome *o)
{
	const struct profile *p = a->profile;
	struct gpu_idle g = {.device = ALL_DEVICES};
	int err;

	if (!a->has_gpu)
		return outcome__note(o, "%s",
				     "needs GPU activity with times (the profile has none)");
	o->ran = true;
	g.several = profile__gpu_several_processes(p);
	/* Where the GPU timeline was cut, the spans end there. */
	g.window = p->gpu_timeline_end_ns && p->gpu_timeline_end_ns < p->duration_ns
		       ? p->gpu_timeline_end_ns
		       : p->duration_ns;
	if (g.several) {
		err = gpu_idle__pick_device(&g, p);
		if (err)
			return err;
	}
	err = collect(p, g.device, NULL, &g.busy);
	if (err)
		return err;
	g.busy_ns = intervals__merge(&g.busy);
	g.idle = g.busy_ns < g.window ? 1 - (double)g.busy_ns / g.window : 0;
	gpu_idle__count_gaps(&g);
	if (g.several)
		err = outcome__note(o,
				    "the idlest of %zu processes' GPUs, %s, ran no GPU work %.1f%% "
				    "of the %.2f s profiled (fires at %.0f%%)",
				    g.nr_devices, g.label, 100 * g.idle, g.window / 1e9,
				    100 * GPU_IDLE_MIN_SHARE);
	else
		err = outcome__note(
		    o, "no GPU work ran %.1f%% of the %.2f s profiled (fires at %.0f%%)",
		    100 * g.idle, g.window / 1e9, 100 * GPU_IDLE_MIN_SHARE);
	if (err || g.idle < GPU_IDLE_MIN_SHARE)
		goto cleanup;
	err = gpu_idle__tally_cpu(&g, a);
	if (!err)
		err = gpu_idle__finding(&g, a, o);
cleanup:
	free(g.busy.items);
	tally__free(&g.during);
	return err;
}

static int compare_u64(const void *x, const void *y)
{
	uint64_t a = *(const uint64_t *)x, b = *(const uint64_t *)y;

	return a < b ? -1 : a > b;
}

static int launch_bound(struct analysis *a, struct rule_outcome *o)
{
	const struct profile *p = a->profile;
	uint64_t *durations = NULL, kernel_ns = 0, launch_weight = 0, median;
	struct tally where = {0};
	size_t n = 0;
	double launch_s, ratio;
	struct finding *f;
	int err = 0;

	if (!a->has_gpu)
		return outcome__note(o, "%s",
				     "needs GPU activity with times (the profile has none)");
	if (!a->seconds_per_weight)
		return outcome__note(o, "%s",
				     "needs CPU time in seconds (a sampling rate or time weights)");
	o->ran = true;
	durations = malloc((p->nr_gpu ? p->nr_gpu : 1) * sizeof(*durations));
	if (!durations)
		return -ENOMEM;
	for (size_t i = 0; i < p->nr_gpu; i++) {
		if (p->gpu[i].kind != GPU_KERNEL || p->gpu[i].end_ns <= p->gpu[i].start_ns)
			continue;
		durations[n] = p->gpu[i].end_ns - p->gpu[i].start_ns;
		kernel_ns += durations[n++];
	}
	if (n < LAUNCH_MIN_KERNELS) {
		err = outcome__note(o, "%zu kernels (needs %d or more)", n, LAUNCH_MIN_KERNELS);
		goto cleanup;
	}
	qsort(durations, n, sizeof(*durations), compare_u64);
	median = durations[n / 2];
	for (size_t i = 0; i < p->nr_stacks; i++) {
		char location[512];
		int at;

		if (a->is_gpu_stack[i] || a->is_off_cpu_stack[i] || !p->stacks[i].weight)
			continue;
		at = analysis__stack_find(p, i, launch_calls);
		if (at < 0)
			continue;
		launch_weight += p->stacks[i].weight;
		if (!analysis__python_location(p, i, at, location, sizeof(location)))
			snprintf(location, sizeof(location), "%s",
				 at ? p->frames[p->stacks[i].frames[at - 1]].name : "?");
		err = tally__add(&where, location, p->stacks[i].weight);
		if (err)
			goto cleanup;
	}
	launch_s = launch_weight * a->seconds_per_weight;
	ratio = kernel_ns ? launch_s / (kernel_ns / 1e9) : 0;
	err =
	    outcome__note(o,
			  "%zu kernels, median %.1f us (fires at %.0f us or less); CPU time in "
			  "launch calls is %.2fx the kernels' GPU time (fires at %.1fx)",
			  n, median / 1e3, LAUNCH_MAX_MEDIAN_NS / 1e3, ratio, LAUNCH_MIN_CPU_RATIO);
	if (err || median > LAUNCH_MAX_MEDIAN_NS || ratio < LAUNCH_MIN_CPU_RATIO)
		goto cleanup;
	tally__sort(&where);
	f = analysis__add_finding(
	    a, o->rule, p->duration_ns ? launch_s / (p->duration_ns / 1e9) : 0, "wall time",
	    "Launch-bound: %zu short kernels (median %.1f us) cost more CPU to "
	    "launch than GPU to run",
	    n, median / 1e3);
	err = -ENOMEM;
	if (!f || (where.nr && finding__locate(f, where.entries[0].key)))
		goto cleanup;
	if (finding__evidence(f, "launch calls took %.3f s of CPU, the kernels %.3f s of GPU",
			      launch_s, kernel_ns / 1e9))
		goto cleanup;
	if (finding__evidence_from_tally(f, &where, launch_weight, EVIDENCE_TOP))
		goto cleanup;
	err =
	    finding__suggest(f, "capture the step in a CUDA graph (torch.cuda.graphs, or "
				"torch.compile(mode=\"reduce-overhead\")), fuse small operations "
				"(torch.compile), or give each kernel more work (larger batches)");
cleanup:
	free(durations);
	tally__free(&where);
	return err;
}

static bool is_pageable_copy(const struct gpu_activity *g)
{
	return g->kind == GPU_MEMCPY &&
	       (g->src_memory == GPU_MEMORY_PAGEABLE || g->dst_memory == GPU_MEMORY_PAGEABLE);
}

/* From stack weights alone (folded input): the share of GPU time in copies
 * whose frame says pageable. */
static int pageable_copy_from_stacks(struct analysis *a, struct rule_outcome *o)
{
	const struct profile *p = a->profile;
	uint64_t gpu = 0, pageable = 0;
	struct tally where = {0};
	struct finding *f;
	double share;
	int err = 0;

	for (size_t i = 0; i < p->nr_stacks; i++) {
		const struct stack *s = &p->stacks[i];
		const char *leaf = analysis__leaf_name(p, i);
		char location[512];

		if (!a->is_gpu_stack[i])
			continue;
		gpu += s->weight;
		if (strncmp(leaf, "memcpy ", 7) || !strstr(leaf, "(pageable)"))
			continue;
		pageable += s->weight;
		if (!analysis__python_location(p, i, -1, location, sizeof(location)))
			snprintf(location, sizeof(location), "%s",
				 s->depth > 1 ? p->frames[s->frames[s->depth - 2]].name : "?");
		err = tally__add(&where, location, s->weight);
		if (err)
			goto cleanup;
	}
	if (!gpu) {
		err = outcome__note(o, "%s", "needs GPU activity (the profile has none)");
		goto cleanup;
	}
	o->ran = true;
	share = (double)pageable / gpu;
	err = outcome__note(
	    o, "%.1f%% of GPU time in copies through pageable memory (fires at %.0f%%)",
	    100 * share, 100 * PAGEABLE_MIN_SHARE);
	if (err || share < PAGEABLE_MIN_SHARE)
		goto cleanup;
	tally__sort(&where);
	f = analysis__add_finding(a, o->rule, share, "GPU time",
				  "Copies through pageable host memory: %.1f%% of GPU time",
				  100 * share);
	err = -ENOMEM;
	if (!f || (where.nr && finding__locate(f, where.entries[0].key)))
		goto cleanup;
	if (finding__evidence_from_tally(f, &where, pageable, EVIDENCE_TOP))
		goto cleanup;
	err = finding__suggest(f, PAGEABLE_SUGGESTION);
cleanup:
	tally__free(&where);
	return err;
}

static int pageable_copy(struct analysis *a, struct rule_outcome *o)
{
	const struct profile *p = a->profile;
	uint64_t pageable_ns = 0, bytes = 0;
	struct tally where = {0};
	size_t copies = 0, known = 0, pageable = 0;
	struct finding *f;
	double share;
	int err = 0;

	if (!a->has_gpu)
		return pageable_copy_from_stacks(a, o);
	for (size_t i = 0; i < p->nr_gpu; i++) {
		const struct gpu_activity *g = &p->gpu[i];
		char location[512];

		if (g->kind != GPU_MEMCPY)
			continue;
		copies++;
		if (g->src_memory || g->dst_memory)
			known++;
		if (!is_pageable_copy(g))
			continue;
		pageable++;
		pageable_ns += g->end_ns - g->start_ns;
		bytes += g->bytes;
		if (g->stack == UINT32_MAX)
			snprintf(location, sizeof(location), "(launch stack unknown)");
		else if (!analysis__python_location(p, g->stack, -1, location, sizeof(location)))
			snprintf(location, sizeof(location), "%s",
				 p->stacks[g->stack].depth > 1
				     ? p->frames[p->stacks[g->stack]
						     .frames[p->stacks[g->stack].depth - 2]]
					   .name
				     : "?");
		err = tally__add(&where, location, g->end_ns - g->start_ns);
		if (err)
			goto cleanup;
	}
	if (!known) {
		err = outcome__note(o, "%zu copies, none with its memory kind", copies);
		goto cleanup;
	}
	o->ran = true;
	share = p->duration_ns ? (double)pageable_ns / p->duration_ns : 0;
	err = outcome__note(
	    o, "%zu of %zu copies from or to pageable memory, %.1f%% of the time (fires at %.0f%%)",
	    pageable, copies, 100 * share, 100 * PAGEABLE_MIN_SHARE);
	if (err || share < PAGEABLE_MIN_SHARE)
		goto cleanup;
	tally__sort(&where);
	f = analysis__add_finding(
	    a, o->rule, share, "GPU time",
	    "Copies through pageable host memory: %zu copies, %.1f MiB, %.1f%% of the time",
	    pageable, bytes / 1048576.0, 100 * share);
	err = -ENOMEM;
	if (!f || (where.nr && finding__locate(f, where.entries[0].key)))
		goto cleanup;
	if (finding__evidence(f,
			      "pageable copies ran at %.2f GB/s; they are staged through a bounce "
			      "buffer and block the calling thread",
			      pageable_ns ? bytes / (double)pageable_ns : 0))
		goto cleanup;
	if (finding__evidence_from_tally(f, &where, pageable_ns, EVIDENCE_TOP))
		goto cleanup;
	err = finding__suggest(f, PAGEABLE_SUGGESTION);
cleanup:
	tally__free(&where);
	return err;
}

static bool nccl_filter(const struct profile *p, const struct gpu_activity *g)
{
	return is_nccl_kernel(p, g);
}

static bool compute_filter(const struct profile *p, const struct gpu_activity *g)
{
	return g->kind == GPU_KERNEL && !is_nccl_kernel(p, g);
}

static int exposed_communication(struct analysis *a, struct rule_outcome *o)
{
	const struct profile *p = a->profile;
	uint64_t comm_ns = 0, exposed_ns = 0;
	uint64_t devices[64];
	size_t nr_devices;
	struct finding *f;
	double share;
	int err = 0;

	if (!a->has_gpu)
		return outcome__note(o, "%s",
				     "needs GPU activity with times (the profile has none)");
	nr_devices = list_devices(p, devices, 64);
	/* The recording's own figures, where it joined the NCCL calls: they
	 * count a one-rank communicator's copies too, which no kernel name
	 * says are NCCL's. */
	if (p->nccl.known && p->nccl.kernel_ns) {
		comm_ns = p->nccl.kernel_ns;
		exposed_ns = p->nccl.exposed_ns;
		nr_devices = p->nccl.devices ? p->nccl.devices : nr_devices;
	}
	for (size_t d = 0; !(p->nccl.known && p->nccl.kernel_ns) && d < nr_devices; d++) {
		struct intervals comm = {0}, compute = {0};

		err = collect(p, devices[d], nccl_filter, &comm);
		if (!err)
			err = collect(p, devices[d], compute_filter, &compute);
		if (!err) {
			comm_ns += intervals__merge(&comm);
			intervals__merge(&compute);
			exposed_ns +=
			    spans__uncovered(comm.items, comm.nr, compute.items, compute.nr);
		}
		free(comm.items);
		free(compute.items);
		if (err)
			return err;
	}
	if (!comm_ns)
		return outcome__note(o, "%s", "needs NCCL kernels (the profile has none)");
	o->ran = true;
	share =
	    p->duration_ns && nr_devices ? (double)exposed_ns / (p->duration_ns * nr_devices) : 0;
	err = outcome__note(o,
			    "%.1f%% of the time the GPU communicated with no compute beside it "
			    "(fires at %.0f%%)",
			    100 * share, 100 * EXPOSED_MIN_SHARE);
	if (err || share < EXPOSED_MIN_SHARE)
		return err;
	f = analysis__add_finding(a, o->rule, share, "GPU time",
				  "Exposed communication: %.1f%% of the time the GPU only "
				  "communicates",
				  100 * share);
	if (!f)
		return -ENOMEM;
	if (finding__evidence(
		f,
		"NCCL kernels ran %.3f s, %.3f s of it (%.0f%%) with no compute kernel "
		"on the same device",
		comm_ns / 1e9, exposed_ns / 1e9, 100.0 * exposed_ns / comm_ns))
		return -ENOMEM;
	return finding__suggest(f,
				"overlap communication with compute: let DDP start all-reduces "
				"during backward (bucket_cap_mb, gradient_as_bucket_view), use "
				"FSDP's backward_prefetch/forward_prefetch, skip synchronisation "
				"during gradient accumulation (no_sync), or give each GPU more "
				"work per step");
}

const struct rule gpu_rules[] = {
    {"gpu-idle", "time with no GPU work, and what the CPU did meanwhile", gpu_idle},
    {"launch-bound", "many short kernels that cost more CPU to launch than GPU to run",
     launch_bound},
    {"pageable-copy", "host-device copies through pageable memory", pageable_copy},
    {"exposed-communication", "NCCL kernels with no compute beside them", exposed_communication},
};
const size_t nr_gpu_rules = sizeof(gpu_rules) / sizeof(gpu_rules[0]);
