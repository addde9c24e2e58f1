// SPDX-License-Identifier: GPL-2.0
/* llmprof report: placeholder until the command lands. */
#include "cmd.h"
#include "report.h"

int do_report(int argc, char **argv)
{
	report__error("'report' is not available in this build");
	return EXIT_RUNTIME;
}
