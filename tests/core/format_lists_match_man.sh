#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# The formats a man page lists for -f are those the command's --help lists,
# which come from the table of formats (lib/profile/formats.c), and the
# formats llmprof-mcp(1) gives the profile tool are its schema's enum: a
# format added to the table fails here until the man pages name it.
. "$TESTS_SOURCE/lib/testlib.sh"

# The names in a --help's -f entry, up to the next option: notes in
# parentheses, "; default ..." and the joining words dropped.
help_formats() {
	"$LLMPROF" "$@" --help |
		awk '/--format FORMAT/ { on = 1; sub(/.*--format FORMAT */, "") }
		     on && /^ +-/ && !/--format/ { exit }
		     on { print }' |
		tr '\n' ' ' | sed -e 's/([^)]*)//g' -e 's/;.*//' -e 's/,/ /g' -e 's/ or / /g' |
		tr -s ' ' '\n' | grep -v '^$' | sort
}

# The names a man page's -f entry sets in bold as a word of their own
# (".B svg", ".BR pprof ,"), up to the next entry: references
# (".BR llmprof (1)") and quoted section names are not names.
man_formats() {
	awk 'index($0, "\\fB\\-f\\fR, \\fB\\-\\-format") == 1 ||
	     index($0, ".BR \\-f \", \" \\-\\-format") == 1 { on = 1; next }
	     on && /^\.(TP|SH|PP)/ { exit }
	     on && /^\.BR? [a-z][a-z-]*( ,)?$/ { print $2 }' "$SOURCE_DIR/man/$1" | sort
}

compare() {
	diff -u "$WORK/man" "$WORK/help" >"$WORK/diff" ||
		fail "$1 lists other formats than $2 (- man, + help):
$(cat "$WORK/diff")"
	[ -s "$WORK/help" ] || fail "no formats found in $2"
}

for page in "llmprof.1 record" "llmprof.1 attach" "llmprof-convert.1 convert" \
	"llmprof-merge.1 merge"; do
	set -- $page
	man_formats "$1" >"$WORK/man"
	help_formats "$2" >"$WORK/help"
	compare "man/$1" "llmprof $2 --help"
done

# llmprof-mcp(1): ".B format" then ".RB ( folded " or " speedscope ),".
awk '/^\.B format$/ { getline; print; exit }' "$SOURCE_DIR/man/llmprof-mcp.1" |
	sed -e 's/^\.RB//' -e 's/"[^"]*"/ /g' -e 's/[(),]/ /g' | tr -s ' ' '\n' |
	grep -v '^$' | sort >"$WORK/man"
as_root=()
[ "$(id -u)" = 0 ] && as_root=(--allow-root-commands)
printf '%s\n' \
	'{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"test","version":"1"}}}' \
	'{"jsonrpc":"2.0","method":"notifications/initialized"}' \
	'{"jsonrpc":"2.0","id":2,"method":"tools/list"}' |
	timeout 20 "$LLMPROF" mcp --root "$WORK" "${as_root[@]}" >"$WORK/replies" ||
	fail "llmprof mcp did not answer tools/list"
python3 -c '
import json, sys
for line in open(sys.argv[1]):
    reply = json.loads(line)
    if reply.get("id") == 2:
        for tool in reply["result"]["tools"]:
            if tool["name"] == "profile":
                print("\n".join(sorted(tool["inputSchema"]["properties"]["format"]["enum"])))
' "$WORK/replies" >"$WORK/help"
compare man/llmprof-mcp.1 "the profile tool's schema"
echo PASS
