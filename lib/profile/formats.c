// SPDX-License-Identifier: GPL-2.0
/*
 * The output formats by name: parsing -f, a format's description and file
 * name ending, and the writer each one is written by.
 */
#include <errno.h>
#include <string.h>

#include "profile/output.h"
#include "profile/svg_writer.h"

int output__parse_format(const char *text, enum profile_format *format)
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
	else
		return -EINVAL;
	return 0;
}

int output__write(const struct profile *p, enum profile_format format, enum output_view view,
		  FILE *out)
{
	return output__write_with(p, format, &(struct writer_options){.view = view}, out);
}

int output__write_with(const struct profile *p, enum profile_format format,
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
	return folded__write(p, view, out);
}

const char *output_format__description(enum profile_format format)
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
	default:
		return "folded stacks";
	}
}

const char *output_format__extension(enum profile_format format)
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
	default:
		return "folded";
	}
}
