// SPDX-License-Identifier: GPL-2.0
/*
 * llmprof merge: sums profiles (any input diff reads) into one, each
 * optionally under a label of its own, so that the per-node profiles of a
 * multi-node job become one flame graph; profiles of several values (sample
 * types, views) keep them all, value by value.
 */
#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cmd.h"
#include "profile/output.h"
#include "profile_input.h"
#include "status.h"

#define MAX_LABEL 256
/* Values per stack an input may hold (pprof's sample types, views). */
#define PROFILE_MAX_VALUES 64

enum {
	OPT_LABEL = 256,
	OPT_INVERTED,
};

/* The most --label entries read. */
#define MAX_INPUTS 4096

static const struct option long_options[] = {
    {"format", required_argument, NULL, 'f'},
    {"output", required_argument, NULL, 'o'},
    {"label", required_argument, NULL, OPT_LABEL},
    {"inverted", no_argument, NULL, OPT_INVERTED},
    PROFILE_READ_LONG_OPTIONS,
    {"help", no_argument, NULL, 'h'},
    {NULL, 0, NULL, 0},
};

/* A merged profile has no timeline to write. */
#define MERGE_FORMATS FORMAT_WRITABLE, FORMAT_NEEDS_TIMELINE

static void usage(FILE *out)
{
	char formats[256];

	format__list(formats, sizeof(formats), MERGE_FORMATS, " or ", "", true, FORMAT_FOLDED);
	fprintf(out, "Usage: llmprof merge [OPTIONS] INPUT...\n"
		     "\n"
		     "Sum profiles (folded stacks, speedscope JSON, pprof or perf script, told\n"
		     "apart by content) into one; they must weigh in the same unit, or hold the\n"
		     "same values (pprof's sample types, views), each summed with its own.\n"
		     "\n"
		     "Options:\n");
	help_option(out, "  -f, --format FORMAT  ", formats);
	fprintf(out,
		"      --inverted       svg: an icicle graph, roots at the top\n"
		"  -o, --output FILE    write to FILE instead of standard output; the file\n"
		"                       appears whole or not at all\n"
		"      --label L1,L2,.. put each INPUT's stacks under a root frame of its own\n"
		"                       label ([L1], ...), one label per INPUT\n" PROFILE_READ_HELP
		"  -h, --help           show this help and exit\n");
}

static int usage_error(const char *fmt, const char *arg)
{
	return command_usage_error("merge", fmt, arg);
}

/* Whether stack i of p holds some of any value. */
static bool stack_has_values(const struct profile *p, uint32_t i)
{
	for (size_t v = 0; v < profile__nr_values(p); v++)
		if (profile__stack_value(p, i, v))
			return true;
	return false;
}

/* Adds every stack of from, each of its values to into's value map[v],
 * under the label frame when there is one. */
static int add_profile(struct profile *into, const struct profile *from, const size_t *map,
		       const char *label)
{
	uint32_t *frames = NULL;
	size_t cap = 0;
	int64_t label_frame = -1;
	int err = 0;

	if (label) {
		char name[MAX_LABEL + 3];

		snprintf(name, sizeof(name), "[%s]", label);
		label_frame = profile__intern_frame(into, name, NULL, 0, FRAME_PROCESS);
		if (label_frame < 0)
			return label_frame;
	}
	for (size_t i = 0; i < from->nr_stacks && !err; i++) {
		const struct stack *s = &from->stacks[i];
		size_t n = 0;
		int64_t stack;

		if (!s->depth || !stack_has_values(from, i))
			continue;
		if (s->depth + 1 > cap) {
			uint32_t *grown = realloc(frames, (s->depth + 1) * sizeof(*frames));

			if (!grown) {
				err = -ENOMEM;
				break;
			}
			frames = grown;
			cap = s->depth + 1;
		}
		if (label_frame >= 0)
			frames[n++] = label_frame;
		for (uint32_t k = 0; k < s->depth; k++) {
			const struct frame *f = &from->frames[s->frames[k]];
			int64_t id =
			    profile__intern_frame(into, f->name, f->file, f->line, f->kind);

			if (id < 0) {
				err = id;
				break;
			}
			frames[n++] = id;
		}
		if (err)
			break;
		stack = profile__intern_stack(into, frames, n);
		if (stack < 0) {
			err = stack;
			break;
		}
		for (size_t v = 0; v < profile__nr_values(from) && !err; v++)
			err = profile__add_stack_value(into, stack, map[v],
						       profile__stack_value(from, i, v));
	}
	into->samples_taken += from->samples_taken;
	free(frames);
	return err;
}

/* Splits --label's text (a copy, owned by *text_out) into one label per
 * input: EXIT_OK, or the status to exit with. */
static int split_labels(const char *text, int nr_inputs, char **text_out, char **labels)
{
	char *save = NULL, *copy = strdup(text);
	size_t nr = 0;

	*text_out = copy;
	if (!copy) {
		status__error("out of memory");
		return EXIT_RUNTIME;
	}
	for (char *t = strtok_r(copy, ",", &save); t && nr < MAX_INPUTS;
	     t = strtok_r(NULL, ",", &save))
		labels[nr++] = t;
	if (nr != (size_t)nr_inputs) {
		char count[32];

		snprintf(count, sizeof(count), "%d", nr_inputs);
		return usage_error("--label needs one label per INPUT (%s)", count);
	}
	for (size_t i = 0; i < nr; i++)
		if (strlen(labels[i]) > MAX_LABEL)
			return usage_error("label '%s' is too long", labels[i]);
	return EXIT_OK;
}

/* Checks that one (read from path) can join merged (whose first input was
 * first, from which merged took its values when one is that input):
 * EXIT_OK with map giving each of one's values its place in merged, or the
 * status to exit with. */
static int check_input(struct profile *merged, const struct profile *one, const char *path,
		       const char *first, bool is_first, size_t *map)
{
	int err;

	if (profile__nr_values(one) > PROFILE_MAX_VALUES) {
		status__error("%s holds more than %d values: cannot merge it",
			      profile_input__display_name(path), PROFILE_MAX_VALUES);
		return EXIT_USAGE;
	}
	if (is_first) {
		merged->unit = one->unit;
		merged->frequency = one->frequency;
		merged->python_pyspy_form = one->python_pyspy_form;
		err = profile__copy_value_types(merged, one);
		if (err) {
			status__error("cannot merge %s: %s", path, strerror(-err));
			return EXIT_RUNTIME;
		}
	}
	/* As pprof -proto merges profiles: the same sample types, each summed
	 * with its own (here in any order). */
	if ((profile__nr_values(one) > 1 || profile__nr_values(merged) > 1) &&
	    profile__value_map(merged, one, map)) {
		char have[256], want[256];

		profile__value_names(one, have, sizeof(have));
		profile__value_names(merged, want, sizeof(want));
		status__error("%s holds other values (%s) than %s (%s): cannot merge them",
			      profile_input__display_name(path), have,
			      profile_input__display_name(first), want);
		return EXIT_USAGE;
	}
	if (profile__nr_values(one) == 1 && one->unit != merged->unit) {
		status__error("%s weighs in other units than %s: cannot merge them",
			      profile_input__display_name(path),
			      profile_input__display_name(first));
		return EXIT_USAGE;
	}
	return EXIT_OK;
}

/* Reads the input at paths[i] and adds it to merged: EXIT_OK or the status
 * to exit with. */
static int merge_input(struct profile *merged, char **paths, int i,
		       const struct profile_read_options *read_options, const char *label)
{
	struct profile *one = NULL;
	enum profile_format input_format;
	size_t map[PROFILE_MAX_VALUES] = {0};
	int status, err;

	status = profile_input__load(paths[i], read_options, &one, &input_format);
	if (status)
		return status;
	status = check_input(merged, one, paths[i], paths[0], i == 0, map);
	if (status)
		goto out;
	if (one->frequency != merged->frequency)
		merged->frequency = 0;
	merged->python_pyspy_form &= one->python_pyspy_form;
	err = add_profile(merged, one, map, label);
	if (err) {
		status__error("cannot merge %s: %s", paths[i], strerror(-err));
		status = EXIT_RUNTIME;
	}
out:
	profile__free(one);
	return status;
}

int do_merge(int argc, char **argv)
{
	struct profile_read_options read_options = {0};
	struct output_file output = {0};
	enum profile_format format = FORMAT_FOLDED;
	const char *output_path = NULL, *labels_arg = NULL;
	char *labels_text = NULL, *labels[MAX_INPUTS];
	bool inverted = false;
	struct profile *merged = NULL;
	int c, err, status = EXIT_OK;

	optind = 1;
	opterr = 0;
	while ((c = getopt_long(argc, argv, ":f:o:h", long_options, NULL)) != -1) {
		switch (c) {
		case 'f':
			if (!format__parse(optarg, MERGE_FORMATS, &format))
				break;
			if (!format__parse(optarg, FORMAT_WRITABLE, 0, &format))
				return usage_error("-f %s needs a timeline, and a merged profile "
						   "has none",
						   optarg);
			return profile_input__unknown_format("merge", optarg, MERGE_FORMATS);
		case 'o':
			output_path = optarg;
			break;
		case OPT_LABEL:
			labels_arg = optarg;
			break;
		case OPT_INVERTED:
			inverted = true;
			break;
		default:
			if (profile_input__read_option(c, optarg, &read_options))
				break;
			return profile_input__other_option("merge", c, argv, usage);
		}
	}
	if (optind >= argc)
		return usage_error("%s", "expected one or more INPUTs");
	if (inverted && format != FORMAT_SVG)
		return usage_error("%s", "--inverted is for -f svg");
	if (inverted)
		format = FORMAT_SVG_INVERTED;
	if (labels_arg) {
		status = split_labels(labels_arg, argc - optind, &labels_text, labels);
		if (status) {
			free(labels_text);
			return status;
		}
	}
	err = output_file__open(&output, output_path);
	if (err) {
		status__error("cannot create %s: %s", output_path, strerror(-err));
		free(labels_text);
		return EXIT_RUNTIME;
	}
	merged = profile__new();
	if (!merged) {
		status__error("out of memory");
		status = EXIT_RUNTIME;
		goto cleanup;
	}
	for (int i = 0; i < argc - optind && !status; i++)
		status = merge_input(merged, argv + optind, i, &read_options,
				     labels_text ? labels[i] : NULL);
	if (status)
		goto cleanup;
	err = output_file__commit(&output, output__write(merged, format, VIEW_ALL, output.stream));
	if (err) {
		status__error("cannot write %s: %s", output_path ? output_path : "standard output",
			      strerror(-err));
		status = EXIT_RUNTIME;
	}
cleanup:
	if (status != EXIT_OK)
		output_file__abort(&output);
	profile__free(merged);
	free(labels_text);
	return status;
}
