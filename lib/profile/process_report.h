/* SPDX-License-Identifier: GPL-2.0 */
/*
 * report --by-process: one row per process (each root frame of each input
 * profile: a rank, a DataLoader worker, a file written with -o '%r'), with
 * its weight, its top function and its GPU time, and the straggler named:
 * the rank (or process) whose weight stands out from the median of the rest.
 */
#ifndef LLMPROF_PROCESS_REPORT_H
#define LLMPROF_PROCESS_REPORT_H

#include <stdio.h>

#include "profile/profile.h"
#include "profile/text_output.h"

/* Flagged when the busiest is this much above the median of the others. */
#define STRAGGLER_EXCESS 0.25

/* names[i] labels profiles[i] (its file).  Returns 0 or -errno. */
int process_report__write(struct profile *const *profiles, const char *const *names, size_t n,
			  enum text_format format, FILE *out);

#endif /* LLMPROF_PROCESS_REPORT_H */
