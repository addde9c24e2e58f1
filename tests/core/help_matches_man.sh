#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# Every option in a command's --help is in its man page, and the reverse.
. "$TESTS_SOURCE/lib/testlib.sh"

options_of() { grep -oE -- '(^|[ ,[])--[a-z][a-z-]*' | grep -oE -- '--[a-z-]+' | sort -u; }

for cmd in attach record; do
	"$LLMPROF" $cmd --help | options_of >"$WORK/help"
	# The man page's options for this command: all of llmprof.1 lists them.
	sed -e 's/\\-/-/g' -e 's/\\f[BIRP]//g' "$SOURCE_DIR/man/llmprof.1" | options_of >"$WORK/man"
	missing=$(comm -23 "$WORK/help" "$WORK/man")
	[ -z "$missing" ] || fail "$cmd --help options missing from man/llmprof.1: $missing"
done
"$LLMPROF" attach --help | options_of >"$WORK/a"
"$LLMPROF" record --help | options_of >"$WORK/r"
sort -u "$WORK/a" "$WORK/r" >"$WORK/help"
# The options the man page defines: the tag line after each .TP.
sed -n '/^\.SH OPTIONS/,/^\.SH [^O]/p' "$SOURCE_DIR/man/llmprof.1" | awk 'tag { print; tag = 0 } /^\.TP/ { tag = 1 }' |
	sed -e 's/\\-/-/g' -e 's/\\f[BIRP]//g' | options_of >"$WORK/man"
extra=$(comm -13 "$WORK/help" "$WORK/man")
[ -z "$extra" ] || fail "man/llmprof.1 OPTIONS lists options --help does not: $extra"
for section in NAME SYNOPSIS DESCRIPTION OPTIONS EXAMPLES OVERHEAD "EXIT STATUS" "SEE ALSO"; do
	grep -q "^\.SH \"\?$section" "$SOURCE_DIR/man/llmprof.1" || fail "man page lacks $section"
done
echo PASS
