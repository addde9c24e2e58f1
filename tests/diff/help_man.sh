#!/bin/sh
# SPDX-License-Identifier: GPL-2.0
# Checks that a command's --help and its man page name the same options.
# usage: help_man.sh LLMPROF MANDIR COMMAND...
set -u
llmprof=$1 mandir=$2
shift 2
failed=0
help=$(mktemp) man=$(mktemp)
trap 'rm -f "$help" "$man"' EXIT

for command in "$@"; do
	page=$mandir/llmprof-$command.1
	if [ ! -f "$page" ]; then
		echo "FAIL: no man page $page" >&2
		failed=1
		continue
	fi
	# Option lines of the help start with blanks and a dash; the options
	# end where two blanks start the description.
	"$llmprof" "$command" --help | sed -n '/^Options:/,$p' | grep -E '^ +-' |
		sed -E 's/^ +//; s/  .*//' | grep -oE -- '--?[A-Za-z][A-Za-z-]*' | sort -u >"$help"
	# In the man page, the tag line after each .TP of the OPTIONS section.
	sed -n '/^\.SH OPTIONS/,/^\.SH /p' "$page" | sed -n '/^\.TP/{n;p;}' |
		sed -E 's/\\f[BIRP]//g; s/\\-/-/g' | grep -oE -- '(^|[ ,])--?[A-Za-z][A-Za-z-]*' |
		sed -E 's/^[ ,]//' | sort -u >"$man"
	if [ ! -s "$help" ]; then
		echo "FAIL: llmprof $command --help lists no options" >&2
		failed=1
	elif ! diff -u "$help" "$man" >/dev/null; then
		echo "FAIL: llmprof $command: --help (-) and $page (+) differ:" >&2
		diff -u "$help" "$man" | tail -n +3 >&2
		failed=1
	else
		echo "llmprof $command: $(tr '\n' ' ' <"$help")"
	fi
done
exit $failed
