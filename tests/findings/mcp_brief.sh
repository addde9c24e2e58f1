#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# The MCP profile and findings replies, through the official MCP SDK client
# (mcp_brief.mjs), on a C program built here whose time is all in one leaf
# called from three functions for 60, 25 and 15 % of it: the replies name
# the three callers with their shares, within their byte budgets.
. "$TESTS_SOURCE/lib/testlib.sh"
need_root
command -v node >/dev/null || fail "node is missing (scripts/install-deps.sh installs it)"
command -v cc >/dev/null || fail "cc is missing"
"$TESTS_SOURCE/../scripts/fetch-mcp-sdk.sh" "$MCP_SDK" || fail "cannot install the MCP SDK"

cat >"$WORK/callers.c" <<'PROGRAM'
#include <stdint.h>
#include <stdlib.h>
#include <time.h>

static volatile uint64_t sink;

/* The leaf all the time is spent in. */
__attribute__((noinline)) static void spin(uint64_t n)
{
	for (uint64_t i = 0; i < n; i++)
		sink += i;
}

/* Each caller does its share of the leaf's work; the store after the
 * call keeps it from being a tail call, so the caller stays on the stack. */
__attribute__((noinline)) static void caller_a(uint64_t unit)
{
	spin(60 * unit);
	sink++;
}

__attribute__((noinline)) static void caller_b(uint64_t unit)
{
	spin(25 * unit);
	sink++;
}

__attribute__((noinline)) static void caller_c(uint64_t unit)
{
	spin(15 * unit);
	sink++;
}

int main(int argc, char **argv)
{
	double seconds = argc > 1 ? atof(argv[1]) : 3;
	struct timespec now;

	/* Seconds of CPU time, not of the clock: as many samples on a busy
	 * machine as on an idle one. */
	do {
		caller_a(20000);
		caller_b(20000);
		caller_c(20000);
		clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &now);
	} while (now.tv_sec + now.tv_nsec / 1e9 < seconds);
	return 0;
}
PROGRAM
cc -O1 -g -fno-omit-frame-pointer -fno-inline -o "$WORK/callers" "$WORK/callers.c" ||
	fail "cannot build the test program"
node "$TESTS_SOURCE/findings/mcp_brief.mjs" "$MCP_SDK" "$LLMPROF" "$WORK/callers" "$WORK" ||
	fail "MCP brief test"
echo PASS
