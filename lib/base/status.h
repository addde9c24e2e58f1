/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The one place that prints status: errors, warnings, progress and debug
 * lines, all on stderr, each prefixed "llmprof: ".  Library code reports
 * through here and never exits.
 */
#ifndef LLMPROF_STATUS_H
#define LLMPROF_STATUS_H

#include <stdarg.h>

enum status_level {
	STATUS_QUIET = 0,
	STATUS_NORMAL = 1,
	STATUS_VERBOSE = 2,
};

void status__set_level(enum status_level level);
enum status_level status__level(void);

/* "llmprof: error: ...": the one line a user sees for a failure. */
void status__error(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
/* "llmprof: warning: ..." */
void status__warn(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
/* "llmprof: ...": status and progress, hidden by STATUS_QUIET. */
void status__info(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
/* Only with -v. */
void status__debug(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
/* Unprefixed text for multi-line blocks such as the summary. */
void status__text(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/* One line that rewrites itself ("\r"), for a terminal only: the caller
 * checks isatty(2).  Any other report clears it first. */
void status__progress(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
void status__progress_clear(void);

/* A failure to load or attach a BPF program (-errno) in words: permission
 * denied names the privileges it takes. */
const char *status__bpf_error(int err);

#endif /* LLMPROF_STATUS_H */
