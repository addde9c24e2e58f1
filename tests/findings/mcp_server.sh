#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# `llmprof mcp` driven by the official MCP SDK client (mcp_client.mjs).
. "$TESTS_SOURCE/lib/testlib.sh"
need_root
command -v node >/dev/null || fail "node is missing (scripts/install-deps.sh installs it)"
"$TESTS_SOURCE/../scripts/fetch-mcp-sdk.sh" "$MCP_SDK" || fail "cannot install the MCP SDK"
start_bg "$FIXTURES/ground_truth" 30
sleep 0.3
node "$TESTS_SOURCE/findings/mcp_client.mjs" "$MCP_SDK" "$LLMPROF" "$BG_PID" \
	"$TESTS_SOURCE/diff/inputs/base.folded" "$TESTS_SOURCE/diff/inputs/new.folded" ||
	fail "MCP client test"
kill -0 "$BG_PID" || fail "the profiled process did not survive"
echo PASS
