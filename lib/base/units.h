/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The units of a profile's weights, and their names as the output formats
 * spell them (speedscope's "unit", the reports' and diffs' "unit").
 */
#ifndef LLMPROF_BASE_UNITS_H
#define LLMPROF_BASE_UNITS_H

enum profile_unit {
	UNIT_SAMPLES = 0,  /* one per CPU sample */
	UNIT_MICROSECONDS, /* CPU samples count 1e6/F, GPU activity its duration */
	UNIT_NANOSECONDS,
	UNIT_BYTES, /* GPU memory (--gpu-memory) */
};

/* A count of samples has no unit of time or size: each format names it its
 * own way, speedscope "none", llmprof's reports "samples". */
#define UNIT_NAME_SPEEDSCOPE_COUNT "none"
#define UNIT_NAME_REPORT_COUNT "samples"

/* "microseconds", "nanoseconds", "bytes", or count_name for samples. */
const char *unit__name(enum profile_unit unit, const char *count_name);

#endif
