// SPDX-License-Identifier: GPL-2.0
/* llmprof: the front end; dispatches to one do_<cmd>() per subcommand. */
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cmd.h"
#include "findings/html_page.h"
#include "status.h"

struct command {
	const char *name;
	int (*run)(int argc, char **argv);
	const char *summary;
};

static const struct command commands[] = {
    {"attach", do_attach, "profile a running process"},
    {"record", do_record, "run a command and profile it until it exits"},
    {"diff", do_diff, "compare two profiles and report what grew"},
    {"convert", do_convert,
     "convert a profile between folded, speedscope and pprof, or to a Chrome trace"},
    {"merge", do_merge, "sum profiles into one, each under a label if asked"},
    {"report", do_report, "summarise a profile: top functions, GPU time, findings"},
    {"mcp", do_mcp, "serve the Model Context Protocol on stdio, for coding agents"},
};

static void usage(FILE *out)
{
	fprintf(out, "Usage: llmprof COMMAND [OPTIONS]\n"
		     "       llmprof --version | --help\n\n"
		     "Commands:\n");
	for (size_t i = 0; i < sizeof(commands) / sizeof(commands[0]); i++)
		fprintf(out, "  %-9s %s\n", commands[i].name, commands[i].summary);
	fprintf(out, "\nRun 'llmprof COMMAND --help' for a command's options.\n");
}

int parse_long(const char *text, long min, long max, long *value)
{
	char *end;
	long v;

	errno = 0;
	v = strtol(text, &end, 10);
	if (errno || end == text || *end || v < min || v > max)
		return -EINVAL;
	*value = v;
	return 0;
}

int parse_seconds(const char *text, double *value)
{
	char *end;
	double v;

	errno = 0;
	v = strtod(text, &end);
	if (errno || end == text || *end || !isfinite(v) || v <= 0 || v > MAX_DURATION_S)
		return -EINVAL;
	*value = v;
	return 0;
}

int finish_stdout(int status)
{
	if (fflush(stdout) || ferror(stdout)) {
		status__error("cannot write to standard output: %s", strerror(errno ? errno : EIO));
		return status ? status : EXIT_RUNTIME;
	}
	return status;
}

/*
 * A closed 0, 1 or 2 would be the next descriptor llmprof opens: the profile,
 * a BPF map or a socket would become the recorded command's standard output.
 * Each closed one is held by /dev/null, open for the other direction so that
 * using it fails as a closed one does, and close-on-exec so that the command
 * finds it closed, as it was given.
 */
static void occupy_standard_descriptors(void)
{
	for (int fd = 0; fd <= 2; fd++) {
		int null;

		if (fcntl(fd, F_GETFD) >= 0 || errno != EBADF)
			continue;
		null = open("/dev/null", (fd ? O_RDONLY : O_WRONLY) | O_CLOEXEC);
		/* The lowest free number is fd itself, those below being open. */
		if (null >= 0 && null != fd) {
			dup3(null, fd, O_CLOEXEC);
			close(null);
		}
	}
}

int main(int argc, char **argv)
{
	const char *name;

	occupy_standard_descriptors();
	/* The profile's writers cannot call up into the findings' page. */
	output__html_writer = html_page__write_profile;
	if (argc < 2) {
		usage(stderr);
		return EXIT_USAGE;
	}
	name = argv[1];
	if (!strcmp(name, "-h") || !strcmp(name, "--help") || !strcmp(name, "help")) {
		usage(stdout);
		return finish_stdout(EXIT_OK);
	}
	if (!strcmp(name, "--version") || !strcmp(name, "-V")) {
		printf("llmprof %s\n", LLMPROF_VERSION);
		return finish_stdout(EXIT_OK);
	}
	for (size_t i = 0; i < sizeof(commands) / sizeof(commands[0]); i++)
		if (!strcmp(name, commands[i].name))
			return finish_stdout(commands[i].run(argc - 1, argv + 1));
	status__error("unknown command '%s' (try 'llmprof --help')", name);
	return EXIT_USAGE;
}
