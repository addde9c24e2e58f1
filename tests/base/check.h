/* SPDX-License-Identifier: GPL-2.0 */
/* CHECK() for the base's unit tests: a failure is counted and said. */
#ifndef LLMPROF_TESTS_BASE_CHECK_H
#define LLMPROF_TESTS_BASE_CHECK_H

#include <stdio.h>

static int failures;

#define CHECK(cond, ...)                                                                           \
	do {                                                                                       \
		if (!(cond)) {                                                                     \
			fprintf(stderr, "FAIL %s:%d: ", __FILE__, __LINE__);                       \
			fprintf(stderr, __VA_ARGS__);                                              \
			fputc('\n', stderr);                                                       \
			failures++;                                                                \
		}                                                                                  \
	} while (0)

#endif
