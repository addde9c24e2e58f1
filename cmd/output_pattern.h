/* SPDX-License-Identifier: GPL-2.0 */
/* -o patterns of attach and record; see output_pattern.c. */
#ifndef LLMPROF_OUTPUT_PATTERN_H
#define LLMPROF_OUTPUT_PATTERN_H

#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

#include "profile/output.h"
#include "profile/profile.h"

/* Whether path holds %p, %r or %h; and whether every % in it is one of
 * those or %%. */
bool output_pattern__is_pattern(const char *path);
bool output_pattern__valid(const char *path);
/* The name for one process: rank -1 for none (%r then gives "pidPID").
 * 0 or -ENAMETOOLONG. */
int output_pattern__expand(const char *pattern, pid_t pid, int rank, char *out, size_t size);
/* One file per name the pattern gives the profile's processes, with every
 * process of that name (all of a rank's, for %r).  0 or -errno; the files
 * written so far stay. */
int output_pattern__write(const char *pattern, const struct profile *profile,
			  enum profile_format format, const struct writer_options *options);

#endif /* LLMPROF_OUTPUT_PATTERN_H */
