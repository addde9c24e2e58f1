/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The HTML page of a profile (-f html, report --html): one self-contained
 * file, no network, that opens from file://.  A flame graph per view with a
 * switcher between them and a process and thread selector, and sortable
 * tables: the findings, the processes with the straggler, the GPU kernels,
 * the NCCL collectives, the run's facts and the top functions.
 */
#ifndef LLMPROF_HTML_PAGE_H
#define LLMPROF_HTML_PAGE_H

#include <stddef.h>
#include <stdio.h>

#include "profile/output.h"
#include "profile/profile.h"
#include "profile/profile_report.h"

/* One flame graph of the page: the profile's stacks that the filter keeps
 * (VIEW_ALL: every one), weighed by one of its values in unit. */
struct html_view {
	const char *name; /* "CPU", "GPU", "GPU memory", a value's name */
	enum profile_unit unit;
	const struct profile *profile;
	enum output_view stacks;
	size_t value; /* profile__stack_value()'s index: 0, the weight */
	size_t input; /* the page's input it is of */
};

/* The views of the weight alone. */
#define HTML_MAX_VIEWS 4

struct html_page {
	const char *title;
	const struct html_view *views;
	size_t nr_views;
	/* Per input: the profile the tables, the findings and the facts are
	 * of, and the report's options (its name); the processes table holds
	 * every input's. */
	const struct profile *const *profiles;
	const struct report_options *reports;
	size_t nr_inputs;
};

/* 0, -ENOMEM or -EIO. */
int html_page__write(const struct html_page *page, FILE *out);
/* The views of a profile's weight: CPU (or wall, with off-CPU waits) and
 * GPU stacks, or GPU memory.  Returns how many (1 to HTML_MAX_VIEWS). */
size_t html_page__views(const struct profile *profile, struct html_view *views);
/* Every view of a profile into *views (malloc'ed): a profile of several
 * values (profile__nr_values()) has one per value, named by its type;
 * another html_page__views()'.  Returns how many, or -ENOMEM. */
int html_page__all_views(const struct profile *profile, struct html_view **views);
/* -f html: the page of one profile, its views as html_page__views() finds
 * them (options->view keeps one).  0, -ENOMEM or -EIO. */
int html_page__write_profile(const struct profile *profile, const struct writer_options *options,
			     FILE *out);
/* record and attach -f html with a family's view (--view memory-peak,
 * nccl): the recording's views and that one, named view_name; the tables
 * of the recording.  0, -ENOMEM or -EIO. */
int html_page__write_recording(const struct profile *recorded, const struct profile *view,
			       const char *view_name, FILE *out);
/* The JSON of one view's flame graph (html_flame.c).  0, -ENOMEM or -EIO. */
int html_flame__write(const struct html_view *view, FILE *out);

/* The page's style and script (html_script.c). */
extern const char html_page_style[];
extern const char html_page_script[];

#endif /* LLMPROF_HTML_PAGE_H */
