/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Writers for a profile (folded stacks, speedscope JSON, pprof) and the
 * atomic output file they write into.
 */
#ifndef LLMPROF_OUTPUT_H
#define LLMPROF_OUTPUT_H

#include <stdio.h>

#include "profile/profile.h"

enum output_format {
	FORMAT_FOLDED = 0,
	FORMAT_SPEEDSCOPE,
	FORMAT_PPROF,
};

/* Which stacks are written: CPU samples, GPU activity, or both. */
enum output_view {
	VIEW_ALL = 0,
	VIEW_CPU,
	VIEW_GPU,
};

/* Returns 0 or -errno (a write error on out included). */
int folded__write(const struct profile *profile, enum output_view view, FILE *out);
int speedscope__write(const struct profile *profile, enum output_view view, FILE *out);
/* A gzip'ed profile.proto: sample types samples/count and cpu/nanoseconds
 * (with a known frequency), or cpu (wall with GPU time) nanoseconds. */
int pprof__write(const struct profile *profile, enum output_view view, FILE *out);
int output__write(const struct profile *profile, enum output_format format,
		  enum output_view view, FILE *out);
/* Parses "folded", "speedscope" or "pprof"; returns 0 or -EINVAL. */
int output__parse_format(const char *text, enum output_format *format);
/* "folded stacks", "speedscope JSON" or "a pprof profile", for messages. */
const char *output_format__description(enum output_format format);

/*
 * An output that appears whole or not at all: data goes to a temporary file
 * beside the destination and is renamed over it on commit.  With a NULL path
 * it writes to stdout.
 */
struct output_file {
	FILE *stream;
	char *path;
	char *temp_path;
};

/* Creates the temporary file now, so an unwritable destination fails before
 * any profiling starts.  Returns 0 or -errno. */
int output_file__open(struct output_file *file, const char *path);
/* Flushes, checks for write errors, fsyncs and renames.  Returns 0 or -errno;
 * on failure the temporary file is removed. */
int output_file__commit(struct output_file *file);
/* Removes the temporary file; safe after commit and on a zeroed struct. */
void output_file__abort(struct output_file *file);

#endif /* LLMPROF_OUTPUT_H */
