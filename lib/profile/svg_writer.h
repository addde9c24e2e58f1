/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Interactive flame graphs in one self-contained SVG file: of a profile,
 * coloured by frame kind, or of a diff, red where a share grew and blue
 * where it shrank, deep where the change is significant.
 */
#ifndef LLMPROF_SVG_WRITER_H
#define LLMPROF_SVG_WRITER_H

#include <stdbool.h>
#include <stdio.h>

#include "profile/output.h"
#include "profile/profile_diff.h"

/* inverted: an icicle graph, roots at the top.  0, -ENOMEM or -EIO. */
int svg__write(const struct profile *profile, enum output_view view, bool inverted, FILE *out);
/* Widths from the new profile, colours from the change.  0, -ENOMEM or -EIO. */
int svg__write_diff(const struct profile_diff *diff, const char *base_name, const char *new_name,
		    FILE *out);

#endif /* LLMPROF_SVG_WRITER_H */
