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

/* Joins a stack's folded names with ';' at text, which has room; returns
 * the end of the line's string, past its NUL. */
static char *join_stack(char **names, const size_t *lens, const struct stack *s, char *text)
{
	for (uint32_t d = 0; d < s->depth; d++) {
		if (d)
			*text++ = ';';
		memcpy(text, names[s->frames[d]], lens[s->frames[d]]);
		text += lens[s->frames[d]];
	}
	*text++ = '\0';
	return text;
}

static bool keeps(const struct profile *p, size_t i, enum output_view view)
{
	const struct stack *s = &p->stacks[i];

	return s->weight && s->depth &&
	       (view == VIEW_ALL || profile__stack_is_gpu(p, i) == (view == VIEW_GPU));
}

int folded__write(const struct profile *p, enum output_view view, FILE *out)
{
	char **names = calloc(p->nr_frames ? p->nr_frames : 1, sizeof(*names));
	size_t *lens = calloc(p->nr_frames ? p->nr_frames : 1, sizeof(*lens));
	struct folded_line *lines = calloc(p->nr_stacks ? p->nr_stacks : 1, sizeof(*lines));
	size_t nr_lines = 0, size = 1;
	char *text = NULL, *pos;
	int err = -ENOMEM;

	if (!names || !lens || !lines)
		goto cleanup;
	for (size_t i = 0; i < p->nr_frames; i++) {
		names[i] = frame__folded_text(&p->frames[i], p->python_pyspy_form);
		if (!names[i])
			goto cleanup;
		lens[i] = strlen(names[i]);
	}
	/* Every line in one buffer: a million lines, a million mallocs less. */
	for (size_t i = 0; i < p->nr_stacks; i++) {
		if (!keeps(p, i, view))
			continue;
		for (uint32_t d = 0; d < p->stacks[i].depth; d++)
			size += lens[p->stacks[i].frames[d]] + 1;
	}
	pos = text = malloc(size);
	if (!text)
		goto cleanup;
	for (size_t i = 0; i < p->nr_stacks; i++) {
		if (!keeps(p, i, view))
			continue;
		lines[nr_lines].text = pos;
		pos = join_stack(names, lens, &p->stacks[i], pos);
		lines[nr_lines++].weight = p->stacks[i].weight;
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
	free(text);
	free(lens);
	free(names);
	free(lines);
	return err;
}
