// SPDX-License-Identifier: GPL-2.0
/*
 * The brief (brief.h): rows of four sections (functions by self share, by
 * total share, heaviest paths, findings), each row ranked within its
 * section; rows are taken by rank across the sections, so every section
 * keeps its first rows, until the budget is spent.
 */
#include <errno.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "findings/brief.h"
#include "findings/findings.h"
#include "profile/text_output.h"

/* Longest function name and path written; longer ones are cut. */
#define NAME_MAX_CHARS 160
/* A path deeper than this keeps its first and last frames. */
#define PATH_HEAD 3
#define PATH_TAIL 8
/* Room kept for the line that says how many rows were left out. */
#define FOOTER_ROOM 96

enum section {
	SECTION_SELF,
	SECTION_TOTAL,
	SECTION_PATHS,
	SECTION_FINDINGS,
	NR_SECTIONS,
};

static const char *const section_titles[NR_SECTIONS] = {
    [SECTION_SELF] = "Top functions by self share (time in the function itself):\n",
    [SECTION_TOTAL] = "Top functions by total share (the function and all it calls; a function "
		      "whose share is all one callee's is left out):\n",
    [SECTION_PATHS] = "Heaviest call paths, root > ... > leaf:\n",
    [SECTION_FINDINGS] = "Findings (what to change, by the share of time it costs):\n",
};

struct row {
	enum section section;
	size_t rank;
	char *text;
	size_t len;
	bool taken;
};

struct brief {
	const struct profile *profile;
	char **names;	    /* per frame: its function's name */
	uint32_t *function; /* per frame: its function, frames of one name alike */
	size_t nr_functions;
	uint64_t total;
	bool gpu; /* the stacks read are GPU activity (no CPU stacks) */
	struct row *rows;
	size_t nr_rows, cap_rows;
};

static int add_row(struct brief *b, enum section section, size_t rank, char *text)
{
	if (!text)
		return -ENOMEM;
	if (b->nr_rows == b->cap_rows) {
		size_t cap = b->cap_rows ? 2 * b->cap_rows : 64;
		struct row *rows = realloc(b->rows, cap * sizeof(*rows));

		if (!rows) {
			free(text);
			return -ENOMEM;
		}
		b->rows = rows;
		b->cap_rows = cap;
	}
	b->rows[b->nr_rows++] = (struct row){section, rank, text, strlen(text), false};
	return 0;
}

/* Formats a row: malloc'd, or NULL. */
__attribute__((format(printf, 1, 2))) static char *row_text(const char *fmt, ...)
{
	va_list ap;
	char *text;
	int n;

	va_start(ap, fmt);
	n = vasprintf(&text, fmt, ap);
	va_end(ap);
	return n < 0 ? NULL : text;
}

/* Whether a stack is read: CPU stacks, or GPU activity where there are no
 * CPU stacks. */
static bool stack_read(const struct brief *b, size_t i)
{
	const struct stack *s = &b->profile->stacks[i];

	return s->depth && s->weight && profile__stack_is_gpu(b->profile, i) == b->gpu;
}

static bool is_label(const struct frame *f)
{
	return f->kind == FRAME_PROCESS || f->kind == FRAME_THREAD;
}

static int compare_names(const void *a, const void *b, void *names)
{
	return strcmp(((char **)names)[*(const uint32_t *)a],
		      ((char **)names)[*(const uint32_t *)b]);
}

/* Names every frame and gives frames of one name one function id. */
static int name_functions(struct brief *b)
{
	const struct profile *p = b->profile;
	size_t n = p->nr_frames;
	uint32_t *order = malloc((n ? n : 1) * sizeof(*order));

	b->names = calloc(n ? n : 1, sizeof(*b->names));
	b->function = malloc((n ? n : 1) * sizeof(*b->function));
	if (!order || !b->names || !b->function) {
		free(order);
		return -ENOMEM;
	}
	for (size_t i = 0; i < n; i++) {
		b->names[i] = frame__folded_name(&p->frames[i]);
		if (!b->names[i]) {
			free(order);
			return -ENOMEM;
		}
		order[i] = i;
	}
	qsort_r(order, n, sizeof(*order), compare_names, b->names);
	for (size_t i = 0; i < n; i++) {
		if (i && strcmp(b->names[order[i]], b->names[order[i - 1]]))
			b->nr_functions++;
		b->function[order[i]] = b->nr_functions;
	}
	b->nr_functions += n > 0;
	free(order);
	return 0;
}

struct function_weight {
	uint32_t frame; /* a frame of the function, for its name */
	uint64_t self, total;
	/* The function after it on the first stack; it passes through when
	 * every stack has that one after it and that one is on no other
	 * stack (_start above main): its total is its callee's, and a row of
	 * its own would say nothing new. */
	uint32_t next;
	bool branches;
};

static const struct function_weight *sort_functions;

static int compare_self(const void *a, const void *b)
{
	const struct function_weight *x = &sort_functions[*(const uint32_t *)a];
	const struct function_weight *y = &sort_functions[*(const uint32_t *)b];

	if (x->self != y->self)
		return x->self > y->self ? -1 : 1;
	return *(const uint32_t *)a < *(const uint32_t *)b ? -1 : 1;
}

static int compare_total(const void *a, const void *b)
{
	const struct function_weight *x = &sort_functions[*(const uint32_t *)a];
	const struct function_weight *y = &sort_functions[*(const uint32_t *)b];

	if (x->total != y->total)
		return x->total > y->total ? -1 : 1;
	return *(const uint32_t *)a < *(const uint32_t *)b ? -1 : 1;
}

static double share(const struct brief *b, uint64_t weight)
{
	return b->total ? 100.0 * weight / b->total : 0;
}

static int function_rows(struct brief *b, size_t top)
{
	const struct profile *p = b->profile;
	size_t nf = b->nr_functions ? b->nr_functions : 1;
	struct function_weight *fw = calloc(nf, sizeof(*fw));
	size_t *seen = malloc(nf * sizeof(*seen));
	uint32_t *order = malloc(nf * sizeof(*order));
	size_t nr = 0;
	int err = -ENOMEM;

	if (!fw || !seen || !order)
		goto cleanup;
	memset(seen, 0xff, nf * sizeof(*seen));
	for (size_t i = 0; i < p->nr_stacks; i++) {
		const struct stack *s = &p->stacks[i];

		if (!stack_read(b, i))
			continue;
		fw[b->function[s->frames[s->depth - 1]]].self += s->weight;
		for (uint32_t d = 0; d < s->depth; d++) {
			uint32_t f = b->function[s->frames[d]];

			/* A recursive function counts once per stack. */
			if (seen[f] == i)
				continue;
			if (d + 1 == s->depth)
				fw[f].branches = true;
			else if (!fw[f].total)
				fw[f].next = b->function[s->frames[d + 1]];
			else if (fw[f].next != b->function[s->frames[d + 1]])
				fw[f].branches = true;
			seen[f] = i;
			fw[f].frame = s->frames[d];
			fw[f].total += s->weight;
		}
	}
	for (size_t f = 0; f < b->nr_functions; f++)
		if (fw[f].total && !is_label(&p->frames[fw[f].frame]))
			order[nr++] = f;
	sort_functions = fw;
	err = 0;
	qsort(order, nr, sizeof(*order), compare_self);
	for (size_t i = 0; i < nr && i < top && !err && fw[order[i]].self; i++)
		err = add_row(b, SECTION_SELF, i,
			      row_text("  %6.2f%%  %.*s\n", share(b, fw[order[i]].self),
				       NAME_MAX_CHARS, b->names[fw[order[i]].frame]));
	qsort(order, nr, sizeof(*order), compare_total);
	for (size_t i = 0, rank = 0; i < nr && rank < top && !err; i++) {
		const struct function_weight *w = &fw[order[i]];

		if (!w->branches && w->total == fw[w->next].total)
			continue;
		err = add_row(b, SECTION_TOTAL, rank++,
			      row_text("  %6.2f%%  %.*s\n", share(b, fw[order[i]].total),
				       NAME_MAX_CHARS, b->names[fw[order[i]].frame]));
	}
cleanup:
	free(fw);
	free(seen);
	free(order);
	return err;
}

struct path {
	char *text;
	uint64_t weight;
};

static int compare_path_text(const void *a, const void *b)
{
	return strcmp(((const struct path *)a)->text, ((const struct path *)b)->text);
}

static int compare_path_weight(const void *a, const void *b)
{
	const struct path *x = a, *y = b;

	if (x->weight != y->weight)
		return x->weight > y->weight ? -1 : 1;
	return strcmp(x->text, y->text);
}

/* A stack's functions joined by " > ", the middle of a deep one left
 * out; malloc'd or NULL. */
static char *path_text(const struct brief *b, const struct stack *s)
{
	char *text = NULL;
	size_t len = 0;
	FILE *out = open_memstream(&text, &len);

	if (!out)
		return NULL;
	for (uint32_t d = 0; d < s->depth; d++) {
		if (s->depth > PATH_HEAD + PATH_TAIL + 1 && d == PATH_HEAD) {
			fprintf(out, " > ... %u frames ...", s->depth - PATH_HEAD - PATH_TAIL);
			d = s->depth - PATH_TAIL - 1;
			continue;
		}
		fprintf(out, "%s%.*s", d ? " > " : "", NAME_MAX_CHARS, b->names[s->frames[d]]);
	}
	if (fclose(out)) {
		free(text);
		return NULL;
	}
	return text;
}

/* Stacks that differ only in source lines are one path. */
static int path_rows(struct brief *b, size_t top)
{
	const struct profile *p = b->profile;
	struct path *paths = calloc(p->nr_stacks ? p->nr_stacks : 1, sizeof(*paths));
	size_t nr = 0, merged = 0;
	int err = -ENOMEM;

	if (!paths)
		return -ENOMEM;
	for (size_t i = 0; i < p->nr_stacks; i++) {
		if (!stack_read(b, i))
			continue;
		paths[nr].text = path_text(b, &p->stacks[i]);
		if (!paths[nr].text)
			goto cleanup;
		paths[nr++].weight = p->stacks[i].weight;
	}
	qsort(paths, nr, sizeof(*paths), compare_path_text);
	for (size_t i = 0; i < nr; i++) {
		if (merged && !strcmp(paths[merged - 1].text, paths[i].text)) {
			paths[merged - 1].weight += paths[i].weight;
			free(paths[i].text);
		} else {
			paths[merged++] = paths[i];
		}
	}
	nr = merged;
	qsort(paths, nr, sizeof(*paths), compare_path_weight);
	err = 0;
	for (size_t i = 0; i < nr && i < top && !err; i++)
		err =
		    add_row(b, SECTION_PATHS, i,
			    row_text("  %6.2f%%  %s\n", share(b, paths[i].weight), paths[i].text));
cleanup:
	for (size_t i = 0; i < nr; i++)
		free(paths[i].text);
	free(paths);
	return err;
}

/* A finding as lines: what and what it costs, where, the first evidence,
 * what to change; each part cut to NAME_MAX_CHARS * 2.  Malloc'd or NULL. */
static char *finding_text(const struct finding *f, size_t number)
{
	const int max = NAME_MAX_CHARS * 2;
	char *text = NULL;
	size_t len = 0;
	FILE *out = open_memstream(&text, &len);

	if (!out)
		return NULL;
	fprintf(out, "  %zu. %.1f%% of %s: %.*s [%s]\n", number, 100.0 * f->cost, f->cost_of, max,
		f->title, f->rule);
	if (f->location)
		fprintf(out, "     at %.*s\n", max, f->location);
	/* The first evidence, and the line after it where it is a heading. */
	for (size_t i = 0; i < f->nr_evidence && i < 2; i++) {
		size_t len = strlen(f->evidence[i]);

		fprintf(out, "     %s%.*s\n", i ? "  " : "evidence: ", max, f->evidence[i]);
		if (!len || f->evidence[i][len - 1] != ':')
			break;
	}
	if (f->suggestion)
		fprintf(out, "     -> %.*s\n", max, f->suggestion);
	if (fclose(out)) {
		free(text);
		return NULL;
	}
	return text;
}

static int finding_rows(struct brief *b, size_t top)
{
	struct findings *findings;
	int err = findings__analyze(b->profile, &findings);

	if (err)
		return err;
	for (size_t i = 0; i < findings->nr_items && i < top && !err; i++)
		err = add_row(b, SECTION_FINDINGS, i, finding_text(&findings->items[i], i + 1));
	findings__free(findings);
	return err;
}

static int compare_rank(const void *a, const void *b)
{
	const struct row *x = *(struct row *const *)a, *y = *(struct row *const *)b;

	if (x->rank != y->rank)
		return x->rank < y->rank ? -1 : 1;
	return x->section < y->section ? -1 : x->section > y->section;
}

/* Takes rows by rank across the sections while they fit; returns how many
 * were left out. */
static size_t take_rows(struct brief *b, size_t used, size_t budget)
{
	struct row **by_rank = malloc((b->nr_rows ? b->nr_rows : 1) * sizeof(*by_rank));
	bool titled[NR_SECTIONS] = {false};
	size_t left_out = 0;

	if (!by_rank)
		return b->nr_rows;
	for (size_t i = 0; i < b->nr_rows; i++)
		by_rank[i] = &b->rows[i];
	qsort(by_rank, b->nr_rows, sizeof(*by_rank), compare_rank);
	for (size_t i = 0; i < b->nr_rows; i++) {
		struct row *r = by_rank[i];
		size_t cost =
		    r->len + (titled[r->section] ? 0 : strlen(section_titles[r->section]));

		/* Once a row does not fit, every less important one is left
		 * out too, so what is written is always the top of each
		 * section. */
		if (left_out || used + cost + FOOTER_ROOM > budget) {
			left_out++;
			continue;
		}
		r->taken = true;
		titled[r->section] = true;
		used += cost;
	}
	free(by_rank);
	return left_out;
}

int brief__write(const struct profile *p, const struct brief_options *options, FILE *out)
{
	size_t top = options->top ? options->top : SIZE_MAX;
	size_t budget = options->budget ? options->budget : BRIEF_BUDGET;
	struct brief b = {.profile = p};
	char heading[512], weight[64];
	size_t left_out;
	int err;

	for (size_t i = 0; i < p->nr_stacks; i++)
		if (p->stacks[i].depth && !profile__stack_is_gpu(p, i))
			b.total += p->stacks[i].weight;
	if (!b.total) {
		b.gpu = true;
		b.total = profile__total_weight(p);
	}
	err = name_functions(&b);
	if (!err)
		err = function_rows(&b, top);
	if (!err)
		err = path_rows(&b, top);
	if (!err)
		err = finding_rows(&b, top);
	if (err)
		goto cleanup;
	text_output__weight(weight, sizeof(weight), b.total, p->unit);
	/* The 100% every share below is of. */
	snprintf(heading, sizeof(heading), "%.200s%s%s%s %s = 100%%\n",
		 options->name ? options->name : "", options->name ? ": " : "", weight,
		 p->unit == UNIT_SAMPLES ? " samples" : "", b.gpu ? "of GPU activity" : "on CPU");
	left_out = take_rows(&b, strlen(heading), budget);
	fputs(heading, out);
	for (int s = 0; s < NR_SECTIONS; s++) {
		bool titled = false;

		for (size_t i = 0; i < b.nr_rows; i++) {
			if (b.rows[i].section != (enum section)s || !b.rows[i].taken)
				continue;
			if (!titled)
				fputs(section_titles[s], out);
			titled = true;
			fputs(b.rows[i].text, out);
		}
		if (s == SECTION_FINDINGS && !titled)
			fputs("Findings: none.\n", out);
	}
	if (left_out)
		fprintf(out, "(%zu less important rows left out to stay within %zu bytes)\n",
			left_out, budget);
	err = fflush(out) || ferror(out) ? -EIO : 0;
cleanup:
	if (b.names)
		for (size_t i = 0; i < p->nr_frames; i++)
			free(b.names[i]);
	free(b.names);
	free(b.function);
	for (size_t i = 0; i < b.nr_rows; i++)
		free(b.rows[i].text);
	free(b.rows);
	return err;
}
