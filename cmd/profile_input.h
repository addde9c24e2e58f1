/* SPDX-License-Identifier: GPL-2.0 */
/* What diff, convert and report share: loading an input profile, parsing
 * percentages. */
#ifndef LLMPROF_PROFILE_INPUT_H
#define LLMPROF_PROFILE_INPUT_H

#include "profile/profile.h"
#include "profile/profile_reader.h"

/*
 * Reads path ("-" for standard input) into a new profile.  Errors are
 * reported as "FILE:LINE: what"; skipped lines (lenient) as one warning.
 * Returns EXIT_OK, EXIT_USAGE for an unreadable or malformed input, or
 * EXIT_RUNTIME when memory or the read itself failed.
 */
int profile_input__load(const char *path, const struct profile_read_options *options,
			struct profile **out, enum profile_format *format);
/* The same, with what the reader found (format, events) in *result. */
int profile_input__load_result(const char *path, const struct profile_read_options *options,
			       struct profile **out, struct profile_read_result *result);
/* The options of every command that reads profiles (convert, diff, merge,
 * report): their getopt_long entries, help lines and handling. */
enum {
	OPT_READ_STRICT = 0x400,
	OPT_READ_LENIENT,
	OPT_READ_EVENT,
	OPT_READ_SAMPLE_INDEX,
};

#define PROFILE_READ_LONG_OPTIONS                                                                  \
	{"strict", no_argument, NULL, OPT_READ_STRICT},                                            \
	    {"lenient", no_argument, NULL, OPT_READ_LENIENT},                                      \
	    {"event", required_argument, NULL, OPT_READ_EVENT},                                    \
	{                                                                                          \
		"sample-index", required_argument, NULL, OPT_READ_SAMPLE_INDEX                     \
	}

#define PROFILE_READ_HELP                                                                          \
	"      --strict         refuse an input with a malformed line (default: skip\n"            \
	"                       such lines and say how many)\n"                                    \
	"      --lenient        the default, kept for old scripts\n"                               \
	"      --event NAME     perf script input: the records of event NAME (default:\n"          \
	"                       the file's first event)\n"                                         \
	"      --sample-index I pprof input: the sample type weighed, by index or name\n"          \
	"                       (default: the profile's default type, else the last)\n"

/* Applies option c (one of OPT_READ_*) with its argument; false when c is
 * not one of them. */
bool profile_input__read_option(int c, const char *arg, struct profile_read_options *options);

/* How standard input is named in messages and headers. */
const char *profile_input__display_name(const char *path);

/* Reports -f NAME as unknown, listing the formats that have every flag
 * of need and none of refuse (formats.h); returns EXIT_USAGE. */
int profile_input__unknown_format(const char *command, const char *name, unsigned int need,
				  unsigned int refuse);

/* Writes an option's help: option (padded to its column) then text,
 * wrapped at 79 columns under that column. */
void help_option(FILE *out, const char *option, const char *text);

/* Reports "COMMAND: message (try 'llmprof COMMAND --help')", the message
 * being fmt with arg; returns EXIT_USAGE. */
int command_usage_error(const char *command, const char *fmt, const char *arg);

/* The options every command that reads profiles ends its option switch
 * with, once profile_input__read_option() has not taken c: -h (usage on
 * stdout), an option lacking its value, an unknown option.  Returns the exit
 * status. */
int profile_input__other_option(const char *command, int c, char **argv, void (*usage)(FILE *out));

/*
 * The unit a --unit option gives folded input, whose lines carry a number and
 * no unit: "samples", "us" or "ns".  Returns 0 or -EINVAL.
 */
int profile_input__parse_unit(const char *text, enum profile_unit *unit);
/* Gives a profile read from folded stacks that unit; other formats say
 * their own.  In time, the sum of the weights is no longer a sample count. */
void profile_input__set_unit(struct profile *profile, enum profile_format format,
			     enum profile_unit unit);

/* Parses a decimal percentage in [0, 100]; returns 0 or -EINVAL. */
int parse_percent(const char *text, double *value);

#endif /* LLMPROF_PROFILE_INPUT_H */
