#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# An unprivileged user samples its own processes' CPU stacks through a copy
# of llmprof with the file capabilities README's Privileges section gives
# (CAP_BPF and CAP_PERFMON): record and attach come out with the known
# 50/30/20 shares; without the capabilities llmprof stops at start naming
# the missing one; the MCP server run through the copy acts as that user.
. "$TESTS_SOURCE/lib/testlib.sh"
need_root
command -v setcap >/dev/null || fail "setcap (libcap2-bin) is missing"
command -v setpriv >/dev/null || fail "setpriv (util-linux) is missing"
findmnt -no OPTIONS -T "$WORK" | grep -qw nosuid &&
	skip "$WORK is on a nosuid file system, where file capabilities do not apply"

user=llmprof-mcp-test
if ! id -u "$user" >/dev/null 2>&1; then
	useradd --system --no-create-home --home-dir /nonexistent --shell /usr/sbin/nologin \
		"$user" || fail "cannot create the user $user"
fi
as_user=(setpriv --reuid="$user" --regid="$user" --init-groups)

chmod 755 "$WORK"
mkdir "$WORK/out"
chown "$user:" "$WORK/out"
install -m 0755 "$LLMPROF" "$WORK/llmprof-plain"
install -m 0755 "$LLMPROF" "$WORK/llmprof-caps"
setcap cap_bpf,cap_perfmon+ep "$WORK/llmprof-caps" || fail "setcap failed"

check() {
	$CHECK shares "$1" --self burn_a=50 --self burn_b=30 --self burn_c=20 \
		--total share_bc=50 --tolerance 4 || fail "shares of $1"
}

# Without capabilities: one line naming the missing one, exit 1.
"${as_user[@]}" "$WORK/llmprof-plain" record -d 1 --no-gpu -o "$WORK/out/none.folded" -- true \
	2>"$WORK/none.err"
[ $? = 1 ] || fail "llmprof with no capabilities did not exit 1"
grep -q "missing CAP_BPF: CPU sampling needs CAP_BPF and CAP_PERFMON" "$WORK/none.err" ||
	fail "the missing capability is not named: $(cat "$WORK/none.err")"

"${as_user[@]}" "$WORK/llmprof-caps" record -F 999 --no-gpu -o "$WORK/out/record.folded" -- \
	"$FIXTURES/ground_truth" 3 >/dev/null 2>"$WORK/record.err" ||
	fail "record as $user failed: $(cat "$WORK/record.err")"
check "$WORK/out/record.folded"

start_bg "${as_user[@]}" "$FIXTURES/ground_truth" 8
sleep 0.5
"${as_user[@]}" "$WORK/llmprof-caps" attach -p "$BG_PID" -d 4 -F 999 --no-gpu \
	-o "$WORK/out/attach.folded" 2>"$WORK/attach.err" ||
	fail "attach as $user failed: $(cat "$WORK/attach.err")"
check "$WORK/out/attach.folded"

# The MCP server through the copy acts as the user who runs it.
cd "$WORK/out" || fail "cd"
# (The request's input stays open until the reply: a client that hangs up
# stops its profile.)
request='{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"profile","arguments":{"command":["id","-u"],"duration":1,"gpu":false,"output":"mcp.folded"}}}'
{
	printf '%s\n' "$request"
	for _ in $(seq 300); do
		grep -q '"id":1' "$WORK/mcp.out" 2>/dev/null && break
		sleep 0.1
	done
} | "${as_user[@]}" "$WORK/llmprof-caps" mcp >"$WORK/mcp.out" 2>"$WORK/mcp.err" ||
	fail "mcp as $user failed: $(cat "$WORK/mcp.err")"
grep -q '"isError":false' "$WORK/mcp.out" || fail "mcp profile: $(cat "$WORK/mcp.out")"
[ "$(cat "$WORK/out/mcp.folded.command.out")" = "$(id -u "$user")" ] ||
	fail "the MCP command ran as uid $(cat "$WORK/out/mcp.folded.command.out")"
echo PASS
