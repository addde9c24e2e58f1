/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Reading `perf script` output as perf writes it, of any version and -F field
 * set: a record header ("comm pid[/tid] [cpu] time: period event:", every
 * field but comm and pid optional) and the call chain under it, one
 * "addr symbol+off (dso)" line per frame, leaf first (indented or not, with
 * srcline lines between), and a blank line after; or, without call chains, a
 * header with the sample's frame on it, one line per record.  Each record is
 * one sample on the stack comm;outermost;...;leaf, its weight the period
 * where the file has one (as perf report and stackcollapse-perf.pl weigh),
 * else 1; only the records of one event are read.
 */
#ifndef LLMPROF_PERF_SCRIPT_READER_H
#define LLMPROF_PERF_SCRIPT_READER_H

#include <stdbool.h>
#include <stddef.h>

#include "profile/profile.h"
#include "profile/profile_reader.h"

/* Whether the start of an input (what is buffered of it) is perf script
 * output: perf's "# ========" header, or a first line that is not a comment
 * and is a record header. */
bool perf_script_reader__detect(const char *data, size_t len);

/* Hands out the input's lines: 1 and the line (NUL-terminated, without its
 * '\n') in *line, 2 for a last line with no '\n', 0 at the end, or -errno.
 * *line stays the caller's. */
typedef int (*perf_script_next_line)(void *ctx, char **line, size_t *len);

/*
 * Reads the records of options->event (the first event when NULL) into p.
 * Lines that are neither a header nor a frame are skipped and counted in
 * result (-EINVAL at the first with options->strict).  Returns 0, -ENOMEM,
 * the error of next_line, or -EINVAL with result's message and line set.
 */
int perf_script_reader__read(perf_script_next_line next_line, void *ctx,
			     const struct profile_read_options *options, struct profile *p,
			     struct profile_read_result *result);

#endif /* LLMPROF_PERF_SCRIPT_READER_H */
