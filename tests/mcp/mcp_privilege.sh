#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# llmprof mcp running as root for an unprivileged user (as sudo would start
# it, and with --user), driven by the official MCP SDK client: each refusal
# with its rule named, and the same calls working on the user's own
# processes and files (mcp_privilege.mjs).
. "$TESTS_SOURCE/lib/testlib.sh"
need_root
command -v node >/dev/null || fail "node is missing (scripts/install-deps.sh installs it)"
command -v setpriv >/dev/null || fail "setpriv (util-linux) is missing"
"$TESTS_SOURCE/../scripts/fetch-mcp-sdk.sh" "$MCP_SDK" || fail "cannot install the MCP SDK"

# A throwaway system account, kept for the next run; nothing else changes.
user=llmprof-mcp-test
if ! id -u "$user" >/dev/null 2>&1; then
	useradd --system --no-create-home --home-dir /nonexistent --shell /usr/sbin/nologin \
		"$user" || fail "cannot create the user $user"
fi
uid=$(id -u "$user") gid=$(id -g "$user")

chmod 755 "$WORK"
project=$WORK/project
mkdir "$project"
cp "$TESTS_SOURCE/diff/inputs/base.folded" "$TESTS_SOURCE/diff/inputs/new.folded" "$project/"
printf 'notes the agent must not lose\n' >"$project/notes.txt"
chown -R "$user:" "$project"
# Root's, in the project: the user may not read it.
printf 'secret;stack 1\n' >"$project/rootonly.folded"
chmod 600 "$project/rootonly.folded"
# Links out of the project: to a file the user may not read, and to one it
# may not write.
ln -s /etc/shadow "$project/shadow.folded"
printf 'outside;stack 1\n' >"$WORK/outside.folded"
ln -s "$WORK/outside.folded" "$project/link.folded"
cp "$WORK/outside.folded" "$WORK/outside.before"

start_bg setpriv --reuid="$uid" --regid="$gid" --init-groups "$FIXTURES/ground_truth" 60
user_pid=$BG_PID
start_bg "$FIXTURES/ground_truth" 60
root_pid=$BG_PID
sleep 0.3

cd "$project" || fail "cd $project"
node "$TESTS_SOURCE/mcp/mcp_privilege.mjs" "$MCP_SDK" "$LLMPROF" "$project" "$user" "$uid" \
	"$gid" "$user_pid" "$root_pid" || fail "MCP privilege test"

cmp -s "$WORK/outside.folded" "$WORK/outside.before" || fail "the file behind a link was written"
grep -q "must not lose" "$project/notes.txt" || fail "a file that is not a profile was overwritten"
kill -0 "$user_pid" && kill -0 "$root_pid" || fail "a profiled process did not survive"

# As root with no user to act for, the server does not start.
env -u SUDO_UID -u SUDO_GID "$LLMPROF" mcp </dev/null 2>"$WORK/err"
[ $? = 2 ] || fail "a root server with no user to act for started"
grep -q "would act for root" "$WORK/err" || fail "the refusal to start: $(cat "$WORK/err")"
echo PASS
