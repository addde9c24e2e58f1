// SPDX-License-Identifier: GPL-2.0
/*
 * The rules that read GPU memory (--gpu-memory): allocations that failed,
 * allocator churn, and memory that grows like a leak.  They read the
 * accounting a memory profile carries (profile->memory), which the live
 * profile and speedscope files hold and folded stacks do not.  Thresholds
 * are in llmprof-report(1).
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "findings/analysis.h"
#include "profile/text_output.h"

/* A failed request this small beside the peak, after frees, points at
 * fragmentation rather than a model too big for the device. */
#define FAILURE_FRAGMENTATION_SHARE 0.25
#define CHURN_MIN_ALLOCS 1000
#define CHURN_MIN_RATE 1000.0 /* allocations per second */
#define CHURN_MIN_RATIO 10.0  /* bytes allocated per byte of the peak */
#define LEAK_MIN_ALLOCS 4     /* live allocations from one stack */
#define LEAK_MIN_SPAN 0.5     /* of the calls' span, between the first and last */
#define LEAK_MIN_SITE_SHARE 0.25
#define LEAK_MIN_SHARE 0.05 /* of the peak, summed over the sites */
#define EVIDENCE_TOP 5

static int no_memory_data(const struct analysis *a, struct rule_outcome *o)
{
	if (a->profile->unit == UNIT_BYTES)
		return outcome__note(o, "%s",
				     "needs the GPU memory accounting, which this profile's stacks "
				     "do not carry (folded, pprof); record -f speedscope keeps it");
	return outcome__note(o, "%s", "needs GPU memory data (--gpu-memory)");
}

static const char *bytes(char *buf, size_t size, uint64_t n)
{
	text_output__bytes(buf, size, n);
	return buf;
}

static bool is_out_of_memory(const struct memory_site *s)
{
	return s->error &&
	       (strstr(s->error, "cudaErrorMemoryAllocation") || strstr(s->error, "OUT_OF_MEMORY"));
}

static int allocation_failure(struct analysis *a, struct rule_outcome *o)
{
	const struct memory_facts *m = &a->profile->memory;
	const struct memory_site *worst = NULL;
	char asked[32], peak[32], what[128] = "";
	struct finding *f;
	bool fragmented, oom;
	int err;

	if (!m->known)
		return no_memory_data(a, o);
	o->ran = true;
	err = outcome__note(o, "%" PRIu64 " failed allocations (fires at 1)", m->nr_failed);
	if (err || !m->nr_failed)
		return err;
	/* The largest out-of-memory request, else the largest request. */
	for (size_t i = 0; i < m->nr_sites; i++) {
		const struct memory_site *s = &m->sites[i];

		if (s->kind != MEMORY_SITE_FAILED)
			continue;
		if (!worst || (is_out_of_memory(s) && !is_out_of_memory(worst)) ||
		    (is_out_of_memory(s) == is_out_of_memory(worst) && s->bytes > worst->bytes))
			worst = s;
	}
	oom = worst && is_out_of_memory(worst);
	bytes(peak, sizeof(peak), m->peak);
	bytes(asked, sizeof(asked), worst ? worst->bytes : 0);
	if (worst)
		snprintf(what, sizeof(what), " (%s of %s)", worst->call, asked);
	/* What the failing call lacked: its request, of what it and the
	 * memory held at the peak needed together. */
	f = analysis__add_finding(
	    a, "allocation-failure",
	    worst && worst->bytes ? (double)worst->bytes / (worst->bytes + m->peak) : 1,
	    "GPU memory", "%s: %" PRIu64 " allocation%s failed%s",
	    oom ? "GPU out of memory" : "GPU allocations fail", m->nr_failed,
	    m->nr_failed == 1 ? "" : "s", what);
	if (!f)
		return -ENOMEM;
	err = finding__locate(f, worst ? (worst->location ? worst->location : worst->stack) : NULL);
	for (size_t i = 0; !err && i < m->nr_sites; i++) {
		const struct memory_site *s = &m->sites[i];

		if (s->kind != MEMORY_SITE_FAILED)
			continue;
		bytes(asked, sizeof(asked), s->bytes);
		err = finding__evidence(f, "%" PRIu64 " x %s of %s: %s at %s", s->count, s->call,
					asked, s->error ? s->error : "error", s->stack);
	}
	if (!err)
		err = finding__evidence(f, "the peak: %s live; %" PRIu64 " frees in the run", peak,
					m->nr_frees);
	fragmented = worst && m->nr_frees && m->peak &&
		     worst->bytes <= FAILURE_FRAGMENTATION_SHARE * m->peak;
	if (!err && !oom)
		err =
		    finding__suggest(f,
				     "the calls fail with %s, which is not a lack of memory: check "
				     "the device and the driver (nvidia-smi, CUDA_VISIBLE_DEVICES)",
				     worst && worst->error ? worst->error : "an error");
	else if (!err)
		err = finding__suggest(
		    f,
		    "reduce the batch size (or the sequence length), or trade compute for memory "
		    "with activation checkpointing (torch.utils.checkpoint)%s",
		    fragmented ? "; the request is small beside the peak and the run frees "
				 "memory, so fragmentation is likely: with PyTorch set "
				 "PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True"
			       : "");
	return err;
}

static int allocator_churn(struct analysis *a, struct rule_outcome *o)
{
	const struct memory_facts *m = &a->profile->memory;
	double seconds, rate, ratio, cost;
	char total[32], peak[32], size[32];
	struct finding *f;
	int err;

	if (!m->known)
		return no_memory_data(a, o);
	seconds = m->duration_ns / 1e9;
	if (seconds <= 0)
		return outcome__note(o, "%s", "needs the profile's duration (it has none)");
	o->ran = true;
	rate = m->nr_allocs / seconds;
	ratio = m->peak ? (double)m->allocated / m->peak : 0;
	err = outcome__note(
	    o,
	    "%" PRIu64 " allocations, %.0f/s, %.1fx the peak allocated (fires at %d "
	    "allocations and %.0f/s or %.0fx)",
	    m->nr_allocs, rate, ratio, CHURN_MIN_ALLOCS, CHURN_MIN_RATE, CHURN_MIN_RATIO);
	if (err || m->nr_allocs < CHURN_MIN_ALLOCS ||
	    (rate < CHURN_MIN_RATE && ratio < CHURN_MIN_RATIO))
		return err;
	/* What the churn costs is the time inside the calls. */
	cost = m->duration_ns ? (double)m->call_ns / m->duration_ns : 0;
	f = analysis__add_finding(a, "allocator-churn", cost, "wall time",
				  "Allocator churn: %" PRIu64
				  " CUDA allocations in %.2f s (%.0f/s)",
				  m->nr_allocs, seconds, rate);
	if (!f)
		return -ENOMEM;
	err = finding__evidence(f, "%s allocated in total, %.1fx the peak of %s; %" PRIu64 " frees",
				bytes(total, sizeof(total), m->allocated), ratio,
				bytes(peak, sizeof(peak), m->peak), m->nr_frees);
	if (!err)
		err = finding__evidence(f, "%.3f s inside the allocation and free calls",
					m->call_ns / 1e9);
	for (size_t i = 0, shown = 0; !err && i < m->nr_sites && shown < EVIDENCE_TOP; i++) {
		const struct memory_site *s = &m->sites[i];

		if (s->kind != MEMORY_SITE_FREQUENT)
			continue;
		if (!shown++)
			err = finding__locate(f, s->location ? s->location : s->stack);
		if (!err)
			err = finding__evidence(f, "%" PRIu64 " x %s (%s) at %s", s->count, s->call,
						bytes(size, sizeof(size), s->bytes), s->stack);
	}
	if (!err)
		err = finding__suggest(
		    f, "allocate the buffers once and reuse them (a pool; PyTorch's caching "
		       "allocator does this unless PYTORCH_NO_CUDA_MEMORY_CACHING is set), or use "
		       "the stream-ordered cudaMallocAsync/cudaFreeAsync, whose memory pool keeps "
		       "freed memory for the next request");
	return err;
}

static bool grows(const struct memory_facts *m, const struct memory_site *s)
{
	if (s->kind != MEMORY_SITE_LIVE_AT_END || s->count < LEAK_MIN_ALLOCS)
		return false;
	return (m->span_ns && s->last_ns - s->first_ns >= LEAK_MIN_SPAN * m->span_ns) ||
	       (m->peak && s->bytes >= LEAK_MIN_SITE_SHARE * m->peak);
}

static int memory_leak(struct analysis *a, struct rule_outcome *o)
{
	const struct memory_facts *m = &a->profile->memory;
	char live[32], peak[32], size[32];
	uint64_t leaked = 0;
	struct finding *f;
	double share;
	int err;

	if (!m->known)
		return no_memory_data(a, o);
	if (!m->peak)
		return outcome__note(o, "%s", "no GPU memory was allocated");
	o->ran = true;
	for (size_t i = 0; i < m->nr_sites; i++)
		if (grows(m, &m->sites[i]))
			leaked += m->sites[i].bytes;
	share = (double)leaked / m->peak;
	err = outcome__note(o,
			    "%.1f%% of the peak live at the end from stacks that allocated it "
			    "repeatedly (fires at %.0f%%); %s live at the end in all",
			    100 * share, 100 * LEAK_MIN_SHARE,
			    bytes(live, sizeof(live), m->end_live));
	if (err || share < LEAK_MIN_SHARE)
		return err;
	f = analysis__add_finding(a, "memory-leak", share, "GPU memory",
				  "GPU memory grows like a leak: %s still allocated at the end, "
				  "%.0f%% of the peak of %s",
				  bytes(live, sizeof(live), leaked), 100 * share,
				  bytes(peak, sizeof(peak), m->peak));
	if (!f)
		return -ENOMEM;
	for (size_t i = 0, shown = 0; !err && i < m->nr_sites && shown < EVIDENCE_TOP; i++) {
		const struct memory_site *s = &m->sites[i];

		if (!grows(m, s))
			continue;
		if (!shown++)
			err = finding__locate(f, s->location ? s->location : s->stack);
		if (!err)
			err = finding__evidence(
			    f,
			    "%s in %" PRIu64 " x %s from %.3f s to %.3f s, never "
			    "freed, at %s",
			    bytes(size, sizeof(size), s->bytes), s->count, s->call,
			    s->first_ns / 1e9, s->last_ns / 1e9, s->stack);
	}
	if (!err)
		err = finding__suggest(
		    f, "free what each step allocates, or stop keeping references to it (tensors "
		       "appended to a list for logging: store loss.item() or .detach().cpu() "
		       "instead; caches without a bound)");
	return err;
}

const struct rule memory_rules[] = {
    {"allocation-failure", "GPU allocations that failed (out of memory), with their stack",
     allocation_failure},
    {"allocator-churn", "many CUDA allocations and frees, or bytes allocated many times the peak",
     allocator_churn},
    {"memory-leak", "GPU memory still live at the end, allocated repeatedly from one stack",
     memory_leak},
};
const size_t nr_memory_rules = sizeof(memory_rules) / sizeof(memory_rules[0]);
