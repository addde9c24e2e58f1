// SPDX-License-Identifier: GPL-2.0
/* report --by-process; see process_report.h. */
#include <errno.h>
#include <math.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "array.h"
#include "profile/process_report.h"

struct process_row {
	const char *file;
	const char *label; /* the root frame */
	uint32_t root;	   /* its frame id in profile */
	const struct profile *profile;
	uint64_t cpu, gpu; /* weights of CPU and of GPU stacks */
	uint32_t top;	   /* frame with the most self weight, UINT32_MAX if none */
	uint64_t top_weight;
};

static int add_rows(const struct profile *p, const char *file, struct process_row **rows,
		    size_t *nr, size_t *cap)
{
	size_t first = *nr;
	uint64_t *self = calloc(p->nr_frames ? p->nr_frames : 1, sizeof(*self));
	uint32_t *owner = calloc(p->nr_frames ? p->nr_frames : 1, sizeof(*owner));

	if (!self || !owner) {
		free(self);
		free(owner);
		return -ENOMEM;
	}
	for (size_t i = 0; i < p->nr_stacks; i++) {
		const struct stack *s = &p->stacks[i];
		struct process_row *row = NULL;

		if (!s->depth || !s->weight)
			continue;
		for (size_t k = first; k < *nr; k++)
			if ((*rows)[k].root == s->frames[0])
				row = &(*rows)[k];
		if (!row) {
			if (array__grow((void **)rows, cap, *nr + 1, sizeof(**rows))) {
				free(self);
				free(owner);
				return -ENOMEM;
			}
			row = &(*rows)[(*nr)++];
			memset(row, 0, sizeof(*row));
			row->file = file;
			row->profile = p;
			row->root = s->frames[0];
			row->label = p->frames[s->frames[0]].name;
			row->top = UINT32_MAX;
		}
		if (profile__stack_is_gpu(p, i)) {
			row->gpu += s->weight;
			continue;
		}
		row->cpu += s->weight;
		if (s->depth > 1) {
			uint32_t leaf = s->frames[s->depth - 1];

			self[leaf] += s->weight;
			owner[leaf] = s->frames[0];
		}
	}
	for (size_t f = 0; f < p->nr_frames; f++) {
		for (size_t k = first; k < *nr && self[f]; k++) {
			struct process_row *row = &(*rows)[k];

			if (owner[f] == row->root && self[f] > row->top_weight) {
				row->top = f;
				row->top_weight = self[f];
			}
		}
	}
	free(self);
	free(owner);
	return 0;
}

static int compare_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return x < y ? -1 : x > y;
}

/* The calls in which a rank waits for the others: a c10d work's wait (gloo
 * on the CPU, NCCL's host-side wait), and NCCL's own.  A gloo thread that
 * waits for work in its run loop is idle, not waiting for a rank. */
bool profile__stack_waits_for_collective(const struct profile *p, uint32_t stack)
{
	const struct stack *s = &p->stacks[stack];

	if (!profile__stack_is_off_cpu(p, stack) || profile__stack_is_preempted(p, stack))
		return false;
	for (uint32_t i = s->depth; i-- > 0;) {
		const char *name = p->frames[s->frames[i]].name;

		/* A gloo thread's loop; the store's waits (TCPStore::wait,
		 * ::waitForWorkers: the rendezvous, before any collective). */
		if (strstr(name, "::runLoop") || !strncmp(name, "c10d::TCPStore::", 16))
			return false;
		/* A work's wait. */
		if ((!strncmp(name, "c10d::", 6) && strstr(name, "Work") &&
		     strstr(name, "::wait")) ||
		    !strncmp(name, "ncclGroupEnd", 12) || !strncmp(name, "ncclAllReduce", 13))
			return true;
	}
	return false;
}

static struct rank_load *load_row(const struct profile *p, uint32_t root, struct rank_load **rows,
				  size_t first, size_t *nr, size_t *cap)
{
	struct rank_load *row;

	for (size_t k = first; k < *nr; k++)
		if ((*rows)[k].root == root)
			return &(*rows)[k];
	if (array__grow((void **)rows, cap, *nr + 1, sizeof(**rows)))
		return NULL;
	row = &(*rows)[(*nr)++];
	memset(row, 0, sizeof(*row));
	row->profile = p;
	row->root = root;
	row->label = p->frames[root].name;
	row->worker = strstr(row->label, "[worker ") != NULL;
	row->rank = !row->worker && strstr(row->label, "[rank ") != NULL;
	return row;
}

static void load_add(struct rank_load *row, const struct profile *p, uint32_t stack,
		     uint64_t weight)
{
	row->wall += weight;
	if (!profile__stack_is_off_cpu(p, stack) || profile__stack_is_preempted(p, stack))
		row->busy += weight;
	else if (profile__stack_waits_for_collective(p, stack))
		row->waits += weight;
}

/*
 * On a timeline, the ranks are compared over the span in which all of them
 * run collectives (from the last rank's first wait in one to the first
 * rank's last): the training, without the start-up (imports, model
 * building) that every rank does alike and that would dilute the
 * difference.  Returns false when there is no such span.
 */
static bool collective_span(const struct profile *p, const struct rank_load *rows, size_t first,
			    size_t nr, uint64_t *from, uint64_t *to)
{
	uint64_t *first_ns = NULL, *last_ns = NULL;
	size_t ranks = 0;
	bool found = false;

	*from = 0;
	*to = UINT64_MAX;
	if (!p->nr_samples || nr == first)
		return false;
	first_ns = malloc((nr - first) * sizeof(*first_ns));
	last_ns = calloc(nr - first, sizeof(*last_ns));
	if (!first_ns || !last_ns)
		goto out;
	for (size_t k = 0; k < nr - first; k++)
		first_ns[k] = UINT64_MAX;
	for (size_t i = 0; i < p->nr_samples; i++) {
		const struct sample *x = &p->samples[i];
		const struct stack *s = &p->stacks[x->stack];

		if (!s->depth || !profile__stack_waits_for_collective(p, x->stack))
			continue;
		for (size_t k = first; k < nr; k++) {
			if (rows[k].root != s->frames[0])
				continue;
			if (first_ns[k - first] == UINT64_MAX)
				first_ns[k - first] = x->time_ns;
			last_ns[k - first] = x->time_ns;
		}
	}
	for (size_t k = first; k < nr; k++) {
		if (!rows[k].rank)
			continue;
		if (first_ns[k - first] == UINT64_MAX)
			goto out;
		ranks++;
		if (first_ns[k - first] > *from)
			*from = first_ns[k - first];
		if (last_ns[k - first] < *to)
			*to = last_ns[k - first];
	}
	found = ranks >= 2 && *from < *to;
out:
	free(first_ns);
	free(last_ns);
	return found;
}

/* A time in the profile's unit; 0 where weights are not times. */
static uint64_t ns_to_weight(const struct profile *p, uint64_t ns)
{
	if (p->unit == UNIT_NANOSECONDS)
		return ns;
	return p->unit == UNIT_MICROSECONDS ? ns / 1000 : 0;
}

int rank_loads__read(const struct profile *p, struct rank_load **rows, size_t *nr, size_t *cap)
{
	size_t first = *nr;
	uint64_t from, to;

	for (uint32_t i = 0; i < p->nr_stacks; i++) {
		const struct stack *s = &p->stacks[i];
		struct rank_load *row;

		if (!s->depth || !s->weight)
			continue;
		row = load_row(p, s->frames[0], rows, first, nr, cap);
		if (!row)
			return -ENOMEM;
		if (!profile__stack_is_gpu(p, i))
			load_add(row, p, i, s->weight);
	}
	for (size_t k = first; k < *nr; k++)
		(*rows)[k].span = ns_to_weight(p, p->duration_ns);
	if (!collective_span(p, *rows, first, *nr, &from, &to))
		return 0;
	for (size_t k = first; k < *nr; k++) {
		(*rows)[k].busy = (*rows)[k].waits = (*rows)[k].wall = 0;
		(*rows)[k].span = ns_to_weight(p, to - from);
	}
	for (size_t i = 0; i < p->nr_samples; i++) {
		const struct sample *x = &p->samples[i];
		const struct stack *s = &p->stacks[x->stack];

		if (!s->depth || x->time_ns < from || x->time_ns > to ||
		    profile__stack_is_gpu(p, x->stack))
			continue;
		for (size_t k = first; k < *nr; k++) {
			struct rank_load *row = &(*rows)[k];
			uint64_t waits = row->waits;

			if (row->root != s->frames[0])
				continue;
			load_add(row, p, x->stack, x->weight);
			row->slice_waits[(x->time_ns - from) * RANK_LOAD_SLICES /
					 (to - from + 1)] += row->waits - waits;
		}
	}
	for (size_t k = first; k < *nr; k++)
		(*rows)[k].sliced = true;
	return 0;
}

static uint64_t median_of(uint64_t *values, size_t n)
{
	qsort(values, n, sizeof(*values), compare_u64);
	return n % 2 ? values[n / 2] : (values[n / 2 - 1] + values[n / 2]) / 2;
}

static int compare_s64(const void *a, const void *b)
{
	int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;

	return x < y ? -1 : x > y;
}

/* How much longer the other ranks wait than rank pick, over the slices of
 * the span without the fifth where it leads most and the fifth where it
 * leads least: what it makes them wait steadily, one-off waits (a rank's
 * workers starting, the end of the job) aside.  *steadiness is Yuen's t of
 * that trimmed mean: the mean over its standard error from the slices'
 * winsorized variance, large when the lead holds in slice after slice. */
#define SLICES_TRIMMED (RANK_LOAD_SLICES / 5)
/* The sorted slice whose lead stands in for slice in the winsorized set:
 * the trimmed ones take the value of the nearest one kept. */
static size_t winsorized_slice(size_t slice)
{
	if (slice < SLICES_TRIMMED)
		return SLICES_TRIMMED;
	if (slice >= RANK_LOAD_SLICES - SLICES_TRIMMED)
		return RANK_LOAD_SLICES - SLICES_TRIMMED - 1;
	return slice;
}

static uint64_t sliced_lead(const struct rank_load *rows, size_t nr, int64_t pick, bool only_ranks,
			    double *steadiness)
{
	const size_t kept = RANK_LOAD_SLICES - 2 * SLICES_TRIMMED;
	int64_t leads[RANK_LOAD_SLICES], sum = 0;
	double mean, winsorized = 0, variance = 0, error;
	uint64_t values[64];

	for (size_t slice = 0; slice < RANK_LOAD_SLICES; slice++) {
		size_t n = 0;

		for (size_t i = 0; i < nr && n < 64; i++)
			if ((int64_t)i != pick && (only_ranks ? rows[i].rank : !rows[i].worker))
				values[n++] = rows[i].slice_waits[slice];
		leads[slice] = (int64_t)(n ? median_of(values, n) : 0) -
			       (int64_t)rows[pick].slice_waits[slice];
	}
	qsort(leads, RANK_LOAD_SLICES, sizeof(*leads), compare_s64);
	for (size_t slice = SLICES_TRIMMED; slice < RANK_LOAD_SLICES - SLICES_TRIMMED; slice++)
		sum += leads[slice];
	mean = (double)sum / kept;
	for (size_t slice = 0; slice < RANK_LOAD_SLICES; slice++)
		winsorized += (double)leads[winsorized_slice(slice)];
	winsorized /= RANK_LOAD_SLICES;
	for (size_t slice = 0; slice < RANK_LOAD_SLICES; slice++) {
		double d = (double)leads[winsorized_slice(slice)] - winsorized;

		variance += d * d;
	}
	variance /= RANK_LOAD_SLICES - 1;
	error = sqrt(variance) * RANK_LOAD_SLICES / kept / sqrt(RANK_LOAD_SLICES);
	*steadiness = error > 0 ? mean / error : (mean > 0 ? INFINITY : 0);
	return sum > 0 ? (uint64_t)sum * RANK_LOAD_SLICES / kept : 0;
}

int rank_loads__straggler(const struct rank_load *rows, size_t nr, struct straggler *out)
{
	size_t ranks = 0, n = 0;
	uint64_t *others, waits = 0, wall = 0;
	bool only_ranks;
	int64_t pick = -1;

	memset(out, 0, sizeof(*out));
	out->index = out->busiest = -1;
	out->steadiness = INFINITY;
	for (size_t i = 0; i < nr; i++)
		ranks += rows[i].rank;
	only_ranks = ranks >= 2;
#define COMPARED(row) (only_ranks ? (row).rank : !(row).worker)
	for (size_t i = 0; i < nr; i++)
		if (COMPARED(rows[i]))
			waits += rows[i].waits;
	out->by_waits = only_ranks && waits;
	for (size_t i = 0; i < nr; i++) {
		if (!COMPARED(rows[i]))
			continue;
		if (pick < 0 || (out->by_waits ? rows[i].waits < rows[pick].waits
					       : rows[i].busy > rows[pick].busy))
			pick = (int64_t)i;
	}
	if (pick < 0)
		return 0;
	others = malloc(nr * sizeof(*others));
	if (!others)
		return -ENOMEM;
	for (size_t i = 0; i < nr; i++) {
		if ((int64_t)i == pick || !COMPARED(rows[i]))
			continue;
		others[n++] = out->by_waits ? rows[i].waits : rows[i].busy;
		/* The time they had: the span, else what they did. */
		wall += rows[i].span ? rows[i].span : rows[i].busy + rows[i].waits;
	}
#undef COMPARED
	if (!n) {
		free(others);
		return 0;
	}
	out->busiest = pick;
	out->median = median_of(others, n);
	free(others);
	if (out->by_waits) {
		out->extra = out->median > rows[pick].waits ? out->median - rows[pick].waits : 0;
		if (rows[pick].sliced)
			out->extra = sliced_lead(rows, nr, pick, only_ranks, &out->steadiness);
		out->share = wall ? (double)out->extra * n / wall : 0;
		if (out->share >= STRAGGLER_WAIT_SHARE && out->steadiness >= STRAGGLER_STEADY_T)
			out->index = pick;
		return 0;
	}
	out->extra = rows[pick].busy > out->median ? rows[pick].busy - out->median : 0;
	out->share = out->median ? (double)rows[pick].busy / out->median - 1 : 0;
	if (out->share >= STRAGGLER_EXCESS)
		out->index = pick;
	return 0;
}

static const char *unit_word(const struct profile *p)
{
	switch (p->unit) {
	case UNIT_MICROSECONDS:
		return "us";
	case UNIT_NANOSECONDS:
		return "ns";
	default:
		return "samples";
	}
}

static const char *busy_text(const struct profile *p, uint64_t weight, char *buf, size_t size)
{
	if (p->unit == UNIT_MICROSECONDS || p->unit == UNIT_NANOSECONDS)
		snprintf(buf, size, "%.2f s", weight / (p->unit == UNIT_MICROSECONDS ? 1e6 : 1e9));
	else
		snprintf(buf, size, "%llu samples", (unsigned long long)weight);
	return buf;
}

/* The report's rows, each process's load and the straggler found among
 * them (straggler: its row, -1 for none). */
struct process_report {
	struct process_row *rows;
	struct rank_load *loads;
	size_t nr, nr_loads, ranks;
	uint64_t total;
	struct straggler found;
	int64_t straggler;
};

static void write_json(const struct process_report *r, FILE *out)
{
	fputs("{\"processes\":[", out);
	for (size_t i = 0; i < r->nr; i++) {
		const struct process_row *row = &r->rows[i];
		char text[512];

		fputs(i ? ",{\"process\":" : "{\"process\":", out);
		text_output__json_string(out, row->label);
		fputs(",\"file\":", out);
		text_output__json_string(out, row->file);
		fprintf(out, ",\"weight\":%llu,\"unit\":\"%s\",\"share\":%.4f,\"gpu_weight\":%llu",
			(unsigned long long)row->cpu, unit_word(row->profile),
			r->total ? 100.0 * row->cpu / r->total : 0.0, (unsigned long long)row->gpu);
		fputs(",\"top_function\":", out);
		if (row->top == UINT32_MAX)
			fputs("null", out);
		else
			text_output__json_string(
			    out, frame__text(&row->profile->frames[row->top], text, sizeof(text)));
		if (i < r->nr_loads)
			fprintf(out, ",\"busy\":%llu,\"collective_wait\":%llu,\"rank\":%s",
				(unsigned long long)r->loads[i].busy,
				(unsigned long long)r->loads[i].waits,
				r->loads[i].rank ? "true" : "false");
		fprintf(out, ",\"straggler\":%s}", (int64_t)i == r->straggler ? "true" : "false");
	}
	fputs("],\"straggler\":", out);
	if (r->straggler < 0)
		fputs("null", out);
	else
		text_output__json_string(out, r->rows[r->straggler].label);
	fprintf(out, ",\"straggler_by\":\"%s\",\"straggler_share\":%.4f",
		r->found.by_waits ? "collective_wait" : "busy", r->found.share);
	if (isfinite(r->found.steadiness))
		fprintf(out, ",\"straggler_steadiness\":%.2f", r->found.steadiness);
	fputs("}\n", out);
}

/* The line under the table: the straggler, or why there is none. */
static void write_straggler(const struct process_report *r, FILE *out)
{
	const struct straggler *found = &r->found;
	int64_t straggler = r->straggler;
	char more[32];

	if (straggler >= 0 && found->by_waits)
		fprintf(out,
			"\nstraggler: %s; the other ranks wait for it in collectives "
			"%s more than it waits (%.0f%% of their wall time)\n",
			r->rows[straggler].label,
			busy_text(r->rows[straggler].profile, found->extra, more, sizeof(more)),
			100 * found->share);
	else if (straggler >= 0)
		fprintf(out,
			"\nstraggler: %s is busy %.0f%% more than the median of the other "
			"%s (%s more)\n",
			r->rows[straggler].label, 100 * found->share,
			r->loads[straggler].rank ? "ranks" : "processes",
			busy_text(r->rows[straggler].profile, found->extra, more, sizeof(more)));
	else if (r->nr > 1 && found->by_waits && found->share >= STRAGGLER_WAIT_SHARE)
		fprintf(out,
			"\nno straggler: the others wait for %s in collectives %.0f%% of "
			"their wall time more than it waits, but not steadily (t = %.1f, "
			"under %.1f)\n",
			r->rows[found->busiest].label, 100 * found->share, found->steadiness,
			STRAGGLER_STEADY_T);
	else if (r->nr > 1 && found->by_waits)
		fprintf(out,
			"\nno straggler: no rank makes the others wait in collectives %.0f%% "
			"of their wall time more than it waits\n",
			100 * STRAGGLER_WAIT_SHARE);
	else if (r->nr > 1)
		fprintf(out,
			"\nno straggler: no %s is busy %.0f%% above the median of the "
			"others\n",
			r->ranks >= 2 ? "rank" : "process", 100 * STRAGGLER_EXCESS);
}

/* The table as text or Markdown, and the straggler under it. */
static void write_table(const struct process_report *r, bool md, FILE *out)
{
	fprintf(out,
		md ? "| process | file | weight | share | GPU | top function |\n"
		     "|---|---|---:|---:|---:|---|\n"
		   : "%-32s %-24s %12s %7s %12s  %s\n",
		"process", "file", "weight", "share", "GPU", "top function");
	for (size_t i = 0; i < r->nr; i++) {
		const struct process_row *row = &r->rows[i];
		char weight[32], gpu[32], text[512];
		const char *top =
		    row->top == UINT32_MAX
			? "-"
			: frame__text(&row->profile->frames[row->top], text, sizeof(text));

		snprintf(weight, sizeof(weight), "%llu %s", (unsigned long long)row->cpu,
			 unit_word(row->profile));
		snprintf(gpu, sizeof(gpu), "%llu", (unsigned long long)row->gpu);
		fprintf(out,
			md ? "| %s | %s | %s | %.1f%% | %s | %s |\n"
			   : "%-32s %-24s %12s %6.1f%% %12s  %s\n",
			row->label, row->file, weight, r->total ? 100.0 * row->cpu / r->total : 0.0,
			gpu, top);
	}
	write_straggler(r, out);
}

int process_report__write(struct profile *const *profiles, const char *const *names, size_t n,
			  enum text_format format, FILE *out)
{
	struct process_report r = {.straggler = -1};
	size_t cap = 0, cap_loads = 0;
	int err = 0;

	for (size_t i = 0; i < n && !err; i++)
		err = add_rows(profiles[i], names[i], &r.rows, &r.nr, &cap);
	for (size_t i = 0; i < n && !err; i++)
		err = rank_loads__read(profiles[i], &r.loads, &r.nr_loads, &cap_loads);
	if (err)
		goto out;
	for (size_t i = 0; i < r.nr; i++)
		r.total += r.rows[i].cpu;
	for (size_t i = 0; i < r.nr_loads; i++)
		r.ranks += r.loads[i].rank;
	/* Both list the root frames of the profiles in the same order. */
	err = rank_loads__straggler(r.loads, r.nr_loads, &r.found);
	if (err)
		goto out;
	if (r.found.index >= 0 && (size_t)r.found.index < r.nr)
		r.straggler = r.found.index;
	if (format == TEXT_FORMAT_JSON)
		write_json(&r, out);
	else
		write_table(&r, format == TEXT_FORMAT_MARKDOWN, out);
	if (ferror(out))
		err = -EIO;
out:
	free(r.rows);
	free(r.loads);
	return err;
}
