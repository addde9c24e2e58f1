// SPDX-License-Identifier: GPL-2.0
/* Status output on stderr; see report.h. */
#include <stdio.h>

#include "status.h"

static enum report_level current_level = REPORT_NORMAL;

void report__set_level(enum report_level level)
{
	current_level = level;
}

enum report_level report__level(void)
{
	return current_level;
}

static void emit(const char *prefix, const char *fmt, va_list ap)
{
	/* One fprintf-sized write per line so lines from threads do not mix. */
	char line[4096];

	vsnprintf(line, sizeof(line), fmt, ap);
	fprintf(stderr, "llmprof: %s%s\n", prefix, line);
}

void report__error(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	emit("error: ", fmt, ap);
	va_end(ap);
}

void report__warn(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	emit("warning: ", fmt, ap);
	va_end(ap);
}

void report__info(const char *fmt, ...)
{
	va_list ap;

	if (current_level < REPORT_NORMAL)
		return;
	va_start(ap, fmt);
	emit("", fmt, ap);
	va_end(ap);
}

void report__debug(const char *fmt, ...)
{
	va_list ap;

	if (current_level < REPORT_VERBOSE)
		return;
	va_start(ap, fmt);
	emit("debug: ", fmt, ap);
	va_end(ap);
}

void report__text(const char *fmt, ...)
{
	va_list ap;

	if (current_level < REPORT_NORMAL)
		return;
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
}
