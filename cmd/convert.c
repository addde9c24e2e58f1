// SPDX-License-Identifier: GPL-2.0
/* llmprof convert: placeholder until the command lands. */
#include "cmd.h"
#include "report.h"

int do_convert(int argc, char **argv)
{
	report__error("'convert' is not available in this build");
	return EXIT_RUNTIME;
}
