// SPDX-License-Identifier: GPL-2.0
/* report --by-process; see process_report.h. */
#include <errno.h>
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
	bool rank;
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
			row->rank = strstr(row->label, "[rank ") != NULL;
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

/* The straggler among the rows (ranks if two or more rows are ranks):
 * its index, or -1; *excess how far above the others' median it is. */
static int64_t find_straggler(const struct process_row *rows, size_t nr, double *excess)
{
	size_t ranks = 0, n = 0, busiest = SIZE_MAX;
	uint64_t *others, median;
	bool only_ranks;

	for (size_t i = 0; i < nr; i++)
		ranks += rows[i].rank;
	only_ranks = ranks >= 2;
	for (size_t i = 0; i < nr; i++)
		if ((!only_ranks || rows[i].rank) &&
		    (busiest == SIZE_MAX ||
		     rows[i].cpu + rows[i].gpu > rows[busiest].cpu + rows[busiest].gpu))
			busiest = i;
	if (busiest == SIZE_MAX || (only_ranks ? ranks : nr) < 2)
		return -1;
	others = malloc(nr * sizeof(*others));
	if (!others)
		return -1;
	for (size_t i = 0; i < nr; i++)
		if (i != busiest && (!only_ranks || rows[i].rank))
			others[n++] = rows[i].cpu + rows[i].gpu;
	qsort(others, n, sizeof(*others), compare_u64);
	median = n % 2 ? others[n / 2] : (others[n / 2 - 1] + others[n / 2]) / 2;
	free(others);
	*excess = median ? (double)(rows[busiest].cpu + rows[busiest].gpu) / median - 1 : 0;
	return *excess >= STRAGGLER_EXCESS ? (int64_t)busiest : -1;
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

int process_report__write(struct profile *const *profiles, const char *const *names, size_t n,
			  enum text_format format, FILE *out)
{
	struct process_row *rows = NULL;
	size_t nr = 0, cap = 0;
	uint64_t total = 0;
	double excess = 0;
	int64_t straggler;
	int err = 0;

	for (size_t i = 0; i < n && !err; i++)
		err = add_rows(profiles[i], names[i], &rows, &nr, &cap);
	if (err)
		goto out;
	for (size_t i = 0; i < nr; i++)
		total += rows[i].cpu;
	straggler = find_straggler(rows, nr, &excess);
	if (format == TEXT_FORMAT_JSON) {
		fputs("{\"processes\":[", out);
		for (size_t i = 0; i < nr; i++) {
			const struct process_row *r = &rows[i];

			fputs(i ? ",{\"process\":" : "{\"process\":", out);
			text_output__json_string(out, r->label);
			fputs(",\"file\":", out);
			text_output__json_string(out, r->file);
			fprintf(
			    out,
			    ",\"weight\":%llu,\"unit\":\"%s\",\"share\":%.4f,\"gpu_weight\":%llu",
			    (unsigned long long)r->cpu, unit_word(r->profile),
			    total ? 100.0 * r->cpu / total : 0.0, (unsigned long long)r->gpu);
			fputs(",\"top_function\":", out);
			if (r->top == UINT32_MAX)
				fputs("null", out);
			else
				text_output__json_string(out, r->profile->frames[r->top].name);
			fprintf(out, ",\"straggler\":%s}",
				(int64_t)i == straggler ? "true" : "false");
		}
		fputs("],\"straggler\":", out);
		if (straggler < 0)
			fputs("null", out);
		else
			text_output__json_string(out, rows[straggler].label);
		fprintf(out, ",\"straggler_excess\":%.4f}\n", straggler < 0 ? 0.0 : excess);
	} else {
		bool md = format == TEXT_FORMAT_MARKDOWN;

		fprintf(out,
			md ? "| process | file | weight | share | GPU | top function |\n"
			     "|---|---|---:|---:|---:|---|\n"
			   : "%-32s %-24s %12s %7s %12s  %s\n",
			"process", "file", "weight", "share", "GPU", "top function");
		for (size_t i = 0; i < nr; i++) {
			const struct process_row *r = &rows[i];
			const char *top =
			    r->top == UINT32_MAX ? "-" : r->profile->frames[r->top].name;
			char weight[32], gpu[32];

			snprintf(weight, sizeof(weight), "%llu %s", (unsigned long long)r->cpu,
				 unit_word(r->profile));
			snprintf(gpu, sizeof(gpu), "%llu", (unsigned long long)r->gpu);
			fprintf(out,
				md ? "| %s | %s | %s | %.1f%% | %s | %s |\n"
				   : "%-32s %-24s %12s %6.1f%% %12s  %s\n",
				r->label, r->file, weight, total ? 100.0 * r->cpu / total : 0.0,
				gpu, top);
		}
		if (straggler >= 0)
			fprintf(out,
				"\nstraggler: %s works %.0f%% more than the median of the others\n",
				rows[straggler].label, 100 * excess);
		else if (nr > 1)
			fprintf(out,
				"\nno straggler: no process is %.0f%% above the median of the "
				"others\n",
				100 * STRAGGLER_EXCESS);
	}
	if (ferror(out))
		err = -EIO;
out:
	free(rows);
	return err;
}
