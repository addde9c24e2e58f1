/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Writers for a profile (folded stacks, speedscope JSON, pprof, Chrome trace) and the
 * atomic output file they write into.
 */
#ifndef LLMPROF_OUTPUT_H
#define LLMPROF_OUTPUT_H

#include <stdbool.h>
#include <stdio.h>

#include "profile/formats.h"
#include "profile/profile.h"

/* Which stacks are written: CPU samples, GPU activity, or both. */
enum output_view {
	VIEW_ALL = 0,
	VIEW_CPU,
	VIEW_GPU,
};

/* What a writer is told besides the profile: options of the output, not
 * data of the profile. */
struct writer_options {
	enum output_view view;
	/* speedscope: a frame per line of a Python function (--lines), not
	 * one per function */
	bool python_lines;
};

/* Returns 0 or -errno (a write error on out included). */
int folded__write(const struct profile *profile, enum output_view view, FILE *out);
/* Of a profile of several values, speedscope__write() ends each profile's
 * name in the separator and the value's name ("MainThread (pid 7, tid 7) —
 * memory-peak") and names the value in the member, which the speedscope
 * reader reads them back by. */
#define SPEEDSCOPE_VIEW_SEPARATOR " \u2014 "
#define SPEEDSCOPE_VIEW_MEMBER "llmprofView"
/* Beside it, on a thread's timeline of a value that counts samples (in
 * microseconds, as every timeline): the sampling rate in Hz. */
#define SPEEDSCOPE_FREQUENCY_MEMBER "llmprofFrequency"
int speedscope__write(const struct profile *profile, enum output_view view, FILE *out);
int speedscope__write_with(const struct profile *profile, const struct writer_options *options,
			   FILE *out);
/* A gzip'ed profile.proto: sample types samples/count and cpu/nanoseconds
 * (with a known frequency), or cpu (wall with GPU time) nanoseconds. */
int pprof__write(const struct profile *profile, enum output_view view, FILE *out);
/* Chrome's Trace Event Format JSON (Perfetto, chrome://tracing): thread
 * tracks of nested stack slices, GPU stream tracks.  -ENODATA for a profile
 * without a timeline (folded input). */
int chrome__write(const struct profile *profile, enum output_view view, FILE *out);
/* Whether chrome__write() has times to write: samples or GPU activity, or
 * nothing at all. */
bool chrome__has_timeline(const struct profile *profile);
/* -f html's page holds the findings, a wing above the profile's: the front
 * end plugs its writer in here (html_page__write_profile); -ENOTSUP while
 * none is. */
extern int (*output__html_writer)(const struct profile *profile,
				  const struct writer_options *options, FILE *out);
int output__write(const struct profile *profile, enum profile_format format, enum output_view view,
		  FILE *out);
int output__write_with(const struct profile *profile, enum profile_format format,
		       const struct writer_options *options, FILE *out);

/*
 * An output that appears whole or not at all: data goes to a temporary file
 * beside the destination and is renamed over it on commit.  A symbolic link
 * is written through (the temporary file is made beside its target), and an
 * existing file keeps its mode (and, for root, its owner).  Standard output
 * (a NULL path or "-"), a name for an open descriptor (/dev/stdout,
 * /dev/fd/N, /proc/.../fd/N) and anything not a regular file (a device, a
 * FIFO) are written in place.
 *
 * The temporary file is ".NAME.llmprof-tmp-XXXXXX", or ".llmprof-tmp-XXXXXX"
 * where that name would be too long; one left by a killed llmprof (older
 * than a minute, held open by no one) is removed by the next open of the
 * same destination.
 */
struct output_file {
	FILE *stream;
	int fd;		 /* what stream writes to; -1 when closed */
	int write_error; /* -errno of the first failed write, else 0 */
	bool own_fd;	 /* fd is closed at the end (not standard output) */
	char *path;	 /* the destination, links resolved; NULL in place */
	char *temp_path;
};

/* Below this much free space at the destination, open warns. */
#define OUTPUT_LOW_SPACE (1024 * 1024)

/* Creates the temporary file now, so an unwritable destination (a read-only
 * file system, a missing directory, a file we may not write) fails before any
 * profiling starts.  Every descriptor is close-on-exec.  Returns 0 or -errno. */
int output_file__open(struct output_file *file, const char *path);
/* Ends the output after its writer returned write_err (0 or -errno).  With
 * no error: flushes, fsyncs and renames.  Returns 0 or -errno, the errno of
 * the write that failed (ENOSPC, not the writer's EIO) where one did; on
 * failure the temporary file is removed. */
int output_file__commit(struct output_file *file, int write_err);
/* Removes the temporary file; safe after commit and on a zeroed struct. */
void output_file__abort(struct output_file *file);

#endif /* LLMPROF_OUTPUT_H */
