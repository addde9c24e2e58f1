/* SPDX-License-Identifier: GPL-2.0 */
/*
 * What the rules share: one pass over the profile that says what data it
 * holds, frame matching by name, Python locations, and tallies of evidence.
 * Private to lib/findings/.
 */
#ifndef LLMPROF_FINDINGS_ANALYSIS_H
#define LLMPROF_FINDINGS_ANALYSIS_H

#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>

#include "findings/findings.h"

struct analysis {
	const struct profile *profile;
	struct findings *findings;
	uint64_t cpu_weight;	   /* weight of every stack that is not GPU activity */
	uint64_t on_cpu_weight;	   /* of those, the ones not ending in an [off-cpu] leaf */
	uint64_t off_cpu_weight;   /* the ones that do */
	double seconds_per_weight; /* for CPU stacks; 0 when the profile does not say */
	bool has_off_cpu;
	bool has_python;
	bool has_timeline; /* samples with times, not only stack weights */
	bool has_gpu;	   /* GPU activity with times */
	bool *is_gpu_stack;
	bool *is_off_cpu_stack;
	/* Per frame, as stack_find_wait() asks: 0x80 | the ML_WAIT_MASK()s
	 * of the waits it is; 0 not asked yet. */
	uint8_t *frame_waits;
	size_t nr_processes; /* distinct root process frames */
};

/* A rule: fills in its outcome, and adds a finding where it fires. */
struct rule {
	const char *id;
	const char *summary;
	int (*run)(struct analysis *a, struct rule_outcome *outcome);
};

/* What the data-loading rule measured, for its suggestion. */
struct loader_advice {
	size_t workers;	     /* worker loops */
	size_t ranks;	     /* training loops that wait for them */
	double on_cpu;	     /* the workers' loops on the CPU, share of their wall time */
	double runnable;     /* and runnable, waiting for a CPU */
	double data_wait;    /* the loop's wait for batches, share of its time */
	double cpus_busy;    /* the job's on-CPU time over the recording's duration */
	const char *hottest; /* the workers' hottest code, or NULL */
};
/* The suggestion in those numbers (loader_advice.c); 0 or -ENOMEM. */
int loader_advice__suggest(struct finding *f, const struct loader_advice *advice);

/* The communication rule (rules_communication.c), a row of cpu_rules. */
int communication_waits(struct analysis *a, struct rule_outcome *outcome);
/* The file-io rule (rules_file_io.c), a row of cpu_rules. */
int file_io(struct analysis *a, struct rule_outcome *outcome);

extern const struct rule cpu_rules[];
extern const size_t nr_cpu_rules;
extern const struct rule gpu_rules[];
extern const size_t nr_gpu_rules;
extern const struct rule memory_rules[];
extern const size_t nr_memory_rules;

/* Name patterns: "name" matches the name exactly or followed by '(' (C++
 * arguments) or '@'; "prefix*" a prefix; "*part*" a substring. */
bool analysis__name_matches(const char *name, const char *const *patterns);
/* The deepest frame of the stack whose name matches, or -1. */
int analysis__stack_find(const struct profile *p, uint32_t stack, const char *const *patterns);
/* The innermost Python frame above index below (-1: the whole stack) as
 * "function (file:line)" in buf; false when there is none. */
bool analysis__python_location(const struct profile *p, uint32_t stack, int below, char *buf,
			       size_t size);
/* The leaf frame's name, or "". */
const char *analysis__leaf_name(const struct profile *p, uint32_t stack);
/* The root frame's name (the process), or "". */
const char *analysis__root_name(const struct profile *p, uint32_t stack);

/* A share of the CPU side: part of cpu_weight, 0 when there is none. */
double analysis__cpu_share(const struct analysis *a, uint64_t weight);
/* What analysis__cpu_share() is a share of. */
const char *analysis__cpu_share_of(const struct analysis *a);

/* Weights summed by a text key, for evidence lines. */
struct tally_entry {
	char *key;
	uint64_t weight;
};
struct tally {
	struct tally_entry *entries;
	size_t nr, cap;
};
int tally__add(struct tally *t, const char *key, uint64_t weight);
/* Sorts by weight, largest first, then key. */
void tally__sort(struct tally *t);
void tally__free(struct tally *t);

/* Adds a finding; NULL on -ENOMEM. */
struct finding *analysis__add_finding(struct analysis *a, const char *rule, double cost,
				      const char *cost_of, const char *fmt, ...)
    __attribute__((format(printf, 5, 6)));
/* Adds an evidence line (up to FINDING_MAX_EVIDENCE); 0 or -ENOMEM. */
int finding__evidence(struct finding *f, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
int finding__suggest(struct finding *f, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
int finding__locate(struct finding *f, const char *location);
/* Sets the outcome's note; 0 or -ENOMEM. */
int outcome__note(struct rule_outcome *o, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

/* Evidence lines from the top entries of a tally, as "12.3%  key" of the
 * given total. */
int finding__evidence_from_tally(struct finding *f, const struct tally *t, uint64_t total,
				 size_t top);

#endif /* LLMPROF_FINDINGS_ANALYSIS_H */
