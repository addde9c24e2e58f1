// SPDX-License-Identifier: GPL-2.0
/*
 * Folded stacks: "root;...;leaf COUNT" lines, sorted, one per distinct line,
 * as flamegraph.pl and speedscope's importer read them.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "profile/output.h"
#include "profile/svg_writer.h"

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
		names[i] = frame__folded_name(&p->frames[i]);
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

int output__parse_format(const char *text, enum output_format *format)
{
	if (!strcmp(text, "folded"))
		*format = FORMAT_FOLDED;
	else if (!strcmp(text, "speedscope"))
		*format = FORMAT_SPEEDSCOPE;
	else if (!strcmp(text, "pprof"))
		*format = FORMAT_PPROF;
	else if (!strcmp(text, "chrome"))
		*format = FORMAT_CHROME;
	else if (!strcmp(text, "svg"))
		*format = FORMAT_SVG;
	else if (!strcmp(text, "html"))
		*format = FORMAT_HTML;
	else
		return -EINVAL;
	return 0;
}

int (*output__html_writer)(const struct profile *profile, const struct writer_options *options,
			   FILE *out);

int output__write(const struct profile *p, enum output_format format, enum output_view view,
		  FILE *out)
{
	return output__write_with(p, format, &(struct writer_options){.view = view}, out);
}

int output__write_with(const struct profile *p, enum output_format format,
		       const struct writer_options *options, FILE *out)
{
	enum output_view view = options->view;

	if (format == FORMAT_SPEEDSCOPE)
		return speedscope__write_with(p, options, out);
	if (format == FORMAT_PPROF)
		return pprof__write(p, view, out);
	if (format == FORMAT_CHROME)
		return chrome__write(p, view, out);
	if (format == FORMAT_SVG || format == FORMAT_SVG_INVERTED)
		return svg__write(p, view, format == FORMAT_SVG_INVERTED, out);
	if (format == FORMAT_HTML)
		return output__html_writer ? output__html_writer(p, options, out) : -ENOTSUP;
	return folded__write(p, view, out);
}

const char *output_format__description(enum output_format format)
{
	switch (format) {
	case FORMAT_SPEEDSCOPE:
		return "speedscope JSON";
	case FORMAT_PPROF:
		return "a pprof profile";
	case FORMAT_CHROME:
		return "a Chrome trace";
	case FORMAT_SVG:
	case FORMAT_SVG_INVERTED:
		return "a flame graph";
	case FORMAT_HTML:
		return "an HTML page";
	default:
		return "folded stacks";
	}
}

const char *output_format__extension(enum output_format format)
{
	switch (format) {
	case FORMAT_SPEEDSCOPE:
		return "speedscope.json";
	case FORMAT_PPROF:
		return "pb.gz";
	case FORMAT_CHROME:
		return "trace.json";
	case FORMAT_SVG:
	case FORMAT_SVG_INVERTED:
		return "svg";
	case FORMAT_HTML:
		return "html";
	default:
		return "folded";
	}
}
