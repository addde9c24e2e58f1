#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# A library without frame pointers, dlopen()ed after attach and then deleted
# and replaced on disk: its CFI still unwinds it, from the file it mapped,
# with the stack copy (auto) and in BPF (ehframe, whose table is built from
# the mapping's own file after the path was replaced).
. "$TESTS_SOURCE/lib/testlib.sh"
need_root

for unwind in auto ehframe; do
	cp "$NOFP_LIBRARY" "$WORK/libdoomed.so"
	start_bg "$FIXTURES/unwind_dlopen" 2.5 "$WORK/libdoomed.so"
	"$LLMPROF" attach -p "$BG_PID" -F 999 --unwind $unwind -o "$WORK/dlopen.folded" \
		2>"$WORK/err" &
	profiler=$!
	# Replace the deleted file with something else: only the mapped one is right.
	for _ in $(seq 50); do
		[ -e "$WORK/libdoomed.so" ] || break
		sleep 0.05
	done
	sleep 0.1
	[ -e "$WORK/libdoomed.so" ] && fail "$unwind: the fixture did not delete its library"
	head -c 65536 /dev/urandom >"$WORK/libdoomed.so"
	wait $profiler || fail "$unwind: attach failed: $(cat "$WORK/err")"
	$CHECK has "$WORK/dlopen.folded" ';_start;.*;main;nofp_middle;fp_leaf ' ||
		fail "$unwind: no whole stack through the dlopen()ed library: $(sort -t' ' -k2 -n "$WORK/dlopen.folded" | tail -3)"
	# Of the samples in the library, nearly all are whole.  Those taken
	# while its table is built (a background thread, after the dlopen is
	# seen; attach holds nothing) are cut short: 2.8-3.1 % on a loaded
	# 2-core machine, hence 5 points.
	grep 'fp_leaf' "$WORK/dlopen.folded" >"$WORK/library.folded"
	$CHECK shares "$WORK/library.folded" --total main=100 --total nofp_middle=100 --tolerance 5 ||
		fail "$unwind: stacks through the dlopen()ed library are cut short"
	echo "$unwind: whole"
	rm -f "$WORK/libdoomed.so"
done
echo PASS
