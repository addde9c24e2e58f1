/* SPDX-License-Identifier: GPL-2.0 */
/* What the comparison (profile_diff.c) and its writers (diff_writer.c)
 * share; private to lib/profile. */
#ifndef LLMPROF_DIFF_PRIVATE_H
#define LLMPROF_DIFF_PRIVATE_H

#include <stdbool.h>
#include <stdint.h>

#include "profile/profile_diff.h"

/* Whether a share's change passes the threshold. */
bool diff__grew(const struct diff_options *options, double delta);
/* strcmp() of two merged stacks' folded texts, without making them. */
int diff__compare_stack_text(const struct profile *profile, uint32_t a, uint32_t b);
/* The folded text of a merged stack; malloc'd, or NULL. */
char *diff__stack_text(const struct profile *profile, uint32_t stack);

#endif /* LLMPROF_DIFF_PRIVATE_H */
