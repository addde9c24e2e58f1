/* SPDX-License-Identifier: GPL-2.0 */
/* EXPECT() for the C unit tests: a failed expectation is said with its
 * place and text, and counted in failures, which main() returns. */
#ifndef LLMPROF_TESTS_LIB_EXPECT_H
#define LLMPROF_TESTS_LIB_EXPECT_H

#include <stdio.h>

static int failures;

#define EXPECT(cond)                                                                               \
	do {                                                                                       \
		if (!(cond)) {                                                                     \
			fprintf(stderr, "%s:%d: expected %s\n", __FILE__, __LINE__, #cond);        \
			failures++;                                                                \
		}                                                                                  \
	} while (0)

#endif
