/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The table of profile formats, read and written: one row per format with
 * its name, file name ending, description, the detector and reader that
 * read it, the writer that writes it, and what it can hold.  -f parsing,
 * the lists in help texts and error messages, and each command's checks
 * come from the rows, so a new format is one row and its writer (or
 * reader).
 */
#ifndef LLMPROF_FORMATS_H
#define LLMPROF_FORMATS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>

enum profile_format {
	FORMAT_FOLDED = 0,
	FORMAT_SPEEDSCOPE,
	FORMAT_PPROF,
	FORMAT_CHROME,
	FORMAT_SVG,	     /* an interactive flame graph (svg_writer.h) */
	FORMAT_SVG_INVERTED, /* the same as an icicle: -f svg --inverted */
	FORMAT_HTML,	     /* the page of report --html (output__html_writer) */
	FORMAT_PERF_SCRIPT,  /* read only: perf_script_reader.c */
	NR_PROFILE_FORMATS,
};

/* What a format holds beyond stack weights, and how it is named. */
enum format_flags {
	FORMAT_TIMELINE = 1 << 0,	/* when each sample and GPU kernel was */
	FORMAT_NEEDS_TIMELINE = 1 << 1, /* nothing to write without one */
	FORMAT_THREADS = 1 << 2,	/* threads kept apart */
	FORMAT_GPU_SPANS = 1 << 3,	/* GPU kernels as spans on stream tracks */
	FORMAT_DIFF = 1 << 4,		/* llmprof diff writes a differential one */
	FORMAT_BINARY = 1 << 5,		/* not text: told apart before any text */
	FORMAT_VARIANT = 1 << 6,	/* another row's name with an option */
	FORMAT_VALUES = 1 << 7,		/* several values per stack: every view */
	/* Not in rows: what a row's reader and writer give it, to select by. */
	FORMAT_READABLE = 1 << 14,
	FORMAT_WRITABLE = 1 << 15,
};

struct profile;
struct profile_read_options;
struct profile_read_result;
struct writer_options;
struct input;

struct format {
	const char *name;	 /* as -f takes it */
	const char *extension;	 /* a file name's ending, no dot */
	const char *description; /* "a pprof profile", for messages */
	const char *note;	 /* what -f's help adds after the name, or NULL */
	/* What a format that is detected but not read looks like, for the
	 * error that refuses it ("JSON trace events"). */
	const char *content;
	unsigned int flags; /* enum format_flags */
	/* Whether the head of an input (after a byte-order mark) is this
	 * format; NULL for the text format read when no detector claims it. */
	bool (*detect)(const unsigned char *head, size_t len);
	/* A new profile in *out, or -errno with result->message filled in;
	 * NULL for a format that is only written. */
	int (*read)(struct input *in, const struct profile_read_options *options,
		    struct profile **out, struct profile_read_result *result);
	/* 0 or -errno; NULL for a format that is only read. */
	int (*write)(const struct profile *profile, const struct writer_options *options,
		     FILE *out);
};

/* The row of a format; formats past the table get folded's. */
const struct format *format__get(enum profile_format format);
/* The row's flags with FORMAT_READABLE and FORMAT_WRITABLE added. */
unsigned int format__flags(enum profile_format format);
/* Whether a format has every flag of need and none of refuse (variants
 * never match: they have no name of their own). */
bool format__matches(enum profile_format format, unsigned int need, unsigned int refuse);
/* The format named text among those that match; 0 or -EINVAL. */
int format__parse(const char *text, unsigned int need, unsigned int refuse,
		  enum profile_format *format);
/*
 * The names of the formats that match, in table order, as "folded,
 * speedscope or pprof" (last joins the last two: " or "), each after
 * prefix ("-f "), with its note in parentheses where notes is set and
 * with " (default)" after def's name (NR_PROFILE_FORMATS for none).
 * Always terminated; cut where buf is short.
 */
void format__list(char *buf, size_t size, unsigned int need, unsigned int refuse, const char *last,
		  const char *prefix, bool notes, enum profile_format def);

#endif /* LLMPROF_FORMATS_H */
