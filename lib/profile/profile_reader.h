/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Reading a profile from a file: folded stacks (llmprof's own,
 * stackcollapse-perf.pl, bcc profile -f, py-spy --format raw), speedscope
 * JSON (sampled and evented), pprof (pprof_reader.h) or `perf script`
 * output, told apart by content.
 */
#ifndef LLMPROF_PROFILE_READER_H
#define LLMPROF_PROFILE_READER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "profile/formats.h"
#include "profile/profile.h"

struct profile_read_options {
	/* Fail on the first malformed line of folded or perf script input
	 * instead of skipping it (skipped lines are counted in the result, as
	 * flamegraph.pl and stackcollapse-perf.pl skip them). */
	bool strict;
	/* perf script: the event whose records are read (perf's name, such as
	 * "cpu-clock" or "cycles:u"); NULL for the file's first. */
	const char *event;
	/* pprof: the sample type weighed, by index or type name as pprof's
	 * -sample_index takes it; NULL for pprof's default (the profile's
	 * default_sample_type, else the last). */
	const char *sample_index;
	/*
	 * Keep what only a timeline can show: speedscope samples and events
	 * in time units become threads and time-ordered samples, GPU streams
	 * written by llmprof become GPU activity.  Without it only stack
	 * weights are kept, and memory grows with distinct stacks alone.
	 */
	bool keep_timeline;
};

struct profile_read_result {
	enum profile_format format;
	uint64_t lines;	  /* lines of input read */
	uint64_t skipped; /* malformed lines skipped (not strict) */
	/* perf script: the events the file holds, in the order first seen,
	 * comma-separated, and how many; the one read is event_read. */
	char events[256];
	uint32_t nr_events;
	char event_read[64];
	/* Where the error was, or the first skipped line: 1-based, 0 when the
	 * problem has no line (an unreadable file, a dangling reference). */
	unsigned long line;
	char message[256]; /* what was wrong, empty when nothing was */
};

/*
 * Each returns 0 and a new profile in *out, or -errno with *out untouched
 * and result->message filled in: -EINVAL for malformed input, -ENOMEM, or the
 * error from opening or reading the file.
 */
int profile_reader__read_file(const char *path, const struct profile_read_options *options,
			      struct profile **out, struct profile_read_result *result);
int profile_reader__read_stream(FILE *stream, const struct profile_read_options *options,
				struct profile **out, struct profile_read_result *result);
int profile_reader__read_buffer(const void *data, size_t size,
				const struct profile_read_options *options, struct profile **out,
				struct profile_read_result *result);

/* "folded", "speedscope", "pprof" or "perf script". */
const char *profile_format__name(enum profile_format format);

/*
 * The kind a folded frame name's marker stands for ("_[k]", "_[i]", "_[j]",
 * "_[p]" suffixes, "[gpu] " prefix), and the name without it, as
 * [*name_start, *name_start + *name_len): frame__folded_name() of the result
 * gives the text back.
 */
enum frame_kind profile_reader__frame_kind(const char *text, size_t len, size_t *name_start,
					   size_t *name_len);

#endif /* LLMPROF_PROFILE_READER_H */
