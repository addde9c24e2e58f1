/* SPDX-License-Identifier: GPL-2.0 */
/*
 * report --html: the flame graph, the findings, the per-process table and
 * the report of one profile in one self-contained HTML page.
 */
#ifndef LLMPROF_HTML_REPORT_H
#define LLMPROF_HTML_REPORT_H

#include <stdio.h>

#include "profile/profile.h"
#include "profile/profile_report.h"

/* Returns 0, -ENOMEM or -EIO. */
int html_report__write(const struct profile *profile, const struct report_options *options,
		       FILE *out);

#endif /* LLMPROF_HTML_REPORT_H */
