// SPDX-License-Identifier: GPL-2.0
/*
 * The table of profile formats (formats.h): each format's row, and what
 * reads the rows: -f parsing, the lists of names, the writer dispatch.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "profile/formats.h"
#include "profile/output.h"
#include "profile/perf_script_reader.h"
#include "profile/pprof_reader.h"
#include "profile/profile_reader.h"
#include "profile/reader_input.h"
#include "profile/svg_writer.h"

/* The first byte that is not white space, or 0. */
static unsigned char first_byte(const unsigned char *head, size_t len, size_t *at)
{
	for (size_t i = 0; i < len; i++) {
		if (head[i] != ' ' && head[i] != '\t' && head[i] != '\r' && head[i] != '\n') {
			*at = i;
			return head[i];
		}
	}
	*at = len;
	return 0;
}

/* JSON trace events: an array, or an object with traceEvents that is not
 * speedscope's (whose schema names it). */
static bool detect_chrome(const unsigned char *head, size_t len)
{
	size_t i;
	unsigned char c = first_byte(head, len, &i);

	return c == '[' || (c == '{' && memmem(head + i, len - i, "\"traceEvents\"", 13) &&
			    !memmem(head + i, len - i, "\"$schema\"", 9));
}

static bool detect_speedscope(const unsigned char *head, size_t len)
{
	size_t i;

	return first_byte(head, len, &i) == '{' && !detect_chrome(head, len);
}

static bool detect_perf_script(const unsigned char *head, size_t len)
{
	size_t i;
	unsigned char c = first_byte(head, len, &i);

	return c != '{' && c != '[' && perf_script_reader__detect((const char *)head, len);
}

static bool detect_pprof(const unsigned char *head, size_t len)
{
	return pprof_reader__detect(head, len);
}

static int read_pprof(struct input *in, const struct profile_read_options *options,
		      struct profile **out, struct profile_read_result *result)
{
	return pprof_reader__read(in->data + in->pos, in->len - in->pos, in->stream,
				  options->sample_index, out, result->message,
				  sizeof(result->message));
}

typedef int (*text_parser)(struct input *in, const struct profile_read_options *options,
			   struct profile *p, struct profile_read_result *result);

static int read_text(text_parser parse, struct input *in,
		     const struct profile_read_options *options, struct profile **out,
		     struct profile_read_result *result)
{
	struct profile *p = profile__new();
	int err;

	if (!p) {
		reader__set_message(result, 0, "out of memory");
		return -ENOMEM;
	}
	err = parse(in, options, p, result);
	if (err) {
		profile__free(p);
		return err;
	}
	*out = p;
	return 0;
}

static int read_folded(struct input *in, const struct profile_read_options *options,
		       struct profile **out, struct profile_read_result *result)
{
	return read_text(folded_reader__parse, in, options, out, result);
}

static int read_speedscope(struct input *in, const struct profile_read_options *options,
			   struct profile **out, struct profile_read_result *result)
{
	return read_text(speedscope_reader__parse, in, options, out, result);
}

/* perf_script_reader.c takes its lines through this. */
struct line_source {
	struct input *in;
	char *line;
	size_t cap;
};

static int perf_script_line(void *ctx, char **line, size_t *len)
{
	struct line_source *source = ctx;
	int err = input__read_line(source->in, &source->line, len, &source->cap);

	*line = source->line;
	if (err == 1 && !source->in->newline)
		return 2;
	return err == -EFBIG || err == -EILSEQ ? -EINVAL : err;
}

static int parse_perf_script(struct input *in, const struct profile_read_options *options,
			     struct profile *p, struct profile_read_result *result)
{
	struct line_source lines = {.in = in};
	int err = perf_script_reader__read(perf_script_line, &lines, options, p, result);

	free(lines.line);
	return err;
}

static int read_perf_script(struct input *in, const struct profile_read_options *options,
			    struct profile **out, struct profile_read_result *result)
{
	return read_text(parse_perf_script, in, options, out, result);
}

static int write_folded(const struct profile *p, const struct writer_options *options, FILE *out)
{
	return folded__write(p, options->view, out);
}

static int write_pprof(const struct profile *p, const struct writer_options *options, FILE *out)
{
	return pprof__write(p, options->view, out);
}

static int write_chrome(const struct profile *p, const struct writer_options *options, FILE *out)
{
	return chrome__write(p, options->view, out);
}

static int write_svg(const struct profile *p, const struct writer_options *options, FILE *out)
{
	return svg__write(p, options->view, false, out);
}

static int write_icicle(const struct profile *p, const struct writer_options *options, FILE *out)
{
	return svg__write(p, options->view, true, out);
}

/* -f html's page holds the findings, a wing above the profile's: the front
 * end plugs its writer in (html_page__write_profile); -ENOTSUP while none is. */
int (*output__html_writer)(const struct profile *profile, const struct writer_options *options,
			   FILE *out);

static int write_html(const struct profile *p, const struct writer_options *options, FILE *out)
{
	return output__html_writer ? output__html_writer(p, options, out) : -ENOTSUP;
}

static const struct format formats[NR_PROFILE_FORMATS] = {
    [FORMAT_FOLDED] =
	{
	    .name = "folded",
	    .extension = "folded",
	    .description = "folded stacks",
	    .flags = FORMAT_DIFF,
	    .read = read_folded,
	    .write = write_folded,
	},
    [FORMAT_SPEEDSCOPE] =
	{
	    .name = "speedscope",
	    .extension = "speedscope.json",
	    .description = "speedscope JSON",
	    .flags = FORMAT_TIMELINE | FORMAT_THREADS | FORMAT_GPU_SPANS | FORMAT_VALUES,
	    .detect = detect_speedscope,
	    .read = read_speedscope,
	    .write = speedscope__write_with,
	},
    [FORMAT_PPROF] =
	{
	    .name = "pprof",
	    .extension = "pb.gz",
	    .description = "a pprof profile",
	    .flags = FORMAT_THREADS | FORMAT_BINARY | FORMAT_VALUES,
	    .detect = detect_pprof,
	    .read = read_pprof,
	    .write = write_pprof,
	},
    [FORMAT_CHROME] =
	{
	    .name = "chrome",
	    .extension = "trace.json",
	    .description = "a Chrome trace",
	    .note = "a Chrome/Perfetto trace",
	    .content = "JSON trace events",
	    .flags = FORMAT_TIMELINE | FORMAT_NEEDS_TIMELINE | FORMAT_THREADS | FORMAT_GPU_SPANS,
	    .detect = detect_chrome,
	    .write = write_chrome,
	},
    [FORMAT_SVG] =
	{
	    .name = "svg",
	    .extension = "svg",
	    .description = "a flame graph",
	    .note = "a flame graph",
	    .flags = FORMAT_DIFF,
	    .write = write_svg,
	},
    [FORMAT_SVG_INVERTED] =
	{
	    .name = "svg",
	    .extension = "svg",
	    .description = "a flame graph",
	    .flags = FORMAT_VARIANT,
	    .write = write_icicle,
	},
    [FORMAT_HTML] =
	{
	    .name = "html",
	    .extension = "html",
	    .description = "an HTML page",
	    .note = "a page: the flame graphs, findings and tables",
	    .flags = FORMAT_THREADS | FORMAT_VALUES,
	    .write = write_html,
	},
    [FORMAT_PERF_SCRIPT] =
	{
	    .name = "perf script",
	    .description = "perf script output",
	    .detect = detect_perf_script,
	    .read = read_perf_script,
	},
};

const struct format *format__get(enum profile_format format)
{
	return &formats[(unsigned int)format < NR_PROFILE_FORMATS ? format : FORMAT_FOLDED];
}

unsigned int format__flags(enum profile_format format)
{
	const struct format *f = format__get(format);

	return f->flags | (f->read ? FORMAT_READABLE : 0) | (f->write ? FORMAT_WRITABLE : 0);
}

bool format__matches(enum profile_format format, unsigned int need, unsigned int refuse)
{
	unsigned int flags = format__flags(format);

	return (flags & need) == need && !(flags & (refuse | FORMAT_VARIANT));
}

int format__parse(const char *text, unsigned int need, unsigned int refuse,
		  enum profile_format *format)
{
	for (int i = 0; i < NR_PROFILE_FORMATS; i++) {
		if (format__matches(i, need, refuse) && !strcmp(text, formats[i].name)) {
			*format = i;
			return 0;
		}
	}
	return -EINVAL;
}

void format__list(char *buf, size_t size, unsigned int need, unsigned int refuse, const char *last,
		  const char *prefix, bool notes, enum profile_format def)
{
	size_t nr = 0, at = 0, total = 0;

	if (!size)
		return;
	buf[0] = '\0';
	for (int i = 0; i < NR_PROFILE_FORMATS; i++)
		total += format__matches(i, need, refuse);
	for (int i = 0; i < NR_PROFILE_FORMATS && at < size; i++) {
		if (!format__matches(i, need, refuse))
			continue;
		at += snprintf(buf + at, size - at, "%s%s%s%s%s%s%s",
			       !nr		? ""
			       : nr + 1 < total ? ", "
						: last,
			       prefix, formats[i].name, (int)i == (int)def ? " (default)" : "",
			       notes && formats[i].note ? " (" : "",
			       notes && formats[i].note ? formats[i].note : "",
			       notes && formats[i].note ? ")" : "");
		nr++;
	}
}

int output__write(const struct profile *p, enum profile_format format, enum output_view view,
		  FILE *out)
{
	return output__write_with(p, format, &(struct writer_options){.view = view}, out);
}

int output__write_with(const struct profile *p, enum profile_format format,
		       const struct writer_options *options, FILE *out)
{
	const struct format *f = format__get(format);

	return f->write ? f->write(p, options, out) : -EINVAL;
}
