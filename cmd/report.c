// SPDX-License-Identifier: GPL-2.0
/* llmprof report: summarises one profile: top functions, GPU time. */
#include <getopt.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cmd.h"
#include "findings/brief.h"
#include "findings/findings.h"
#include "findings/html_report.h"
#include "profile/output.h"
#include "profile_input.h"
#include "profile/process_report.h"
#include "profile/profile_report.h"
#include "status.h"

enum {
	OPT_TOP = 256,
	OPT_FINDINGS,
	OPT_BY_PROCESS,
	OPT_UNIT,
	OPT_HTML,
	OPT_BRIEF,
};

static const struct option long_options[] = {
    {"format", required_argument, NULL, 'f'},
    {"output", required_argument, NULL, 'o'},
    {"top", required_argument, NULL, OPT_TOP},
    {"unit", required_argument, NULL, OPT_UNIT},
    {"findings", no_argument, NULL, OPT_FINDINGS},
    {"verbose", no_argument, NULL, 'v'},
    {"by-process", no_argument, NULL, OPT_BY_PROCESS},
    {"html", no_argument, NULL, OPT_HTML},
    {"brief", no_argument, NULL, OPT_BRIEF},
    PROFILE_READ_LONG_OPTIONS,
    {"help", no_argument, NULL, 'h'},
    {NULL, 0, NULL, 0},
};

static void usage(FILE *out)
{
	fprintf(
	    out,
	    "Usage: llmprof report [OPTIONS] INPUT\n"
	    "       llmprof report --by-process [OPTIONS] INPUT...\n"
	    "\n"
	    "Summarise a profile (folded stacks, speedscope JSON, pprof or perf script,\n"
	    "told apart by content): samples and duration, the top functions by self and\n"
	    "by total share, and GPU time by kernel and by launching function when the\n"
	    "profile has any.  INPUT '-' is standard input.\n"
	    "\n"
	    "Options:\n"
	    "  -f, --format FORMAT  text (default), json or markdown\n"
	    "  -o, --output FILE    write to FILE instead of standard output\n"
	    "      --top N          rows per table (default 10, 0 for all)\n"
	    "      --unit UNIT      what the numbers of folded input count: samples\n"
	    "                       (default), us or ns\n"
	    "      --findings       what is wrong and what to change, ranked by the share of\n"
	    "                       time it costs, instead of the tables\n"
	    "  -v, --verbose        with --findings: every rule, and why it did or did not fire\n"
	    "      --by-process     a row per process of the INPUTs (ranks, workers, files\n"
	    "                       written with -o '%%r'), and the straggler named\n"
	    "      --html           one self-contained HTML page: the flame graph, the\n"
	    "                       findings, the per-process table and the report\n"
	    "      --brief          one short text, what llmprof mcp replies: the top\n"
	    "                       functions by self and by total share, the heaviest\n"
	    "                       call paths and the findings with where they are, at\n"
	    "                       most " BRIEF_BUDGET_TEXT
	    " bytes (the least important rows left out)\n" PROFILE_READ_HELP
	    "  -h, --help           show this help and exit\n");
}

static int usage_error(const char *fmt, const char *arg)
{
	return command_usage_error("report", fmt, arg);
}

static int write_findings(const struct profile *profile, const struct report_options *options,
			  bool verbose, enum text_format format, FILE *out)
{
	struct findings_write_options write_options = {
	    .name = options->name,
	    .top = options->top,
	    .verbose = verbose,
	};
	struct findings *findings;
	int err = findings__analyze(profile, &findings);

	if (err)
		return err;
	err = findings__write(findings, &write_options, format, out);
	findings__free(findings);
	return err;
}

/* What the command line asks for. */
struct report_env {
	struct profile_read_options read_options;
	struct report_options options;
	enum text_format format;
	enum profile_unit folded_unit;
	const char *output_path;
	bool findings, verbose, by_process, html, brief;
};

/* report --by-process or --html INPUT...: every input loaded, then one
 * table or one page of them all. */
static int report_inputs(int nr, char **paths, const struct report_env *env)
{
	struct profile **profiles = calloc(nr, sizeof(*profiles));
	struct report_options *options = calloc(nr, sizeof(*options));
	const char **names = calloc(nr, sizeof(*names));
	struct output_file output = {0};
	int status = EXIT_OK, err;

	if (!profiles || !options || !names) {
		status__error("out of memory");
		status = EXIT_RUNTIME;
		goto cleanup;
	}
	for (int i = 0; i < nr; i++) {
		struct profile_read_result result;

		status =
		    profile_input__load_result(paths[i], &env->read_options, &profiles[i], &result);
		if (status)
			goto cleanup;
		profile_input__set_unit(profiles[i], result.format, env->folded_unit);
		options[i] = env->options;
		options[i].events = result.events;
		options[i].event = result.event_read;
		options[i].name = names[i] = profile_input__display_name(paths[i]);
		options[i].format = profile_format__name(result.format);
	}
	err = output_file__open(&output, env->output_path);
	if (!err)
		err = output_file__commit(
		    &output, env->html ? html_report__write((const struct profile *const *)profiles,
							    options, nr, output.stream)
				       : process_report__write(profiles, names, nr, env->format,
							       output.stream));
	if (err) {
		status__error("cannot write %s: %s",
			      env->output_path ? env->output_path : "standard output",
			      strerror(-err));
		status = EXIT_RUNTIME;
	}
cleanup:
	for (int i = 0; profiles && i < nr; i++)
		profile__free(profiles[i]);
	free(profiles);
	free(options);
	free(names);
	return status;
}

/* Parses the options into env and checks they go together: REPORT_RUN to
 * go on, or the status to exit with. */
#define REPORT_RUN (-1)
static int parse_report_options(int argc, char **argv, struct report_env *env)
{
	long top;
	int c;

	optind = 1;
	opterr = 0;
	while ((c = getopt_long(argc, argv, ":f:o:hv", long_options, NULL)) != -1) {
		switch (c) {
		case 'f':
			if (text_format__parse(optarg, &env->format) ||
			    env->format == TEXT_FORMAT_FOLDED || env->format == TEXT_FORMAT_SVG)
				return usage_error("unknown format '%s' (expected text, json or "
						   "markdown)",
						   optarg);
			break;
		case 'o':
			env->output_path = optarg;
			break;
		case OPT_TOP:
			if (parse_long(optarg, 0, 1000000, &top))
				return usage_error("--top: '%s' is not a whole number from 0 to "
						   "1000000",
						   optarg);
			env->options.top = top;
			break;
		case OPT_UNIT:
			if (profile_input__parse_unit(optarg, &env->folded_unit))
				return usage_error("--unit: unknown unit '%s' (expected samples, "
						   "us or ns)",
						   optarg);
			break;
		case OPT_FINDINGS:
			env->findings = true;
			break;
		case 'v':
			env->verbose = true;
			break;
		case OPT_BY_PROCESS:
			env->by_process = true;
			break;
		case OPT_HTML:
			env->html = true;
			break;
		case OPT_BRIEF:
			env->brief = true;
			break;
		default:
			if (profile_input__read_option(c, optarg, &env->read_options))
				break;
			return profile_input__other_option("report", c, argv, usage);
		}
	}
	/* The findings read the timeline too: GPU activity with its times,
	 * samples by thread; --by-process (and --html's per-process table)
	 * compares ranks over their training. */
	env->read_options.keep_timeline =
	    env->findings || env->by_process || env->html || env->brief;
	if (env->brief &&
	    (env->html || env->by_process || env->findings || env->format != TEXT_FORMAT_TEXT))
		return usage_error("%s", "--brief is text with the findings in it: drop -f, "
					 "--findings, --by-process and --html");
	if (env->html && (env->by_process || env->findings))
		return usage_error("%s", "--html holds the findings and the per-process table: "
					 "drop --findings and --by-process");
	return REPORT_RUN;
}

/* The report that env asks for, of one profile. */
static int write_report(const struct profile *profile, const struct report_env *env, FILE *out)
{
	const struct report_options *options = &env->options;

	if (env->brief)
		return brief__write(
		    profile, &(struct brief_options){.name = options->name, .top = options->top},
		    out);
	if (env->findings)
		return write_findings(profile, options, env->verbose, env->format, out);
	return profile_report__write(profile, options, env->format, out);
}

int do_report(int argc, char **argv)
{
	struct report_env env = {
	    .options = {.top = 10},
	    .format = TEXT_FORMAT_TEXT,
	    .folded_unit = UNIT_SAMPLES,
	};
	struct profile_read_result read_result;
	enum profile_format input_format;
	struct output_file output = {0};
	const char *output_path;
	struct profile *profile = NULL;
	int err, status;

	status = parse_report_options(argc, argv, &env);
	if (status != REPORT_RUN)
		return status;
	output_path = env.output_path;
	if ((env.by_process || env.html) && argc - optind < 1)
		return usage_error("%s", env.html ? "--html expects one or more INPUTs"
						  : "--by-process expects one or more INPUTs");
	if (env.by_process || env.html)
		return report_inputs(argc - optind, argv + optind, &env);
	if (argc - optind != 1)
		return usage_error("%s", "expected one INPUT");

	err = output_file__open(&output, output_path);
	if (err) {
		status__error("cannot create %s: %s", output_path, strerror(-err));
		return EXIT_RUNTIME;
	}
	status =
	    profile_input__load_result(argv[optind], &env.read_options, &profile, &read_result);
	if (status)
		goto cleanup;
	input_format = read_result.format;
	env.options.events = read_result.events;
	env.options.event = read_result.event_read;
	profile_input__set_unit(profile, input_format, env.folded_unit);
	env.options.name = profile_input__display_name(argv[optind]);
	env.options.format = profile_format__name(input_format);
	err = output_file__commit(&output, write_report(profile, &env, output.stream));
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
