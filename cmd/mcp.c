// SPDX-License-Identifier: GPL-2.0
/*
 * llmprof mcp: a Model Context Protocol server on stdio, so a coding agent
 * can profile a process and act on the result.  JSON-RPC 2.0, one message
 * per line (the MCP stdio transport).  The server acts for one user (the
 * one sudo started it for, --user, or whoever runs it) and an agent reaches
 * through it no more than that user could: the user's commands and
 * processes, files under the allowed directories.  This file sets that up
 * and reads the requests; mcp_protocol.c answers them.
 */
#include <errno.h>
#include <getopt.h>
#include <grp.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cmd.h"
#include "mcp_private.h"
#include "privilege.h"
#include "profile_input.h"
#include "status.h"

enum {
	OPT_USER = 0x100,
	OPT_ROOT,
	OPT_ALLOW_PID,
	OPT_ANY_PROCESS,
	OPT_ALLOW_ROOT_COMMANDS,
};

static void usage(FILE *out)
{
	fprintf(out,
		"Usage: llmprof mcp [OPTIONS]\n"
		"\n"
		"Serve the Model Context Protocol on standard input and output (JSON-RPC 2.0,\n"
		"one message per line), for coding agents.  Tools: profile (a pid or a\n"
		"command), report, findings and diff (profile files).  The server acts for\n"
		"one user: commands run as that user, only that user's processes are\n"
		"profiled, and files are read and written with that user's rights, under\n"
		"the allowed directories only.  Status goes to standard error.\n"
		"\n"
		"Options:\n"
		"      --user USER            act for USER (a name or a uid; default: the\n"
		"                             user sudo ran us for, else the one running us)\n"
		"      --root DIR             allow files under DIR (repeatable; default: the\n"
		"                             directory the server starts in)\n"
		"      --allow-pid PID        also allow profiling PID, whoever owns it\n"
		"                             (repeatable)\n"
		"      --any-process          allow profiling any process\n"
		"      --allow-root-commands  allow acting for root (started as root with no\n"
		"                             other user to act for)\n"
		"  -h, --help                 show this help and exit\n");
}

/* Whom we act for: --user, the user sudo ran us for, or ourselves. */
static int find_user(struct mcp_server *s, const char *user)
{
	const char *sudo_uid = getenv("SUDO_UID"), *sudo_gid = getenv("SUDO_GID");
	long uid, gid;
	int err;

	if (user) {
		err = run_as__resolve(user, &s->user);
		if (err)
			return command_usage_error("mcp", "invalid user '%s' for --user", user);
	} else if (geteuid() == 0 && sudo_uid && sudo_gid &&
		   !parse_long(sudo_uid, 0, INT_MAX, &uid) &&
		   !parse_long(sudo_gid, 0, INT_MAX, &gid)) {
		err = run_as__resolve_ids(uid, gid, &s->user);
	} else {
		err = run_as__resolve_ids(getuid(), getgid(), &s->user);
	}
	if (err) {
		status__error("mcp: %s", strerror(-err));
		return EXIT_RUNTIME;
	}
	s->switch_ids = geteuid() != s->user.uid;
	if (s->switch_ids && geteuid() != 0) {
		status__error("mcp: acting for %s (uid %u) needs root; run it as that user",
			      s->user.name, (unsigned)s->user.uid);
		return EXIT_USAGE;
	}
	/* Root's own supplementary groups would stay with each switch. */
	if (s->switch_ids && setgroups(0, NULL)) {
		status__error("mcp: cannot clear the supplementary groups: %s", strerror(errno));
		return EXIT_RUNTIME;
	}
	return EXIT_OK;
}

/*
 * One request line into *line (NUL-terminated, *len long).  A line past
 * MCP_MAX_LINE is read to its end and dropped, never held: *len is then
 * SIZE_MAX.  Returns false at the end of input.
 */
static bool read_request(FILE *in, char **line, size_t *cap, size_t *len)
{
	char chunk[65536];
	bool too_long = false, any = false;

	*len = 0;
	while (fgets(chunk, sizeof(chunk), in)) {
		size_t n = strlen(chunk);
		bool end = n && chunk[n - 1] == '\n';

		any = true;
		if (!too_long && *len + n > MCP_MAX_LINE)
			too_long = true;
		if (!too_long) {
			if (*len + n + 1 > *cap) {
				size_t bigger = (*len + n + 1) * 2;
				char *grown = realloc(*line, bigger);

				if (!grown) {
					too_long = true;
				} else {
					*line = grown;
					*cap = bigger;
				}
			}
			if (!too_long) {
				memcpy(*line + *len, chunk, n + 1);
				*len += n;
			}
		}
		if (end)
			break;
	}
	if (too_long)
		*len = SIZE_MAX;
	return any;
}

static void serve(struct mcp_server *s)
{
	char *line = NULL;
	size_t cap = 0, len;

	while (!s->client_gone && read_request(stdin, &line, &cap, &len)) {
		if (len == SIZE_MAX) {
			if (mcp__send_error(s, NULL, -32600, "message too long"))
				break;
			continue;
		}
		while (len && (line[len - 1] == '\n' || line[len - 1] == '\r'))
			line[--len] = '\0';
		if (!len)
			continue;
		if (mcp__handle(s, line, len))
			break;
	}
	free(line);
}

int do_mcp(int argc, char **argv)
{
	static const struct option long_options[] = {
	    {"user", required_argument, NULL, OPT_USER},
	    {"root", required_argument, NULL, OPT_ROOT},
	    {"allow-pid", required_argument, NULL, OPT_ALLOW_PID},
	    {"any-process", no_argument, NULL, OPT_ANY_PROCESS},
	    {"allow-root-commands", no_argument, NULL, OPT_ALLOW_ROOT_COMMANDS},
	    {"help", no_argument, NULL, 'h'},
	    {NULL, 0, NULL, 0},
	};
	static struct mcp_server server;
	struct mcp_server *s = &server;
	const char *user = NULL, *roots[MCP_MAX_ROOTS];
	bool allow_root = false;
	int nr_roots = 0, status = EXIT_OK, c;
	char why[MCP_WHY_SIZE];
	long pid;

	optind = 1;
	opterr = 0;
	while ((c = getopt_long(argc, argv, ":h", long_options, NULL)) != -1) {
		switch (c) {
		case 'h':
			usage(stdout);
			return EXIT_OK;
		case OPT_USER:
			user = optarg;
			break;
		case OPT_ROOT:
			if (nr_roots == MCP_MAX_ROOTS - 1)
				return command_usage_error("mcp", "too many --root, at most %s",
							   "63");
			roots[nr_roots++] = optarg;
			break;
		case OPT_ALLOW_PID:
			if (parse_long(optarg, 1, INT_MAX, &pid))
				return command_usage_error(
				    "mcp", "invalid PID '%s' for --allow-pid", optarg);
			if (s->nr_allowed_pids == MCP_MAX_PIDS)
				return command_usage_error(
				    "mcp", "too many --allow-pid, at most %s", "64");
			s->allowed_pids[s->nr_allowed_pids++] = pid;
			break;
		case OPT_ANY_PROCESS:
			s->any_process = true;
			break;
		case OPT_ALLOW_ROOT_COMMANDS:
			allow_root = true;
			break;
		case ':':
			return command_usage_error("mcp", "option '%s' needs a value",
						   argv[optind - 1]);
		default:
			return command_usage_error("mcp", "unknown option '%s'", argv[optind - 1]);
		}
	}
	if (optind != argc)
		return command_usage_error("mcp", "unexpected argument '%s'", argv[optind]);
	if (!getcwd(s->cwd, sizeof(s->cwd))) {
		status__error("mcp: cannot tell the current directory: %s", strerror(errno));
		return EXIT_RUNTIME;
	}
	status = find_user(s, user);
	if (status)
		goto cleanup;
	if (s->user.uid == 0 && !allow_root) {
		status__error("mcp: would act for root: start it through sudo from the user's "
			      "account, give --user USER, or --allow-root-commands");
		status = EXIT_USAGE;
		goto cleanup;
	}
	if (!nr_roots)
		roots[nr_roots++] = ".";
	for (int i = 0; i < nr_roots; i++) {
		if (mcp_access__add_root(s, roots[i], why)) {
			status__error("mcp: invalid --root: %s", why);
			status = EXIT_USAGE;
			goto cleanup;
		}
	}
	privilege__warn_missing();
	status__info("mcp: acting for %s (uid %u), files under %s%s", s->user.name,
		     (unsigned)s->user.uid, s->roots[0].given, nr_roots > 1 ? " and more" : "");
	s->out = stdout;
	s->in_fd = fileno(stdin);
	/* A client that goes away must not kill us mid-reply. */
	signal(SIGPIPE, SIG_IGN);
	serve(s);
cleanup:
	mcp_access__close(s);
	run_as__free(&s->user);
	return status;
}
