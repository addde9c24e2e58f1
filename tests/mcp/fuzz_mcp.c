// SPDX-License-Identifier: GPL-2.0
/*
 * libFuzzer over llmprof mcp's message handler: each input is one request
 * line, answered into /dev/null by the protocol, tools and access rules as
 * the server runs them, with an allowed directory of one profile.  The
 * children that would do a tool's work are answered here, so the fuzzer
 * runs no profile and writes no file.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include "mcp_private.h"

static struct mcp_server server;

json_t *mcp_run__profile(struct mcp_server *s, const struct mcp_profile_request *request)
{
	return mcp__text_result(request->pid ? "attached" : "recorded");
}

json_t *mcp_run__report(struct mcp_server *s, enum mcp_report_kind kind, char **argv,
			const int *fds, const char *const *paths, int nr_fds)
{
	return mcp__text_result(kind == MCP_DIFF ? "diffed" : "reported");
}

static void set_up(void)
{
	static char root[] = "/tmp/llmprof-fuzz-mcp.XXXXXX";
	char why[MCP_WHY_SIZE], path[sizeof(root) + 32];
	FILE *profile;

	if (!getcwd(server.cwd, sizeof(server.cwd)) ||
	    run_as__resolve_ids(getuid(), getgid(), &server.user) || !mkdtemp(root))
		abort();
	snprintf(path, sizeof(path), "%s/a.folded", root);
	profile = fopen(path, "w");
	if (!profile || fputs("main;work 3\nmain;idle 1\n", profile) < 0 || fclose(profile))
		abort();
	if (mcp_access__add_root(&server, root, why))
		abort();
	server.out = fopen("/dev/null", "w");
	server.in_fd = -1;
	if (!server.out)
		abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (!server.out)
		set_up();
	mcp__handle(&server, (const char *)data, size);
	return 0;
}
