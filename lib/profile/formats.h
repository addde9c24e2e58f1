/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The formats a profile is read from or written in, one enum for both.
 */
#ifndef LLMPROF_FORMATS_H
#define LLMPROF_FORMATS_H

enum profile_format {
	FORMAT_FOLDED = 0,
	FORMAT_SPEEDSCOPE,
	FORMAT_PPROF,
	FORMAT_CHROME,
	FORMAT_SVG,	     /* an interactive flame graph (svg_writer.h) */
	FORMAT_SVG_INVERTED, /* the same as an icicle: -f svg --inverted */
	FORMAT_PERF_SCRIPT,  /* read only: perf_script_reader.c */
};

#endif /* LLMPROF_FORMATS_H */
