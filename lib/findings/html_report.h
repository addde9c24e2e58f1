/* SPDX-License-Identifier: GPL-2.0 */
/*
 * report --html: the flame graph, the findings, the per-process table and
 * the report of one profile, or of several, in one self-contained HTML page.
 */
#ifndef LLMPROF_HTML_REPORT_H
#define LLMPROF_HTML_REPORT_H

#include <stdio.h>

#include "profile/profile.h"
#include "profile/profile_report.h"

/* The page of nr profiles, options[i] (its name) the report's of
 * profiles[i]: one input's views, or a view per input named by its file
 * ("FILE: VIEW" where it has several), the tables of the selected view's
 * input and one processes table of them all.  Returns 0, -ENOMEM or -EIO. */
int html_report__write(const struct profile *const *profiles, const struct report_options *options,
		       size_t nr, FILE *out);

#endif /* LLMPROF_HTML_REPORT_H */
