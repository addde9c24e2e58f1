/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Reading `perf script` output directly: one record per sample, a header line
 * ("comm pid [cpu] time: period event:") and the call chain under it, one
 * indented "addr symbol+offset (dso)" line per frame, leaf first, and a
 * blank line after.  Each record is one sample on the stack
 * comm;outermost;...;leaf, as stackcollapse-perf.pl would fold it.
 */
#ifndef LLMPROF_PERF_SCRIPT_READER_H
#define LLMPROF_PERF_SCRIPT_READER_H

#include <stdbool.h>
#include <stddef.h>

#include "profile/profile.h"

/* Whether the start of an input (what is buffered of it) is perf script
 * output: its first line that is not a comment is a record header, with the
 * sample's frame on it or an indented line under it. */
bool perf_script_reader__detect(const char *data, size_t len);

/* Hands out the input's lines: 1 and the line (NUL-terminated, without its
 * '\n') in *line, 0 at the end, or -errno.  *line stays the caller's. */
typedef int (*perf_script_next_line)(void *ctx, char **line, size_t *len);

/*
 * Reads every record into p (weights in samples, one per record).  Returns 0,
 * -ENOMEM, the error of next_line, or -EINVAL with message (size bytes) and
 * *line_number (1-based) saying what and where.
 */
int perf_script_reader__read(perf_script_next_line next_line, void *ctx, struct profile *p,
			     char *message, size_t size, unsigned long *line_number);

#endif /* LLMPROF_PERF_SCRIPT_READER_H */
