#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# Functions without a symbol are named by the start of their FDE: on large
# stripped libraries (libtorch_cpu, libpython), module_symbols' FDE start
# of addresses inside each FDE that binutils' readelf lists is that FDE's.
# Usage: fde_starts.sh TEST_BINARY LIBRARY...
set -euo pipefail
test_binary=$1
shift
command -v readelf >/dev/null || { echo "SKIP: needs readelf (binutils)"; exit 77; }
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
checked=0
for library in "$@"; do
	[ -r "$library" ] || continue
	readelf --debug-dump=frames "$library" 2>/dev/null |
		awk '/ FDE / { split($NF, r, "[=.]+"); print r[2], r[3] }' >"$work/ranges"
	[ -s "$work/ranges" ] || { echo "FAIL: readelf lists no FDE in $library"; exit 1; }
	"$test_binary" --fde "$work/ranges" "$library"
	checked=$((checked + 1))
done
[ $checked -gt 0 ] || { echo "SKIP: none of the libraries is installed"; exit 77; }
echo PASS
