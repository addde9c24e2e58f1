/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Findings: what a profile says is wrong, and what to change.  Each rule
 * reads what the profile holds (on-CPU and off-CPU stacks, GPU kernels and
 * copies, GPU memory, collectives, several processes), estimates the share
 * of wall, CPU or GPU time the problem costs, and gives the evidence and a
 * suggestion.  A rule whose data is not in the profile says nothing and
 * records why.  Thresholds are documented in llmprof-report(1).
 */
#ifndef LLMPROF_FINDINGS_H
#define LLMPROF_FINDINGS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>

#include "profile/profile.h"
#include "profile/text_output.h"

#define FINDING_MAX_EVIDENCE 8
/* Findings at the end of attach and record. */
#define SUMMARY_TOP_FINDINGS 3

struct finding {
	const char *rule;    /* the rule's id, e.g. "host-sync" */
	char *title;	     /* one line */
	double cost;	     /* estimated share of cost_of, 0..1: the ranking key */
	const char *cost_of; /* "wall time", "CPU time", "GPU time", "GPU memory" */
	char *location;	     /* Python file:line or function where known, else NULL */
	char *evidence[FINDING_MAX_EVIDENCE];
	size_t nr_evidence;
	char *suggestion;
};

/* What each rule did: ran (and fired or not, with the figure it measured),
 * or did not run, and why. */
struct rule_outcome {
	const char *rule;
	const char *summary; /* what the rule looks for */
	bool ran;
	bool fired;
	char *note; /* the measured figure, or why it did not run */
};

struct findings {
	struct finding *items; /* sorted by cost, largest first */
	size_t nr_items, cap_items;
	struct rule_outcome *rules;
	size_t nr_rules;
};

/* Runs every rule on the profile.  0 or -ENOMEM. */
int findings__analyze(const struct profile *profile, struct findings **out);
void findings__free(struct findings *findings);

struct findings_write_options {
	const char *name; /* the profile's name for the heading, or NULL */
	size_t top;	  /* findings to write; 0 for all */
	bool verbose;	  /* also list every rule and why it did or did not fire */
};

/* Writes the findings as text, markdown or json.  0, -EINVAL (another
 * format) or -EIO. */
int findings__write(const struct findings *findings, const struct findings_write_options *options,
		    enum text_format format, FILE *out);

/* The top findings as short lines on stderr (through status.h), for the
 * end of attach and record, under a heading that says where their
 * evidence is (evidence: "llmprof report --findings run.json"). */
void findings__print_summary(const struct findings *findings, size_t top, const char *evidence);
/* Analyzes the profile and prints its top findings; 0 or -ENOMEM. */
int findings__print_top(const struct profile *profile, size_t top, const char *evidence);

#endif /* LLMPROF_FINDINGS_H */
