// SPDX-License-Identifier: GPL-2.0
/*
 * Folded stacks: "root;...;leaf COUNT" lines, sorted, one per distinct line,
 * as flamegraph.pl and speedscope's importer read them.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "profile/output.h"

struct folded_line {
	char *text;
	uint64_t weight;
};

static int compare_lines(const void *a, const void *b)
{
	return strcmp(((const struct folded_line *)a)->text, ((const struct folded_line *)b)->text);
}

/* Joins a stack's folded names with ';'.  Returns a malloc'd string or NULL. */
static char *join_stack(char **names, const struct stack *s)
{
	size_t len = 1;
	char *text, *pos;

	for (uint32_t d = 0; d < s->depth; d++)
		len += strlen(names[s->frames[d]]) + 1;
	text = malloc(len);
	if (!text)
		return NULL;
	pos = text;
	for (uint32_t d = 0; d < s->depth; d++) {
		size_t n = strlen(names[s->frames[d]]);

		if (d)
			*pos++ = ';';
		memcpy(pos, names[s->frames[d]], n);
		pos += n;
	}
	*pos = '\0';
	return text;
}

int folded__write(const struct profile *p, enum output_view view, FILE *out)
{
	char **names = calloc(p->nr_frames ? p->nr_frames : 1, sizeof(*names));
	struct folded_line *lines = calloc(p->nr_stacks ? p->nr_stacks : 1, sizeof(*lines));
	size_t nr_lines = 0;
	int err = -ENOMEM;

	if (!names || !lines)
		goto cleanup;
	for (size_t i = 0; i < p->nr_frames; i++) {
		names[i] = frame__folded_text(&p->frames[i], p->python_pyspy_form);
		if (!names[i])
			goto cleanup;
	}
	for (size_t i = 0; i < p->nr_stacks; i++) {
		const struct stack *s = &p->stacks[i];

		if (!s->weight || !s->depth ||
		    (view != VIEW_ALL && profile__stack_is_gpu(p, i) != (view == VIEW_GPU)))
			continue;
		lines[nr_lines].text = join_stack(names, s);
		if (!lines[nr_lines].text)
			goto cleanup;
		lines[nr_lines++].weight = s->weight;
	}
	qsort(lines, nr_lines, sizeof(*lines), compare_lines);
	/* Stacks that differ only in source lines fold to one text line. */
	for (size_t i = 0; i < nr_lines; i++) {
		uint64_t weight = lines[i].weight;

		while (i + 1 < nr_lines && !strcmp(lines[i].text, lines[i + 1].text))
			weight += lines[++i].weight;
		fprintf(out, "%s %llu\n", lines[i].text, (unsigned long long)weight);
	}
	err = fflush(out) || ferror(out) ? -EIO : 0;
cleanup:
	if (names)
		for (size_t i = 0; i < p->nr_frames; i++)
			free(names[i]);
	if (lines)
		for (size_t i = 0; i < nr_lines; i++)
			free(lines[i].text);
	free(names);
	free(lines);
	return err;
}
