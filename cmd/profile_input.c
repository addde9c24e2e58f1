// SPDX-License-Identifier: GPL-2.0
/* Loading input profiles for diff, convert and report. */
#include <errno.h>
#include <getopt.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cmd.h"
#include "profile_input.h"
#include "status.h"

const char *profile_input__display_name(const char *path)
{
	return strcmp(path, "-") ? path : "<stdin>";
}

int profile_input__load_result(const char *path, const struct profile_read_options *options,
			       struct profile **out, struct profile_read_result *result)
{
	const char *name = profile_input__display_name(path);
	int err;

	if (strcmp(path, "-"))
		err = profile_reader__read_file(path, options, out, result);
	else
		err = profile_reader__read_stream(stdin, options, out, result);
	if (err) {
		if (result->line)
			status__error("%s:%lu: %s", name, result->line, result->message);
		else
			status__error("%s: %s", name, result->message);
		return err == -ENOMEM || err == -EIO ? EXIT_RUNTIME : EXIT_USAGE;
	}
	if (result->skipped)
		status__warn("%s: skipped %llu malformed line%s (the first, line %lu: %s)", name,
			     (unsigned long long)result->skipped, result->skipped == 1 ? "" : "s",
			     result->line, result->message);
	/* perf script files of several events: which one was read. */
	if (result->nr_events > 1)
		status__warn("%s: %u events (%s); read %s (choose with --event NAME)", name,
			     result->nr_events, result->events, result->event_read);
	return EXIT_OK;
}

int profile_input__load(const char *path, const struct profile_read_options *options,
			struct profile **out, enum profile_format *format)
{
	struct profile_read_result result;
	int status = profile_input__load_result(path, options, out, &result);

	if (!status && format)
		*format = result.format;
	return status;
}

bool profile_input__read_option(int c, const char *arg, struct profile_read_options *options)
{
	switch (c) {
	case OPT_READ_STRICT:
		options->strict = true;
		return true;
	case OPT_READ_LENIENT:
		options->strict = false;
		return true;
	case OPT_READ_EVENT:
		options->event = arg;
		return true;
	case OPT_READ_SAMPLE_INDEX:
		options->sample_index = arg;
		return true;
	default:
		return false;
	}
}

int profile_input__parse_unit(const char *text, enum profile_unit *unit)
{
	if (!strcmp(text, "samples"))
		*unit = UNIT_SAMPLES;
	else if (!strcmp(text, "us"))
		*unit = UNIT_MICROSECONDS;
	else if (!strcmp(text, "ns"))
		*unit = UNIT_NANOSECONDS;
	else
		return -EINVAL;
	return 0;
}

void profile_input__set_unit(struct profile *p, enum profile_format format, enum profile_unit unit)
{
	/* The default leaves what the reader found (GPU memory views weigh
	 * bytes) as it is. */
	if (format != FORMAT_FOLDED || unit == UNIT_SAMPLES)
		return;
	p->unit = unit;
	if (unit != UNIT_SAMPLES)
		p->samples_taken = 0;
}

int parse_percent(const char *text, double *value)
{
	char *end;
	double v;

	errno = 0;
	v = strtod(text, &end);
	if (errno || end == text || *end || !isfinite(v) || v < 0 || v > 100)
		return -EINVAL;
	*value = v;
	return 0;
}

int profile_input__unknown_format(const char *command, const char *name, unsigned int need,
				  unsigned int refuse)
{
	char formats[192], message[256];

	format__list(formats, sizeof(formats), need, refuse, " or ", "", false, NR_PROFILE_FORMATS);
	snprintf(message, sizeof(message), "unknown format '%s' (expected %s)", name, formats);
	return command_usage_error(command, "%s", message);
}

void help_option(FILE *out, const char *option, const char *text)
{
	size_t indent = strlen(option), column = indent;

	fputs(option, out);
	while (*text) {
		size_t word = strcspn(text, " ");

		if (column > indent && column + 1 + word > 79) {
			fprintf(out, "\n%*s", (int)indent, "");
			column = indent;
		} else if (column > indent) {
			fputc(' ', out);
			column++;
		}
		fwrite(text, 1, word, out);
		column += word;
		text += word;
		text += strspn(text, " ");
	}
	fputc('\n', out);
}

int command_usage_error(const char *command, const char *fmt, const char *arg)
{
	char message[256];

	snprintf(message, sizeof(message), fmt, arg);
	status__error("%s: %s (try 'llmprof %s --help')", command, message, command);
	return EXIT_USAGE;
}

int profile_input__other_option(const char *command, int c, char **argv, void (*usage)(FILE *out))
{
	if (c == 'h') {
		usage(stdout);
		return EXIT_OK;
	}
	return command_usage_error(command,
				   c == ':' ? "option '%s' needs a value" : "unknown option '%s'",
				   argv[optind - 1]);
}
