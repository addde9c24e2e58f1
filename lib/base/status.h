/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The one place that prints status: errors, warnings, progress and debug
 * lines, all on stderr, each prefixed "llmprof: ".  Library code reports
 * through here and never exits.
 */
#ifndef LLMPROF_STATUS_H
#define LLMPROF_STATUS_H

#include <stdarg.h>

enum report_level {
	REPORT_QUIET = 0,
	REPORT_NORMAL = 1,
	REPORT_VERBOSE = 2,
};

void report__set_level(enum report_level level);
enum report_level report__level(void);

/* "llmprof: error: ...": the one line a user sees for a failure. */
void report__error(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
/* "llmprof: warning: ..." */
void report__warn(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
/* "llmprof: ...": status and progress, hidden by REPORT_QUIET. */
void report__info(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
/* Only with -v. */
void report__debug(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
/* Unprefixed text for multi-line blocks such as the summary. */
void report__text(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/* One line that rewrites itself ("\r"), for a terminal only: the caller
 * checks isatty(2).  Any other report clears it first. */
void report__progress(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
void report__progress_clear(void);

/* A failure to load or attach a BPF program (-errno) in words: permission
 * denied names the privileges it takes. */
const char *report__bpf_error(int err);

#endif /* LLMPROF_STATUS_H */
