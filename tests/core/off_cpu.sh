#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# Off-CPU and wall-clock profiles of a program whose main thread spends 40 %
# of its wall time burning the CPU and 20 % each in nanosleep, a pipe read
# and a futex wait: --mode wall gives those shares within 3 points, and
# --off-cpu the three waits with the leaves that name them; two threads
# pinned to one CPU are each about half preempted; bad values are usage
# errors; a context-switch storm floods nothing.
. "$TESTS_SOURCE/lib/testlib.sh"
need_root

WAITS='waits;_start;__libc_start_main;__libc_start_call_main;main'

start_bg "$FIXTURES/waits" 6
sleep 0.5
"$LLMPROF" attach -p "$BG_PID" -d 4 -F 999 --mode wall -o "$WORK/wall.folded" \
	2>"$WORK/wall.err" || fail "attach --mode wall failed: $(cat "$WORK/wall.err")"
# Loading is quiet: libbpf's own retries are no message for a user.
! grep '^libbpf' "$WORK/wall.err" || fail "libbpf speaks on stderr"
$CHECK shares "$WORK/wall.folded" --total burn=40 --total sleep_a_while=20 \
	--total wait_pipe=20 --total wait_futex=20 --total main=100 --tolerance 3 ||
	fail "wall-clock shares"
$CHECK has "$WORK/wall.folded" '^waits;.*;sleep_a_while;.*;\[off-cpu\] nanosleep [0-9]+$' ||
	fail "no nanosleep leaf under sleep_a_while"
$CHECK has "$WORK/wall.folded" '^waits;.*;wait_pipe;.*;\[off-cpu\] read pipe [0-9]+$' ||
	fail "no pipe leaf under wait_pipe"
$CHECK has "$WORK/wall.folded" '^waits;.*;wait_futex;.*;\[off-cpu\] futex [0-9]+$' ||
	fail "no futex leaf under wait_futex"
grep -q 'bpf_prog_' "$WORK/wall.folded" && fail "the probe's own frames are on the stacks"
grep -q 'off-CPU' "$WORK/wall.err" || fail "the summary says nothing of off-CPU time: $(cat "$WORK/wall.err")"
wait "$BG_PID"

# Off-CPU alone: the three waits, a third of the blocked time each.
"$LLMPROF" record --off-cpu --no-children -o "$WORK/off.folded" -- "$FIXTURES/waits" 2.5 \
	>"$WORK/off.out" 2>"$WORK/off.err" || fail "record --off-cpu failed: $(cat "$WORK/off.err")"
# Waiting for a CPU (preempted, under burn) depends on the machine's load:
# the three waits share the rest.
grep -v '\[off-cpu\] preempted [0-9]*$' "$WORK/off.folded" >"$WORK/off-blocked.folded"
$CHECK shares "$WORK/off-blocked.folded" --total sleep_a_while=33.3 --total wait_pipe=33.3 \
	--total wait_futex=33.3 --tolerance 3 || fail "off-CPU shares"
grep -q 'do_exit' "$WORK/off.folded" && fail "the exit of the process is counted as a wait"
$CHECK has "$WORK/off.folded" '\[off-cpu\] nanosleep [0-9]+$' || fail "no nanosleep leaf"

# Two CPU-bound threads on one CPU: each waits for the other half the time
# (more if the machine runs other work on CPU 0).
taskset -c 0 "$FIXTURES/waits" 5 spin &
BG_PID=$!
sleep 0.5
"$LLMPROF" attach -p "$BG_PID" -d 3 -F 999 --mode wall --per-thread -o "$WORK/pinned.folded" \
	2>"$WORK/pinned.err" || fail "attach of pinned threads failed: $(cat "$WORK/pinned.err")"
kill "$BG_PID" 2>/dev/null
wait "$BG_PID" 2>/dev/null
python3 - "$WORK/pinned.folded" <<'PY' || fail "preempted share of the pinned threads"
import sys, collections
total = collections.Counter(); preempted = collections.Counter()
for line in open(sys.argv[1]):
    stack, count = line.rsplit(" ", 1)
    frames = stack.split(";")
    thread = frames[1]
    total[thread] += int(count)
    if frames[-1] == "[off-cpu] preempted":
        preempted[thread] += int(count)
spinning = set()
for line in open(sys.argv[1]):
    if ";spin;" in line:
        spinning.add(line.split(";")[1])
workers = sorted(spinning)
if len(workers) != 2:
    sys.exit(f"expected two busy threads, got {dict(total)}")
for t in workers:
    share = 100.0 * preempted[t] / total[t]
    print(f"{t}: {share:.1f}% preempted")
    # Half, or more where other work shares CPU 0.
    if not 40 <= share <= 90:
        sys.exit(f"{t} is {share:.1f}% preempted, expected about 50")
PY

# The findings name the contention on the real profile.
"$LLMPROF" report --findings -f json "$WORK/pinned.folded" |
	python3 -c 'import json,sys; d=json.load(sys.stdin); assert any(f["rule"] == "cpu-oversubscription" for f in d["findings"]), d' ||
	fail "no cpu-oversubscription finding for threads pinned to one CPU"

# A context-switch storm: short waits are counted, not recorded, and no
# record is lost.
if command -v perf >/dev/null; then
	"$LLMPROF" record --off-cpu --off-cpu-min 1000 -o "$WORK/storm.folded" -- \
		perf bench sched pipe -T -l 50000 >/dev/null 2>"$WORK/storm.err" ||
		fail "record of a context-switch storm failed: $(cat "$WORK/storm.err")"
	short=$(sed -n 's/.*waits (\([0-9]*\) shorter.*/\1/p' "$WORK/storm.err")
	lost=$(sed -n 's/.*ms in all; \([0-9]*\) lost).*/\1/p' "$WORK/storm.err")
	[ "${short:-0}" -ge 50000 ] || fail "only ${short:-0} short waits counted: $(cat "$WORK/storm.err")"
	[ "${lost:-1}" = 0 ] || fail "off-CPU records lost in a storm: $(cat "$WORK/storm.err")"
fi

for bad in "--off-cpu-min -1" "--off-cpu-min x" "--mode nonsense" "--mode"; do
	expect_status 2 "$LLMPROF" attach -p $$ $bad -d 1
done
echo PASS
