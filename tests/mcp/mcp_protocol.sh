#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# llmprof mcp's protocol under malformed, huge, deeply nested and mistyped
# messages, unknown methods and calls sent without waiting, and a client
# that hangs up mid-profile: the profiled process goes on and the profile's
# BPF programs are gone (mcp_protocol.mjs).
. "$TESTS_SOURCE/lib/testlib.sh"
need_root
command -v node >/dev/null || fail "node is missing (scripts/install-deps.sh installs it)"
command -v bpftool >/dev/null || fail "bpftool is missing"
cp "$TESTS_SOURCE/diff/inputs/base.folded" "$WORK/"
start_bg "$FIXTURES/ground_truth" 60
sleep 0.3
cd "$WORK" || fail "cd $WORK"
node "$TESTS_SOURCE/mcp/mcp_protocol.mjs" "$LLMPROF" "$WORK" "$BG_PID" || fail "MCP protocol test"
kill -0 "$BG_PID" || fail "the profiled process did not survive its client hanging up"
echo PASS
