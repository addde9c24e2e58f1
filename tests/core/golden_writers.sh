#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# A fixed profile written as folded, speedscope and a Chrome trace, byte for byte.
. "$TESTS_SOURCE/lib/testlib.sh"
golden="$TESTS_SOURCE/core/golden"
for variant in cpu gpu names aggregate; do
	for format in folded speedscope; do
		"$GOLDEN_WRITER" $format $variant >"$WORK/out" || fail "writer failed"
		if [ "${UPDATE_GOLDEN:-}" = 1 ]; then
			cp "$WORK/out" "$golden/$variant.$format"
		fi
		diff -u "$golden/$variant.$format" "$WORK/out" || fail "$variant.$format differs"
	done
done
for variant in cpu gpu wall; do
	"$GOLDEN_WRITER" chrome $variant >"$WORK/out" || fail "chrome writer failed"
	if [ "${UPDATE_GOLDEN:-}" = 1 ]; then
		cp "$WORK/out" "$golden/$variant.trace.json"
	fi
	diff -u "$golden/$variant.trace.json" "$WORK/out" || fail "$variant.trace.json differs"
	python3 "$TESTS_SOURCE/lib/check_chrome_trace.py" "$WORK/out" >/dev/null ||
		fail "$variant.trace.json invalid"
done
$CHECK folded "$golden/cpu.folded" >/dev/null || fail "golden folded invalid"
if [ -f "$SPEEDSCOPE_SCHEMA" ]; then
	for variant in gpu names aggregate; do
		$CHECK speedscope "$golden/$variant.speedscope" --schema "$SPEEDSCOPE_SCHEMA" ||
			fail "$variant.speedscope: schema"
	done
fi
echo PASS
