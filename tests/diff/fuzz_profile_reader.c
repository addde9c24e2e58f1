// SPDX-License-Identifier: GPL-2.0
/*
 * libFuzzer target: every input goes through the profile reader (strict and
 * lenient, with and without timelines), and what parses goes on through the
 * writers, the report and the diff, so their assumptions about parsed
 * profiles are fuzzed too.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include "profile/output.h"
#include "profile/profile_diff.h"
#include "profile/profile_reader.h"
#include "profile/profile_report.h"

static FILE *sink;

static void exercise(const struct profile *p)
{
	struct report_options report = {.name = "fuzz", .format = "fuzz", .top = 5};
	struct diff_labels labels = {"base", "new", "folded", "speedscope", 5};
	struct diff_options options = {.threshold = 1, .min_share = 0.5};
	struct profile_diff *diff = NULL;
	struct profile *empty = profile__new();

	folded__write(p, VIEW_ALL, sink);
	speedscope__write(p, VIEW_ALL, sink);
	speedscope__write(p, VIEW_GPU, sink);
	pprof__write(p, VIEW_ALL, sink);
	profile_report__write(p, &report, TEXT_FORMAT_TEXT, sink);
	profile_report__write(p, &report, TEXT_FORMAT_JSON, sink);
	if (!profile_diff__compute(p, p, &options, &diff)) {
		profile_diff__write(diff, TEXT_FORMAT_TEXT, &labels, sink);
		profile_diff__free(diff);
	}
	diff = NULL;
	if (empty && !profile_diff__compute(empty, p, &options, &diff)) {
		profile_diff__write(diff, TEXT_FORMAT_JSON, &labels, sink);
		profile_diff__write(diff, TEXT_FORMAT_MARKDOWN, &labels, sink);
		profile_diff__write(diff, TEXT_FORMAT_FOLDED, &labels, sink);
		profile_diff__free(diff);
	}
	profile__free(empty);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static const struct profile_read_options modes[] = {
	    {.strict = true, .keep_timeline = false},
	    {.strict = false, .keep_timeline = true},
	};

	if (!sink)
		sink = fopen("/dev/null", "w");
	for (size_t i = 0; i < sizeof(modes) / sizeof(modes[0]); i++) {
		struct profile_read_result result;
		struct profile *p = NULL;

		if (profile_reader__read_buffer(data, size, &modes[i], &p, &result))
			continue;
		exercise(p);
		profile__free(p);
	}
	return 0;
}
