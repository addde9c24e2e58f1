/* SPDX-License-Identifier: GPL-2.0 */
/* The subcommands of the llmprof front end, one file each. */
#ifndef LLMPROF_CMD_H
#define LLMPROF_CMD_H

/* Exit statuses of every command. */
enum {
	EXIT_OK = 0,
	EXIT_RUNTIME = 1,
	EXIT_USAGE = 2,
};

/* Each returns an exit status; argv[0] is the subcommand's name. */
int do_attach(int argc, char **argv);
int do_record(int argc, char **argv);
int do_diff(int argc, char **argv);
int do_convert(int argc, char **argv);
int do_report(int argc, char **argv);
int do_merge(int argc, char **argv);
int do_mcp(int argc, char **argv);

/* Parses a whole decimal number in [min, max]; returns 0 or -EINVAL. */
int parse_long(const char *text, long min, long max, long *value);
/* The longest duration a command accepts: a year. */
#define MAX_DURATION_S 31536000
/* Parses a positive decimal number of seconds (fractions allowed), at most
 * MAX_DURATION_S. */
int parse_seconds(const char *text, double *value);

/* Flushes stdout and turns a write error into an error message; returns the
 * exit status to use. */
int finish_stdout(int status);

#endif /* LLMPROF_CMD_H */
