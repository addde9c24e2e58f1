/* SPDX-License-Identifier: GPL-2.0 */
/*
 * A summary of one profile: samples and duration, the top functions by self
 * and by total share, and GPU time by kernel and by launching function.
 */
#ifndef LLMPROF_PROFILE_REPORT_H
#define LLMPROF_PROFILE_REPORT_H

#include <stddef.h>
#include <stdio.h>

#include "profile/profile.h"
#include "profile/text_output.h"

struct report_options {
	const char *name;   /* the input's file name */
	const char *format; /* the input's format: "folded", "speedscope" */
	/* perf script input: the events the file holds ("cpu-clock,
	 * task-clock") and the one read; NULL or "" when it names none. */
	const char *events, *event;
	size_t top; /* rows per table; 0 for all */
};

/* Writes the report as text, json or markdown; returns 0, -ENOMEM, -EINVAL
 * (another format) or -EIO. */
int profile_report__write(const struct profile *profile, const struct report_options *options,
			  enum text_format format, FILE *out);

#endif /* LLMPROF_PROFILE_REPORT_H */
