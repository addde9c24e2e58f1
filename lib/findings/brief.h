/* SPDX-License-Identifier: GPL-2.0 */
/*
 * A profile in one short text, enough for a coding agent in one reply:
 * the top functions by self and by total share, the heaviest call paths,
 * and the findings with where they are, cut to a byte budget by leaving
 * out the least important rows (and saying how many).
 */
#ifndef LLMPROF_BRIEF_H
#define LLMPROF_BRIEF_H

#include <stddef.h>
#include <stdio.h>

#include "profile/profile.h"

/* The most bytes a brief is, unless told otherwise. */
#define BRIEF_BUDGET 6144
#define BRIEF_BUDGET_TEXT "6144"
struct brief_options {
	const char *name; /* the profile's name for the heading, or NULL */
	size_t top;	  /* rows per section; 0 for all the budget holds */
	size_t budget;	  /* the most bytes written; 0 for BRIEF_BUDGET */
};

/* Writes the brief; 0, -ENOMEM or -EIO. */
int brief__write(const struct profile *profile, const struct brief_options *options, FILE *out);

#endif /* LLMPROF_BRIEF_H */
