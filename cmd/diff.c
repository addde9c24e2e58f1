// SPDX-License-Identifier: GPL-2.0
/*
 * llmprof diff: compares two profiles by share of their own totals and
 * fails (exit 1) when a share grew by more than the threshold.
 */
#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <string.h>

#include "cmd.h"
#include "profile/output.h"
#include "profile/profile_diff.h"
#include "profile_input.h"
#include "status.h"

/* 1 means a regression and nothing else, so every failure is 2. */
#define EXIT_REGRESSION 1
#define EXIT_DIFF_ERROR EXIT_USAGE

enum {
	OPT_THRESHOLD = 256,
	OPT_MIN_SHARE,
	OPT_TOP,
	OPT_CONFIDENCE,
	OPT_UNIT,
};

static const struct option long_options[] = {
    {"format", required_argument, NULL, 'f'},
    {"output", required_argument, NULL, 'o'},
    {"threshold", required_argument, NULL, OPT_THRESHOLD},
    {"min-share", required_argument, NULL, OPT_MIN_SHARE},
    {"confidence", required_argument, NULL, OPT_CONFIDENCE},
    {"top", required_argument, NULL, OPT_TOP},
    {"unit", required_argument, NULL, OPT_UNIT},
    PROFILE_READ_LONG_OPTIONS,
    {"help", no_argument, NULL, 'h'},
    {NULL, 0, NULL, 0},
};

static void usage(FILE *out)
{
	fprintf(out,
		"Usage: llmprof diff [OPTIONS] BASE NEW\n"
		"\n"
		"Compare two profiles: folded stacks, speedscope JSON, pprof or perf script\n"
		"output, told apart by content.  Each is normalised to its own total, then every "
		"function's self\n"
		"and total share and every stack's share are compared.  A share regressed\n"
		"when it grew by more than the threshold and by more than sampling noise\n"
		"explains (a two-proportion z-test on the sample counts, Holm-corrected over\n"
		"every share compared).  Exit status: 0 when no share regressed, 1 when one\n"
		"did, 2 on any error.\n"
		"\n"
		"Options:\n"
		"  -f, --format FORMAT  text (default), json, markdown, folded (lines of\n"
		"                       \"stack BASE NEW\" for a differential flame graph) or\n"
		"                       svg (that flame graph: red grew, blue shrank)\n"
		"  -o, --output FILE    write to FILE instead of standard output\n"
		"      --threshold PCT  percentage points a share may grow by (default 1)\n"
		"      --min-share PCT  ignore shares under PCT percent in both profiles\n"
		"                       (default 0)\n"
		"      --confidence PCT confidence of the noise test, over 50 and under 100\n"
		"                       (default 99)\n"
		"      --top N          rows per table in text and markdown; regressions are\n"
		"                       always listed (default 10, 0 for all)\n"
		"      --unit UNIT      what the numbers of folded input count: samples\n"
		"                       (default), us or ns (stackcollapse-perf.pl of a\n"
		"                       profile weighted by period)\n" PROFILE_READ_HELP
		"  -h, --help           show this help and exit\n");
}

static int usage_error(const char *fmt, const char *arg)
{
	return command_usage_error("diff", fmt, arg);
}

/* What the command line asks for. */
struct diff_env {
	struct diff_options options;
	struct profile_read_options read_options;
	struct diff_labels labels;
	enum text_format format;
	enum profile_unit folded_unit;
	const char *output_path;
};

/* Parses the options and the two profiles' names into env: DIFF_RUN to go
 * on, or the status to exit with. */
#define DIFF_RUN (-1)
static int parse_diff_options(int argc, char **argv, struct diff_env *env)
{
	long top;
	int c;

	optind = 1;
	opterr = 0;
	while ((c = getopt_long(argc, argv, ":f:o:h", long_options, NULL)) != -1) {
		switch (c) {
		case 'f':
			if (text_format__parse(optarg, &env->format))
				return usage_error("unknown format '%s' (expected text, json, "
						   "markdown, folded or svg)",
						   optarg);
			break;
		case 'o':
			env->output_path = optarg;
			break;
		case OPT_THRESHOLD:
			if (parse_percent(optarg, &env->options.threshold))
				return usage_error("--threshold: '%s' is not a number from 0 "
						   "to 100",
						   optarg);
			break;
		case OPT_MIN_SHARE:
			if (parse_percent(optarg, &env->options.min_share))
				return usage_error("--min-share: '%s' is not a number from 0 "
						   "to 100",
						   optarg);
			break;
		case OPT_CONFIDENCE:
			if (parse_percent(optarg, &env->options.confidence) ||
			    !(env->options.confidence > 50 && env->options.confidence < 100))
				return usage_error("--confidence: '%s' is not a percentage over 50 "
						   "and under 100",
						   optarg);
			break;
		case OPT_TOP:
			if (parse_long(optarg, 0, 1000000, &top))
				return usage_error("--top: '%s' is not a whole number from 0 to "
						   "1000000",
						   optarg);
			env->labels.top = top;
			break;
		case OPT_UNIT:
			if (profile_input__parse_unit(optarg, &env->folded_unit))
				return usage_error("--unit: unknown unit '%s' (expected samples, "
						   "us or ns)",
						   optarg);
			break;
		default:
			if (profile_input__read_option(c, optarg, &env->read_options))
				break;
			return profile_input__other_option("diff", c, argv, usage);
		}
	}
	if (argc - optind != 2)
		return usage_error("%s", "expected two profiles, BASE and NEW");
	if (!strcmp(argv[optind], "-") && !strcmp(argv[optind + 1], "-"))
		return usage_error("%s", "only one of BASE and NEW can be standard input");
	return DIFF_RUN;
}

/* Reads one profile and folds it into the diff as side, then frees it:
 * one profile in memory at a time.  0, or nonzero once reported. */
static int diff_add_profile(struct profile_diff *diff, enum diff_side side, const char *path,
			    const char *name, const struct diff_env *env,
			    enum profile_format *format)
{
	struct profile *profile = NULL;
	int err;

	if (profile_input__load(path, &env->read_options, &profile, format)) {
		profile__free(profile);
		return -EINVAL;
	}
	profile_input__set_unit(profile, *format, env->folded_unit);
	if (!profile__total_weight(profile))
		status__warn("%s has no samples", name);
	err = profile_diff__add(diff, side, profile);
	profile__free(profile);
	if (err)
		status__error("cannot compare the profiles: %s", strerror(-err));
	return err;
}

/* The text table ends with the verdict; other formats are for machines
 * and reviewers, so the log gets it on stderr. */
static void log_verdict(const struct profile_diff *diff, const struct diff_env *env,
			size_t regressions)
{
	const char *noise =
	    diff->significance == SIGNIFICANCE_TESTED ? " beyond sampling noise" : "";

	if (env->format == TEXT_FORMAT_TEXT && !env->output_path)
		return;
	if (regressions)
		status__info("regression: %zu share%s grew by more than %.2f points%s", regressions,
			     regressions == 1 ? "" : "s", env->options.threshold, noise);
	else
		status__info("no share grew by more than %.2f points%s", env->options.threshold,
			     noise);
}

int do_diff(int argc, char **argv)
{
	struct diff_env env = {
	    .options = {.threshold = 1.0, .min_share = 0.0, .confidence = 99.0},
	    .labels = {.top = 10},
	    .format = TEXT_FORMAT_TEXT,
	    .folded_unit = UNIT_SAMPLES,
	};
	enum profile_format base_format, new_format;
	struct output_file output = {0};
	struct profile_diff *diff = NULL;
	const char *output_path;
	size_t regressions;
	int err, status = EXIT_DIFF_ERROR;

	status = parse_diff_options(argc, argv, &env);
	if (status != DIFF_RUN)
		return status;
	status = EXIT_DIFF_ERROR;
	output_path = env.output_path;
	err = output_file__open(&output, output_path);
	if (err) {
		status__error("cannot create %s: %s", output_path, strerror(-err));
		return EXIT_DIFF_ERROR;
	}
	env.labels.base_name = profile_input__display_name(argv[optind]);
	env.labels.new_name = profile_input__display_name(argv[optind + 1]);
	diff = profile_diff__new(&env.options);
	if (!diff) {
		status__error("cannot compare the profiles: %s", strerror(ENOMEM));
		goto cleanup;
	}
	if (diff_add_profile(diff, DIFF_BASE, argv[optind], env.labels.base_name, &env,
			     &base_format) ||
	    diff_add_profile(diff, DIFF_NEW, argv[optind + 1], env.labels.new_name, &env,
			     &new_format))
		goto cleanup;
	err = profile_diff__finish(diff);
	if (err) {
		status__error("cannot compare the profiles: %s", strerror(-err));
		goto cleanup;
	}
	env.labels.base_format = profile_format__name(base_format);
	env.labels.new_format = profile_format__name(new_format);
	err = profile_diff__write(diff, env.format, &env.labels, output.stream);
	err = output_file__commit(&output, err);
	if (err) {
		status__error("cannot write %s: %s", output_path ? output_path : "standard output",
			      strerror(-err));
		goto cleanup;
	}
	regressions = profile_diff__regressions(diff);
	log_verdict(diff, &env, regressions);
	status = regressions ? EXIT_REGRESSION : EXIT_OK;
cleanup:
	output_file__abort(&output);
	profile_diff__free(diff);
	return status;
}
