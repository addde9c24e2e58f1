// SPDX-License-Identifier: GPL-2.0
/* llmprof convert: rewrites a profile as folded stacks, speedscope JSON, pprof, a
 * Chrome trace or an SVG flame graph. */
#include <getopt.h>
#include <stdio.h>
#include <string.h>

#include "cmd.h"
#include "profile/output.h"
#include "profile_input.h"
#include "status.h"

enum {
	OPT_LINES = 256,
	OPT_INVERTED,
	OPT_VIEW,
};

static const struct option long_options[] = {
    {"format", required_argument, NULL, 'f'},
    {"output", required_argument, NULL, 'o'},
    {"lines", no_argument, NULL, OPT_LINES},
    {"inverted", no_argument, NULL, OPT_INVERTED},
    {"view", required_argument, NULL, OPT_VIEW},
    PROFILE_READ_LONG_OPTIONS,
    {"help", no_argument, NULL, 'h'},
    {NULL, 0, NULL, 0},
};

static void usage(FILE *out)
{
	char formats[256];

	format__list(formats, sizeof(formats), FORMAT_WRITABLE, 0, " or ", "", false,
		     NR_PROFILE_FORMATS);
	strcat(formats, " (required)");
	fprintf(out, "Usage: llmprof convert -f FORMAT [OPTIONS] INPUT\n"
		     "\n"
		     "Convert a profile (folded stacks, speedscope JSON, pprof or perf script,\n"
		     "told apart by content) to folded stacks, speedscope JSON, pprof, a Chrome\n"
		     "trace (which needs an input with times: speedscope with timelines), an\n"
		     "interactive SVG flame graph or an HTML page (the flame graphs, findings\n"
		     "and tables of report --html).  INPUT '-' is standard input.\n"
		     "\n"
		     "Options:\n");
	help_option(out, "  -f, --format FORMAT  ", formats);
	fprintf(out,
		"  -o, --output FILE    write to FILE instead of standard output; the file\n"
		"                       appears whole or not at all\n"
		"      --lines          speedscope: a frame per line of a Python function\n"
		"                       (default: one per function)\n"
		"      --inverted       svg: an icicle graph, roots at the top\n"
		"      --view NAME      of a profile of several values (a pprof file's sample\n"
		"                       types, a recording's views), write the one named NAME\n"
		"                       alone (default: all where the format holds several,\n"
		"                       else the first)\n" PROFILE_READ_HELP
		"  -h, --help           show this help and exit\n");
}

static int usage_error(const char *fmt, const char *arg)
{
	return command_usage_error("convert", fmt, arg);
}

/* The value named view alone in place of *profile.  An exit status. */
static int select_view(struct profile **profile, const char *view, const char *input)
{
	int index = profile__value_index(*profile, view);
	char names[256];
	struct profile *one;
	int err;

	if (index < 0) {
		profile__value_names(*profile, names, sizeof(names));
		status__error("convert: no value '%s' in %s (it has %s)", view,
			      profile_input__display_name(input), names);
		return EXIT_USAGE;
	}
	err = profile__select_value(*profile, index, &one);
	if (err) {
		status__error("convert: %s", strerror(-err));
		return EXIT_RUNTIME;
	}
	profile__free(*profile);
	*profile = one;
	return EXIT_OK;
}

int do_convert(int argc, char **argv)
{
	struct profile_read_options read_options = {0};
	struct output_file output = {0};
	enum profile_format format = FORMAT_FOLDED;
	const char *output_path = NULL, *view = NULL;
	struct profile *profile = NULL;
	bool has_format = false, python_lines = false, inverted = false;
	char formats[256];
	int c, err, status;

	optind = 1;
	opterr = 0;
	while ((c = getopt_long(argc, argv, ":f:o:h", long_options, NULL)) != -1) {
		switch (c) {
		case 'f':
			if (format__parse(optarg, FORMAT_WRITABLE, 0, &format))
				return profile_input__unknown_format("convert", optarg,
								     FORMAT_WRITABLE, 0);
			has_format = true;
			break;
		case 'o':
			output_path = optarg;
			break;
		case OPT_LINES:
			python_lines = true;
			break;
		case OPT_INVERTED:
			inverted = true;
			break;
		case OPT_VIEW:
			view = optarg;
			break;
		default:
			if (profile_input__read_option(c, optarg, &read_options))
				break;
			return profile_input__other_option("convert", c, argv, usage);
		}
	}
	if (!has_format) {
		format__list(formats, sizeof(formats), FORMAT_WRITABLE, 0, " or ", "-f ", false,
			     NR_PROFILE_FORMATS);
		return usage_error("%s is required", formats);
	}
	if (inverted && format != FORMAT_SVG)
		return usage_error("%s", "--inverted is for -f svg");
	if (inverted)
		format = FORMAT_SVG_INVERTED;
	if (argc - optind != 1)
		return usage_error("%s", "expected one INPUT");

	/* Timelines survive a conversion to speedscope, and their threads
	 * become pprof labels; folded output has no use for them. */
	read_options.keep_timeline = format__flags(format) & (FORMAT_TIMELINE | FORMAT_THREADS);
	err = output_file__open(&output, output_path);
	if (err) {
		status__error("cannot create %s: %s", output_path, strerror(-err));
		return EXIT_RUNTIME;
	}
	status = profile_input__load(argv[optind], &read_options, &profile, NULL);
	if (status)
		goto cleanup;
	if (view) {
		status = select_view(&profile, view, argv[optind]);
		if (status)
			goto cleanup;
	}
	if ((format__flags(format) & FORMAT_NEEDS_TIMELINE) && !chrome__has_timeline(profile)) {
		status__error("convert: %s has no times (folded stacks, or a profile without "
			      "timelines): -f %s needs a timeline",
			      argv[optind], format__get(format)->name);
		status = EXIT_USAGE;
		goto cleanup;
	}
	err = output__write_with(
	    profile, format, &(struct writer_options){.python_lines = python_lines}, output.stream);
	err = output_file__commit(&output, err);
	if (err) {
		status__error("cannot write %s: %s", output_path ? output_path : "standard output",
			      strerror(-err));
		status = EXIT_RUNTIME;
	}
cleanup:
	output_file__abort(&output);
	profile__free(profile);
	return status;
}
