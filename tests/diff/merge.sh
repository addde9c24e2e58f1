#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# llmprof merge: two profiles sum stack by stack; --label puts each under
# its own root; bad input fails as diff's does.  $1: llmprof, $2: inputs.
set -u
LLMPROF=$1 INPUTS=$2
WORK=$(mktemp -d)
trap 'rm -rf "$WORK"' EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }

# The same file twice: every weight doubles.
"$LLMPROF" merge "$INPUTS/base.folded" "$INPUTS/base.folded" >"$WORK/double.folded" ||
	fail "merge failed"
awk '{ w = $NF; sub(/ [0-9]+$/, ""); print $0, 2 * w }' "$INPUTS/base.folded" | sort >"$WORK/want"
sort "$WORK/double.folded" | diff -u "$WORK/want" - || fail "merge does not sum"
# Labels: each input under its own root, weights as they were.
"$LLMPROF" merge --label host1,host2 "$INPUTS/base.folded" "$INPUTS/new.folded" \
	>"$WORK/labels.folded" || fail "merge --label failed"
{ sed 's/^/[host1];/' "$INPUTS/base.folded"; sed 's/^/[host2];/' "$INPUTS/new.folded"; } |
	sort >"$WORK/want"
sort "$WORK/labels.folded" | diff -u "$WORK/want" - || fail "merge --label"
# Into speedscope, read back the same.
"$LLMPROF" merge -f speedscope -o "$WORK/m.json" "$INPUTS/base.folded" "$INPUTS/base.folded" ||
	fail "merge -f speedscope failed"
"$LLMPROF" convert -f folded "$WORK/m.json" | sort | diff -u <(sort "$WORK/double.folded") - ||
	fail "merge -f speedscope does not read back"
# Bad input: usage errors, and nothing written.
expect() {
	local want=$1
	shift
	"$@" >/dev/null 2>"$WORK/err"
	got=$?
	[ "$got" = "$want" ] || fail "'$*' exited $got, expected $want"
	[ "$(wc -l <"$WORK/err")" = 1 ] || fail "'$*' printed more than one line: $(cat "$WORK/err")"
}
expect 2 "$LLMPROF" merge
expect 2 "$LLMPROF" merge --label a "$INPUTS/base.folded" "$INPUTS/new.folded"
expect 2 "$LLMPROF" merge "$WORK/missing.folded"
printf 'a;b x\n' >"$WORK/bad.folded"
expect 2 "$LLMPROF" merge -o "$WORK/out.folded" "$INPUTS/base.folded" "$WORK/bad.folded"
[ -e "$WORK/out.folded" ] && fail "a failed merge left its output"
expect 2 "$LLMPROF" merge -f nonsense "$INPUTS/base.folded"
echo PASS
