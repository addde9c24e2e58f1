#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# Whole jobs: record follows the processes a command starts; attach -C
# catches a child forked after attach; -p takes several processes; ranks
# are named and written one file each with -o '%r', and report --by-process
# names the straggler (rank 2 does twice the work of each step, 60 steps:
# enough that the ranks' equal start-ups, which a loaded machine slows, do
# not hide it); a hundred 20 ms children are caught.
. "$TESTS_SOURCE/lib/testlib.sh"
need_root

roots() { # FILE: "ROOT WEIGHT" per root frame
	awk '{ n = split($0, f, ";"); w = $NF; sub(/ [0-9]+$/, "", f[1]); t[f[1]] += w }
	     END { for (r in t) print r, t[r] }' "$1" | sort
}

# Two CPU-bound children of a shell: both there, about half each.
"$LLMPROF" record -F 499 --per-process -o "$WORK/two.folded" -- \
	sh -c "'$FIXTURES/ground_truth' 2 & '$FIXTURES/ground_truth' 2; wait" \
	>/dev/null 2>"$WORK/two.err" || fail "record of a shell failed: $(cat "$WORK/two.err")"
roots "$WORK/two.folded" >"$WORK/two.roots"
python3 - "$WORK/two.roots" <<'PY' || fail "the two children: $(cat "$WORK/two.roots")"
import sys
rows = [l.rsplit(" ", 1) for l in open(sys.argv[1])]
kids = [(r, int(w)) for r, w in rows if r.startswith("ground_truth [")]
total = sum(int(w) for _, w in rows)
if len(kids) != 2:
    sys.exit(f"expected two ground_truth processes, got {rows}")
for r, w in kids:
    share = 100.0 * w / total
    print(f"{r}: {share:.1f}%")
    if not 40 <= share <= 60:
        sys.exit(f"{r} has {share:.1f}% of the samples, expected about 50")
PY
grep -q '2 child processes joined by fork\|[0-9]* processes sampled' "$WORK/two.err" ||
	fail "the summary does not count the processes: $(cat "$WORK/two.err")"
# --no-children: the shell alone.
"$LLMPROF" record -F 499 --no-children -o "$WORK/alone.folded" -- \
	sh -c "'$FIXTURES/ground_truth' 1; true" >/dev/null 2>&1 || fail "record --no-children failed"
grep -q burn_a "$WORK/alone.folded" && fail "--no-children followed the child"

# attach -C: a child forked a second after attach is caught.
start_bg sh -c "sleep 1; '$FIXTURES/ground_truth' 2.5; true"
PARENT=$BG_PID
"$LLMPROF" attach -p "$PARENT" -C -d 3 -F 499 -o "$WORK/later.folded" 2>"$WORK/later.err" ||
	fail "attach -C failed: $(cat "$WORK/later.err")"
$CHECK shares "$WORK/later.folded" --self burn_a=50 --self burn_b=30 --self burn_c=20 \
	--tolerance 4 || fail "shares of the child forked after attach"

# -p A,B: two processes at once.
start_bg "$FIXTURES/ground_truth" 3
A=$BG_PID
start_bg "$FIXTURES/ground_truth" 3
B=$BG_PID
sleep 0.3
"$LLMPROF" attach -p "$A,$B" --per-process -d 1.5 -F 499 -o "$WORK/pair.folded" \
	2>"$WORK/pair.err" || fail "attach -p A,B failed: $(cat "$WORK/pair.err")"
roots "$WORK/pair.folded" >"$WORK/pair.roots"
grep -q "^ground_truth \[$A\] " "$WORK/pair.roots" && grep -q "^ground_truth \[$B\] " "$WORK/pair.roots" ||
	fail "attach -p A,B lacks a process: $(cat "$WORK/pair.roots")"
for bad in "1,x" "1,,2" "," "0"; do
	expect_status 2 "$LLMPROF" attach -p "$bad" -d 1
done
expect_status 2 "$LLMPROF" attach -p $$ -o 'out-%q.folded' -d 1

# Ranks: one file per rank, and the straggler named.
"$LLMPROF" record -F 499 -o "$WORK/r-%r.folded" -- sh "$TESTS_SOURCE/core/fixtures/launcher.sh" \
	/usr/bin/python3 "$TESTS_SOURCE/core/fixtures/rank.py" 60 >/dev/null 2>"$WORK/ranks.err" ||
	fail "record of the launcher failed: $(cat "$WORK/ranks.err")"
for r in 0 1 2; do
	[ -s "$WORK/r-$r.folded" ] || fail "no profile for rank $r: $(ls "$WORK")"
	grep -q "^python3 \[rank $r\];" "$WORK/r-$r.folded" || fail "rank $r's root is not named"
	grep -vq "^python3 \[rank $r\];" "$WORK/r-$r.folded" && fail "rank $r's file has other processes"
done
"$LLMPROF" report --by-process "$WORK"/r-[012].folded >"$WORK/by-process.txt" ||
	fail "report --by-process failed"
grep -q '^straggler: python3 \[rank 2\]' "$WORK/by-process.txt" ||
	fail "rank 2 is not the straggler: $(cat "$WORK/by-process.txt")"
"$LLMPROF" report --by-process -f json "$WORK"/r-[012].folded |
	python3 -c 'import json,sys; d=json.load(sys.stdin); assert d["straggler"] == "python3 [rank 2]", d' ||
	fail "report --by-process json"

# A hundred children of 20 ms each: most caught, nothing crashes.
"$LLMPROF" record -F 999 -o "$WORK/short.folded" -- \
	sh -c 'for i in $(seq 100); do timeout 0.02 sh -c "while :; do :; done"; done' \
	>/dev/null 2>"$WORK/short.err" || fail "record of short children failed: $(cat "$WORK/short.err")"
n=$(sed -n 's/.* \([0-9]*\) processes sampled.*/\1/p' "$WORK/short.err")
[ "${n:-0}" -ge 150 ] || fail "only ${n:-0} of 201 short-lived processes were sampled: $(cat "$WORK/short.err")"
echo PASS
