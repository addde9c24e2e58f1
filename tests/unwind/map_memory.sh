#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# The BPF maps of an attach to a small C program take what it needs, not
# what libtorch would: their memory, as -v reports it and as the kernel
# charges it (the memlock of every map descriptor llmprof holds, in
# /proc/PID/fdinfo), stays under 7 MiB + 320 KiB per possible CPU.  The
# fixed part: a 1 MiB ring, the first 0.5 MiB chunk of unwind rows (its
# files have 31,000 rows) and about 4 MiB of preallocated LRU tables
# (stack ends, Python threads, launch buckets); per CPU, the ring's quarter
# second of samples at 99 Hz (about 160 KiB) and the per-CPU scratch.  A
# rows map sized for the largest target (32 MiB) fails it.
. "$TESTS_SOURCE/lib/testlib.sh"
need_root

start_bg "$FIXTURES/ground_truth" 6
sleep 0.3
"$LLMPROF" attach -v -p "$BG_PID" -d 4 -F 99 -o "$WORK/small.folded" 2>"$WORK/err" &
profiler=$!
# Mid-run, once the tables are built (a loaded machine takes seconds to
# verify the programs): the kernel's own count.
for _ in $(seq 60); do
	grep -q "unwind tables ready" "$WORK/err" && break
	sleep 0.05
done
grep -q "unwind tables ready" "$WORK/err" || fail "no unwind tables after 3 s: $(cat "$WORK/err")"
charged=$(for info in /proc/$profiler/fdinfo/*; do
	awk '/^map_id:/ { id = $2 } /^memlock:/ { bytes = $2 } END { if (id) print id, bytes }' "$info" 2>/dev/null
done | sort -u | awk '{ s += $2 } END { print s + 0 }')
wait $profiler || fail "attach failed: $(cat "$WORK/err")"
kill "$BG_PID" 2>/dev/null
wait "$BG_PID" 2>/dev/null

$CHECK has "$WORK/small.folded" '^ground_truth;.*;main;' || fail "no stack through main"
reported=$(sed -n 's/.*BPF maps \([0-9.]*\) MiB in all.*/\1/p' "$WORK/err")
[ -n "$reported" ] || fail "-v says nothing of the maps' memory: $(cat "$WORK/err")"
possible=$(awk -F'[-,]' '{ n = 0; for (i = 1; i <= NF; i += 2) n += ($(i + 1) == "" ? 1 : $(i + 1) - $i + 1); print n }' \
	/sys/devices/system/cpu/possible)
bound=$(awk -v n="$possible" 'BEGIN { print 7 + n * 320 / 1024 }')
echo "BPF maps: ${reported} MiB reported, $(awk -v b="$charged" 'BEGIN { printf "%.1f", b / 1048576 }') MiB charged by the kernel; bound ${bound} MiB (${possible} possible CPUs)"
awk -v r="$reported" -v b="$bound" 'BEGIN { exit !(r > 0 && r <= b) }' ||
	fail "-v reports ${reported} MiB of BPF maps, over ${bound} MiB"
awk -v c="$charged" -v b="$bound" 'BEGIN { exit !(c > 0 && c <= b * 1048576) }' ||
	fail "the kernel charges ${charged} bytes of BPF maps to llmprof, over ${bound} MiB"
# What -v reports is what the kernel charges (the rows' chunks included).
awk -v r="$reported" -v c="$charged" 'BEGIN { d = r * 1048576 - c; if (d < 0) d = -d; exit !(d <= 0.1 * c) }' ||
	fail "-v reports ${reported} MiB of BPF maps, the kernel charges ${charged} bytes"
echo PASS
