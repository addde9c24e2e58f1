// SPDX-License-Identifier: GPL-2.0
/* The summary of one profile; see profile_report.h. */
#include <errno.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "profile/profile_report.h"

struct report_entry {
	char *name;
	uint64_t self, total; /* GPU tables use self alone */
};

struct report {
	const struct profile *profile;
	uint64_t weight;  /* total */
	size_t nr_stacks; /* stacks with weight */
	struct report_entry *functions;
	size_t nr_functions;
	size_t *by_self, *by_total; /* orders of functions */
	uint64_t gpu_weight;
	struct report_entry *kernels, *launchers;
	size_t nr_kernels, nr_launchers;
};

static struct report_entry *sort_entries; /* qsort has no context argument */

static int compare_self(const void *a, const void *b)
{
	const struct report_entry *x = &sort_entries[*(const size_t *)a];
	const struct report_entry *y = &sort_entries[*(const size_t *)b];

	if (x->self != y->self)
		return x->self > y->self ? -1 : 1;
	if (x->total != y->total)
		return x->total > y->total ? -1 : 1;
	return strcmp(x->name, y->name);
}

static int compare_total(const void *a, const void *b)
{
	const struct report_entry *x = &sort_entries[*(const size_t *)a];
	const struct report_entry *y = &sort_entries[*(const size_t *)b];

	if (x->total != y->total)
		return x->total > y->total ? -1 : 1;
	if (x->self != y->self)
		return x->self > y->self ? -1 : 1;
	return strcmp(x->name, y->name);
}

static int compare_name(const void *a, const void *b)
{
	return strcmp(((const struct report_entry *)a)->name,
		      ((const struct report_entry *)b)->name);
}

static int compare_weight(const void *a, const void *b)
{
	const struct report_entry *x = a, *y = b;

	if (x->self != y->self)
		return x->self > y->self ? -1 : 1;
	return strcmp(x->name, y->name);
}

static void free_entries(struct report_entry *entries, size_t nr)
{
	if (!entries)
		return;
	for (size_t i = 0; i < nr; i++)
		free(entries[i].name);
	free(entries);
}

/* Sums entries of equal name, then orders them by weight. */
static void merge_entries(struct report_entry *entries, size_t *nr)
{
	size_t merged = 0;

	qsort(entries, *nr, sizeof(*entries), compare_name);
	for (size_t i = 0; i < *nr; i++) {
		if (merged && !strcmp(entries[merged - 1].name, entries[i].name)) {
			entries[merged - 1].self += entries[i].self;
			free(entries[i].name);
		} else {
			entries[merged++] = entries[i];
		}
	}
	*nr = merged;
	qsort(entries, merged, sizeof(*entries), compare_weight);
}

/* py-spy's "thread (0x7F3A2B4C5740)" and llmprof's "comm/tid". */
static bool thread_like(const char *name)
{
	const char *slash = strrchr(name, '/');

	if (!strncmp(name, "thread (", 8))
		return true;
	if (!slash || slash == name || !slash[1])
		return false;
	for (const char *c = slash + 1; *c; c++)
		if (*c < '0' || *c > '9')
			return false;
	return true;
}

/*
 * Frames that name a process or a thread, not code: their total is the
 * process's share, so they are not functions.  A recorded profile says so
 * by kind (FRAME_PROCESS, FRAME_THREAD).  Folded stacks and speedscope carry
 * no kinds, but every tool that writes them (llmprof, stackcollapse-perf.pl,
 * bcc, py-spy) puts the process first: there a frame that is only ever the
 * root, always with frames under it, is a process, and a thread-like name
 * only ever right under one is a thread.  Returns a malloc'd flag per frame, or NULL.
 */
static bool *label_frames(const struct profile *p)
{
	bool *label = calloc(p->nr_frames ? p->nr_frames : 1, sizeof(*label));
	bool *deeper = calloc(p->nr_frames ? p->nr_frames : 1, sizeof(*deeper));
	bool *parent = calloc(p->nr_frames ? p->nr_frames : 1, sizeof(*parent));
	bool kinds = false;

	if (!label || !deeper || !parent) {
		free(label);
		label = NULL;
		goto cleanup;
	}
	for (size_t i = 0; i < p->nr_frames; i++) {
		label[i] = p->frames[i].kind == FRAME_PROCESS || p->frames[i].kind == FRAME_THREAD;
		kinds |= label[i];
	}
	if (kinds)
		goto cleanup;
	/* deeper: seen below the root or as a leaf; parent: seen as a root
	 * with frames under it. */
	for (size_t i = 0; i < p->nr_stacks; i++) {
		const struct stack *s = &p->stacks[i];

		if (!s->weight || !s->depth)
			continue;
		parent[s->frames[0]] |= s->depth > 1;
		/* A frame with self weight ran code of its own. */
		deeper[s->frames[s->depth - 1]] = true;
		for (uint32_t d = 1; d < s->depth; d++)
			deeper[s->frames[d]] = true;
	}
	for (size_t i = 0; i < p->nr_frames; i++)
		label[i] = parent[i] && !deeper[i];
	/* Threads: only ever second, under a process, with frames under
	 * them; a frame seen anywhere else is code. */
	memset(parent, 0, p->nr_frames * sizeof(*parent));
	memset(deeper, 0, p->nr_frames * sizeof(*deeper));
	for (size_t i = 0; i < p->nr_stacks; i++) {
		const struct stack *s = &p->stacks[i];

		if (!s->weight || !s->depth)
			continue;
		for (uint32_t d = 1; d < s->depth; d++) {
			uint32_t f = s->frames[d];

			if (d == 1 && d + 1 < s->depth && label[s->frames[0]])
				parent[f] = true;
			else
				deeper[f] = true;
		}
	}
	for (size_t i = 0; i < p->nr_frames; i++)
		if (parent[i] && !deeper[i] && thread_like(p->frames[i].name))
			label[i] = true;
cleanup:
	free(deeper);
	free(parent);
	return label;
}

/* A function as the report names it: an inlined function is that
 * function (pprof -top names it so), without folded text's "_[i]". */
static char *report_name(const struct frame *f)
{
	char *name = frame__folded_name(f);
	size_t len = name ? strlen(name) : 0;

	if (name && f->kind == FRAME_INLINE && len > 4 && !strcmp(name + len - 4, "_[i]"))
		name[len - 4] = '\0';
	return name;
}
static int report_functions(struct report *r)
{
	const struct profile *p = r->profile;
	struct function_share *shares = NULL;
	int64_t n = profile__function_shares(p, &shares);
	bool *label;
	int err = -ENOMEM;

	if (n < 0)
		return n;
	label = label_frames(p);
	if (!label)
		goto cleanup;
	r->functions = calloc(n ? n : 1, sizeof(*r->functions));
	r->by_self = malloc((n ? n : 1) * sizeof(*r->by_self));
	r->by_total = malloc((n ? n : 1) * sizeof(*r->by_total));
	if (!r->functions || !r->by_self || !r->by_total)
		goto cleanup;
	for (int64_t i = 0; i < n; i++) {
		struct report_entry *e = &r->functions[r->nr_functions];

		if (!shares[i].total || label[shares[i].frame])
			continue;
		e->name = report_name(&p->frames[shares[i].frame]);
		if (!e->name)
			goto cleanup;
		e->self = shares[i].self;
		e->total = shares[i].total;
		r->by_self[r->nr_functions] = r->nr_functions;
		r->by_total[r->nr_functions] = r->nr_functions;
		r->nr_functions++;
	}
	sort_entries = r->functions;
	qsort(r->by_self, r->nr_functions, sizeof(*r->by_self), compare_self);
	qsort(r->by_total, r->nr_functions, sizeof(*r->by_total), compare_total);
	err = 0;
cleanup:
	free(shares);
	free(label);
	return err;
}

/* GPU time is the weight of stacks whose leaf is a GPU frame; the frame
 * above it launched the work. */
static int report_gpu(struct report *r)
{
	const struct profile *p = r->profile;
	size_t n = 0;

	for (size_t i = 0; i < p->nr_stacks; i++) {
		const struct stack *s = &p->stacks[i];

		if (s->weight && profile__stack_is_gpu(p, i))
			n++;
	}
	r->kernels = calloc(n ? n : 1, sizeof(*r->kernels));
	r->launchers = calloc(n ? n : 1, sizeof(*r->launchers));
	if (!r->kernels || !r->launchers)
		return -ENOMEM;
	for (size_t i = 0; i < p->nr_stacks; i++) {
		const struct stack *s = &p->stacks[i];
		const struct frame *leaf;
		size_t above;

		if (!s->weight || !s->depth)
			continue;
		leaf = &p->frames[s->frames[s->depth - 1]];
		if (leaf->kind != FRAME_GPU)
			continue;
		r->gpu_weight += s->weight;
		r->kernels[r->nr_kernels].name = strdup(leaf->name[0] ? leaf->name : "[unknown]");
		if (!r->kernels[r->nr_kernels].name)
			return -ENOMEM;
		r->kernels[r->nr_kernels++].self = s->weight;
		/* An NCCL call's frame sits between the launcher and the
		 * kernel. */
		above = s->depth - 2;
		if (s->depth >= 3 && p->frames[s->frames[above]].kind == FRAME_NCCL)
			above--;
		if (s->depth >= 2)
			r->launchers[r->nr_launchers].name =
			    frame__folded_name(&p->frames[s->frames[above]]);
		else
			r->launchers[r->nr_launchers].name = strdup("[none]");
		if (!r->launchers[r->nr_launchers].name)
			return -ENOMEM;
		r->launchers[r->nr_launchers++].self = s->weight;
	}
	merge_entries(r->kernels, &r->nr_kernels);
	merge_entries(r->launchers, &r->nr_launchers);
	return 0;
}

static void report_free(struct report *r)
{
	free_entries(r->functions, r->nr_functions);
	free_entries(r->kernels, r->nr_kernels);
	free_entries(r->launchers, r->nr_launchers);
	free(r->by_self);
	free(r->by_total);
}

static double share(uint64_t weight, uint64_t total)
{
	return total ? weight * 100.0 / total : 0;
}

static size_t rows(size_t nr, size_t top)
{
	return top && top < nr ? top : nr;
}

/* ---- text ------------------------------------------------------------- */

static void text_functions(const struct report *r, bool by_self, size_t top, FILE *out)
{
	const size_t *order = by_self ? r->by_self : r->by_total;
	size_t n = rows(r->nr_functions, top);

	fprintf(out, "\nTop %zu functions by %s share:\n", n, by_self ? "self" : "total");
	fprintf(out, "%8s %8s  %s\n", by_self ? "SELF" : "TOTAL", by_self ? "TOTAL" : "SELF",
		"FUNCTION");
	for (size_t i = 0; i < n; i++) {
		const struct report_entry *e = &r->functions[order[i]];
		double self = share(e->self, r->weight), total = share(e->total, r->weight);

		fprintf(out, "%7.2f%% %7.2f%%  %s\n", by_self ? self : total,
			by_self ? total : self, e->name);
	}
	if (!n)
		fprintf(out, "%8s (no samples)\n", "");
}

static void text_gpu_table(const struct report *r, const struct report_entry *entries, size_t nr,
			   const char *title, const char *column, size_t top, FILE *out)
{
	size_t n = rows(nr, top);

	fprintf(out, "\nTop %zu %s:\n", n, title);
	fprintf(out, "%8s %14s  %s\n", "SHARE",
		r->profile->unit == UNIT_SAMPLES ? "WEIGHT"
		: r->profile->unit == UNIT_BYTES ? "BYTES"
						 : "TIME",
		column);
	for (size_t i = 0; i < n; i++) {
		char weight[64];

		text_output__weight(weight, sizeof(weight), entries[i].self, r->profile->unit);
		fprintf(out, "%7.2f%% %14s  %s\n", share(entries[i].self, r->gpu_weight), weight,
			entries[i].name);
	}
}

static void describe_count(char *buf, size_t size, const struct profile *p, uint64_t weight)
{
	if (p->samples_taken)
		snprintf(buf, size, "%llu", (unsigned long long)p->samples_taken);
	else
		snprintf(buf, size, "%s", weight ? "unknown" : "0");
}

static void describe_duration(char *buf, size_t size, const struct profile *p)
{
	if (p->duration_ns)
		snprintf(buf, size, "%.3f s", p->duration_ns / 1e9);
	else
		snprintf(buf, size, "unknown");
}

static void describe_weight(char *buf, size_t size, const struct profile *p, uint64_t weight)
{
	if (p->unit == UNIT_SAMPLES)
		snprintf(buf, size, "%llu samples", (unsigned long long)weight);
	else
		text_output__weight(buf, size, weight, p->unit);
}

static void write_text(const struct report *r, const struct report_options *o, FILE *out)
{
	const struct profile *p = r->profile;
	char samples[64], duration[64], weight[64];

	describe_count(samples, sizeof(samples), p, r->weight);
	describe_duration(duration, sizeof(duration), p);
	describe_weight(weight, sizeof(weight), p, r->weight);
	fprintf(out, "profile:   %s (%s)\n", o->name, o->format);
	if (o->event && o->event[0])
		fprintf(out, "events:    %s (read: %s)\n", o->events, o->event);
	fprintf(out, "samples:   %s\n", samples);
	fprintf(out, "duration:  %s\n", duration);
	fprintf(out, "weight:    %s\n", weight);
	fprintf(out, "stacks:    %zu\n", r->nr_stacks);
	fprintf(out, "functions: %zu\n", r->nr_functions);
	text_functions(r, true, o->top, out);
	text_functions(r, false, o->top, out);
	if (!r->gpu_weight)
		return;
	describe_weight(weight, sizeof(weight), p, r->gpu_weight);
	fprintf(out, "\nGPU time: %s (%.2f%% of the profile)\n", weight,
		share(r->gpu_weight, r->weight));
	text_gpu_table(r, r->kernels, r->nr_kernels, "GPU kernels", "KERNEL", o->top, out);
	text_gpu_table(r, r->launchers, r->nr_launchers, "launching functions", "FUNCTION", o->top,
		       out);
}

/* ---- markdown --------------------------------------------------------- */

static void markdown_functions(const struct report *r, bool by_self, size_t top, FILE *out)
{
	const size_t *order = by_self ? r->by_self : r->by_total;
	size_t n = rows(r->nr_functions, top);

	fprintf(out, "\n### Top %zu functions by %s share\n\n", n, by_self ? "self" : "total");
	if (!n) {
		fprintf(out, "No samples.\n");
		return;
	}
	fprintf(out, "| Function | %s | %s |\n| --- | ---: | ---: |\n", by_self ? "Self" : "Total",
		by_self ? "Total" : "Self");
	for (size_t i = 0; i < n; i++) {
		const struct report_entry *e = &r->functions[order[i]];
		double self = share(e->self, r->weight), total = share(e->total, r->weight);

		fprintf(out, "| ");
		text_output__markdown_code(out, e->name);
		fprintf(out, " | %.2f%% | %.2f%% |\n", by_self ? self : total,
			by_self ? total : self);
	}
}

static void markdown_gpu_table(const struct report *r, const struct report_entry *entries,
			       size_t nr, const char *title, const char *column, size_t top,
			       FILE *out)
{
	size_t n = rows(nr, top);

	fprintf(out, "\n### Top %zu %s\n\n| %s | Share | %s |\n| --- | ---: | ---: |\n", n, title,
		column,
		r->profile->unit == UNIT_SAMPLES ? "Weight"
		: r->profile->unit == UNIT_BYTES ? "Bytes"
						 : "Time");
	for (size_t i = 0; i < n; i++) {
		char weight[64];

		text_output__weight(weight, sizeof(weight), entries[i].self, r->profile->unit);
		fprintf(out, "| ");
		text_output__markdown_code(out, entries[i].name);
		fprintf(out, " | %.2f%% | %s |\n", share(entries[i].self, r->gpu_weight), weight);
	}
}

static void write_markdown(const struct report *r, const struct report_options *o, FILE *out)
{
	const struct profile *p = r->profile;
	char samples[64], duration[64], weight[64];

	describe_count(samples, sizeof(samples), p, r->weight);
	describe_duration(duration, sizeof(duration), p);
	describe_weight(weight, sizeof(weight), p, r->weight);
	fprintf(out, "## llmprof report: ");
	text_output__markdown_code(out, o->name);
	fprintf(out,
		"\n\n| | |\n| --- | --- |\n| Format | %s |\n| Samples | %s |\n"
		"| Duration | %s |\n| Weight | %s |\n| Stacks | %zu |\n| Functions | %zu |\n",
		o->format, samples, duration, weight, r->nr_stacks, r->nr_functions);
	if (o->event && o->event[0])
		fprintf(out, "| Events | %s (read: %s) |\n", o->events, o->event);
	markdown_functions(r, true, o->top, out);
	markdown_functions(r, false, o->top, out);
	if (!r->gpu_weight)
		return;
	describe_weight(weight, sizeof(weight), p, r->gpu_weight);
	fprintf(out, "\n### GPU time\n\n%s, %.2f%% of the profile.\n", weight,
		share(r->gpu_weight, r->weight));
	markdown_gpu_table(r, r->kernels, r->nr_kernels, "GPU kernels", "Kernel", o->top, out);
	markdown_gpu_table(r, r->launchers, r->nr_launchers, "launching functions", "Function",
			   o->top, out);
}

/* ---- json ------------------------------------------------------------- */

static void json_functions(const struct report *r, const size_t *order, size_t top, FILE *out)
{
	size_t n = rows(r->nr_functions, top);

	fprintf(out, "[");
	for (size_t i = 0; i < n; i++) {
		const struct report_entry *e = &r->functions[order[i]];

		fprintf(out, "%s\n    {\"name\": ", i ? "," : "");
		text_output__json_string(out, e->name);
		fprintf(out, ", \"self\": ");
		text_output__json_number(out, share(e->self, r->weight));
		fprintf(out, ", \"total\": ");
		text_output__json_number(out, share(e->total, r->weight));
		fprintf(out, ", \"self_weight\": %llu, \"total_weight\": %llu}",
			(unsigned long long)e->self, (unsigned long long)e->total);
	}
	fprintf(out, "%s]", n ? "\n  " : "");
}

static void json_gpu_entries(const struct report *r, const struct report_entry *entries, size_t nr,
			     size_t top, FILE *out)
{
	size_t n = rows(nr, top);

	fprintf(out, "[");
	for (size_t i = 0; i < n; i++) {
		fprintf(out, "%s\n      {\"name\": ", i ? "," : "");
		text_output__json_string(out, entries[i].name);
		fprintf(out,
			", \"weight\": %llu, \"share\": ", (unsigned long long)entries[i].self);
		text_output__json_number(out, share(entries[i].self, r->gpu_weight));
		fprintf(out, "}");
	}
	fprintf(out, "%s]", n ? "\n    " : "");
}

/* The NCCL table of a recording (speedscope's llmprofNccl), bandwidths in
 * GB/s as nccl-tests gives them. */
static void json_nccl(const struct nccl_facts *f, FILE *out)
{
	fprintf(out,
		",\n  \"nccl\": {\n    \"kernel_ns\": %llu,\n    \"exposed_ns\": %llu,\n"
		"    \"wall_ns\": %llu,\n    \"devices\": %u,\n    \"rows\": [",
		(unsigned long long)f->kernel_ns, (unsigned long long)f->exposed_ns,
		(unsigned long long)f->wall_ns, f->devices);
	for (size_t i = 0; i < f->nr_rows; i++) {
		const struct nccl_row *row = &f->rows[i];
		double algbw = row->gpu_ns ? (double)row->timed_size / row->gpu_ns : 0;

		fprintf(out, "%s\n      {\"operation\": ", i ? "," : "");
		text_output__json_string(out, row->operation);
		fprintf(out,
			", \"bucket\": %llu, \"ranks\": %u, \"calls\": %llu, \"bytes\": %llu, "
			"\"size\": %llu, \"gpu_ns\": %llu, \"timed_calls\": %llu, \"algbw\": ",
			(unsigned long long)row->bucket, row->ranks, (unsigned long long)row->calls,
			(unsigned long long)row->bytes, (unsigned long long)row->size,
			(unsigned long long)row->gpu_ns, (unsigned long long)row->timed_calls);
		text_output__json_number(out, algbw);
		fprintf(out, ", \"busbw\": ");
		text_output__json_number(out, algbw * nccl_row__bus_factor(row));
		fprintf(out, "}");
	}
	fprintf(out, "%s]\n  }", f->nr_rows ? "\n    " : "");
}

static void write_json(const struct report *r, const struct report_options *o, FILE *out)
{
	const struct profile *p = r->profile;

	fprintf(out, "{\n  \"file\": ");
	text_output__json_string(out, o->name);
	fprintf(out, ",\n  \"format\": ");
	text_output__json_string(out, o->format);
	if (o->event && o->event[0]) {
		fprintf(out, ",\n  \"events\": ");
		text_output__json_string(out, o->events);
		fprintf(out, ",\n  \"event\": ");
		text_output__json_string(out, o->event);
	}
	fprintf(out, ",\n  \"unit\": \"%s\",\n", unit__name(p->unit, UNIT_NAME_REPORT_COUNT));
	if (p->samples_taken || !r->weight)
		fprintf(out, "  \"samples\": %llu,\n", (unsigned long long)p->samples_taken);
	else
		fprintf(out, "  \"samples\": null,\n");
	if (p->duration_ns)
		fprintf(out, "  \"duration_ns\": %llu,\n", (unsigned long long)p->duration_ns);
	else
		fprintf(out, "  \"duration_ns\": null,\n");
	fprintf(out, "  \"weight\": %llu,\n  \"stacks\": %zu,\n  \"functions\": %zu,\n",
		(unsigned long long)r->weight, r->nr_stacks, r->nr_functions);
	fprintf(out, "  \"top_self\": ");
	json_functions(r, r->by_self, o->top, out);
	fprintf(out, ",\n  \"top_total\": ");
	json_functions(r, r->by_total, o->top, out);
	if (!r->gpu_weight) {
		fprintf(out, ",\n  \"gpu\": null");
	} else {
		fprintf(out, ",\n  \"gpu\": {\n    \"weight\": %llu,\n    \"share\": ",
			(unsigned long long)r->gpu_weight);
		text_output__json_number(out, share(r->gpu_weight, r->weight));
		fprintf(out, ",\n    \"kernels\": ");
		json_gpu_entries(r, r->kernels, r->nr_kernels, o->top, out);
		fprintf(out, ",\n    \"launchers\": ");
		json_gpu_entries(r, r->launchers, r->nr_launchers, o->top, out);
		fprintf(out, "\n  }");
	}
	if (p->nccl.known)
		json_nccl(&p->nccl, out);
	fprintf(out, "\n}\n");
}

int profile_report__write(const struct profile *p, const struct report_options *o,
			  enum text_format format, FILE *out)
{
	struct report r = {.profile = p};
	int err;

	if (format == TEXT_FORMAT_FOLDED)
		return -EINVAL;
	r.weight = profile__total_weight(p);
	for (size_t i = 0; i < p->nr_stacks; i++)
		r.nr_stacks += p->stacks[i].weight && p->stacks[i].depth;
	err = report_functions(&r);
	if (!err)
		err = report_gpu(&r);
	if (err)
		goto cleanup;
	if (format == TEXT_FORMAT_JSON)
		write_json(&r, o, out);
	else if (format == TEXT_FORMAT_MARKDOWN)
		write_markdown(&r, o, out);
	else
		write_text(&r, o, out);
	if (format != TEXT_FORMAT_JSON && p->nccl.known) {
		char *table = nccl_facts__format(&p->nccl, "  ");

		if (table)
			fprintf(out,
				format == TEXT_FORMAT_MARKDOWN ? "\n## NCCL\n\n```\n%s```\n"
							       : "\nNCCL collectives:\n%s",
				table);
		free(table);
	}
	err = fflush(out) || ferror(out) ? -EIO : 0;
cleanup:
	report_free(&r);
	return err;
}
