/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Reading pprof's profile.proto (perftools.profiles.Profile), gzip'ed as
 * pprof, Go and Pyroscope write it or raw, into a profile.
 */
#ifndef LLMPROF_PPROF_READER_H
#define LLMPROF_PPROF_READER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>

#include "profile/profile.h"

/* True when data (the first bytes of an input) starts like pprof: the gzip
 * magic, or profile.proto fields, each of its own wire type, up to the end
 * of data. */
bool pprof_reader__detect(const void *data, size_t size);

/* True when data starts like a legacy (pre-profile.proto) pprof profile:
 * gperftools' binary CPU profile header, or the text heap, contention and
 * growth profiles. */
bool pprof_reader__is_legacy(const void *data, size_t size);

/*
 * Parses a whole pprof profile.  Stacks are root first, the process label
 * back as the root frame; weights are those of the sample type sample_index
 * names (an index from 0, or a type name, as pprof's -sample_index takes
 * it), or when NULL pprof's default: the default_sample_type, else the
 * last.  Returns 0 and a new profile in *out, or -EINVAL (malformed or
 * truncated input) or -ENOMEM with a one-line message, *out untouched.
 */
int pprof_reader__parse(const void *data, size_t size, const char *sample_index,
			struct profile **out, char *message, size_t message_size);

/* The same for an input of which head has been read and the rest, if
 * stream is not NULL, is still in stream.  A failed read is -errno. */
int pprof_reader__read(const void *head, size_t head_size, FILE *stream, const char *sample_index,
		       struct profile **out, char *message, size_t message_size);

#endif /* LLMPROF_PPROF_READER_H */
