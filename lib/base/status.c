// SPDX-License-Identifier: GPL-2.0
/* Status output on stderr; see report.h. */
#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>

#include "status.h"

static enum status_level current_level = STATUS_NORMAL;
/* A progress line is on the terminal, without its newline. */
static bool progress_shown;

void status__set_level(enum status_level level)
{
	current_level = level;
}

enum status_level status__level(void)
{
	return current_level;
}

static void emit(const char *prefix, const char *fmt, va_list ap)
{
	/* One fprintf-sized write per line so lines from threads do not mix. */
	char line[4096];

	vsnprintf(line, sizeof(line), fmt, ap);
	status__progress_clear();
	fprintf(stderr, "llmprof: %s%s\n", prefix, line);
}

void status__progress(const char *fmt, ...)
{
	char line[256];
	va_list ap;

	if (current_level < STATUS_NORMAL)
		return;
	va_start(ap, fmt);
	vsnprintf(line, sizeof(line), fmt, ap);
	va_end(ap);
	/* Back to the line's start, and erase what a longer line left. */
	fprintf(stderr, "\rllmprof: %s\033[K", line);
	fflush(stderr);
	progress_shown = true;
}

void status__progress_clear(void)
{
	if (!progress_shown)
		return;
	fputs("\r\033[K", stderr);
	fflush(stderr);
	progress_shown = false;
}

void status__error(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	emit("error: ", fmt, ap);
	va_end(ap);
}

void status__warn(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	emit("warning: ", fmt, ap);
	va_end(ap);
}

void status__info(const char *fmt, ...)
{
	va_list ap;

	if (current_level < STATUS_NORMAL)
		return;
	va_start(ap, fmt);
	emit("", fmt, ap);
	va_end(ap);
}

void status__debug(const char *fmt, ...)
{
	va_list ap;

	if (current_level < STATUS_VERBOSE)
		return;
	va_start(ap, fmt);
	emit("debug: ", fmt, ap);
	va_end(ap);
}

void status__text(const char *fmt, ...)
{
	va_list ap;

	if (current_level < STATUS_NORMAL)
		return;
	status__progress_clear();
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
}

const char *status__bpf_error(int err)
{
	switch (-err) {
	case EPERM:
	case EACCES:
		return "permission denied (run as root, or with CAP_BPF and CAP_PERFMON)";
	default:
		return strerror(-err);
	}
}
