// SPDX-License-Identifier: GPL-2.0
/* llmprof diff: placeholder until the command lands. */
#include "cmd.h"
#include "report.h"

int do_diff(int argc, char **argv)
{
	report__error("'diff' is not available in this build");
	return EXIT_RUNTIME;
}
