#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# --max-overhead governs off-CPU waits too: perf's pipe ping-pong (two
# threads handing a byte back and forth, 400,000 waits) costs far more than
# 1 % of its CPU in stack captures, so the governor takes the stacks of only
# 1 wait in N and says so; every wait is still timed, so that in a wall
# profile each worker thread's time (on and off the CPU) still adds up to
# its life, which the main thread's (waiting in pthread_join) measures:
# within 20 % (the off-CPU part is exact, thread by thread; the CPU part is
# some eighty samples at the slowed rate: 6-7 % off in three runs); and
# the kept waits' stacks are whole, from the thread's start to the kernel's
# wait.
. "$TESTS_SOURCE/lib/testlib.sh"
need_root
command -v perf >/dev/null || skip "needs perf (perf bench sched pipe)"

"$LLMPROF" record --mode wall -F 999 --off-cpu-min 1 --per-thread --max-overhead 1 -v \
	-o "$WORK/wall.folded" -- perf bench sched pipe -T -l 200000 >/dev/null 2>"$WORK/err" ||
	fail "record --max-overhead of a ping-pong failed: $(cat "$WORK/err")"
grep -q "the stacks of 1 off-CPU wait in [0-9]*)" "$WORK/err" ||
	fail "the governor did not thin the off-CPU waits: $(cat "$WORK/err")"
grep -q "off-CPU: [0-9]* waits (.* s) drawn from, the stacks of [0-9]* (.* s) kept" "$WORK/err" ||
	fail "-v does not say how the thinned waits were scaled: $(cat "$WORK/err")"
grep -E "wait in|drawn from|off-CPU stacks" "$WORK/err"

python3 - "$WORK/wall.folded" <<'PY' || fail "the wall totals of the thinned ping-pong"
import collections, sys

total = collections.Counter()
off_cpu = collections.Counter()
off_cpu_whole = collections.Counter()
workers = set()
for line in open(sys.argv[1]):
    stack, count = line.rsplit(" ", 1)
    frames, count = stack.split(";"), int(count)
    thread = frames[1]
    # A worker's stacks start at clone: pthread's start_thread.
    rooted = "start_thread" in frames[2:4]
    if rooted:
        workers.add(thread)
    total[thread] += count
    if frames[-1].startswith("[off-cpu]"):
        off_cpu[thread] += count
        off_cpu_whole[thread] += count if rooted else 0
main = [t for t in total if t not in workers]
if len(workers) != 2 or len(main) != 1:
    sys.exit(f"expected a main thread and two workers: {dict(total)}")
life = total[main[0]]
for t in sorted(workers):
    print(f"{t}: {total[t] / 1e6:.3f} s in all, {off_cpu[t] / 1e6:.3f} s off the CPU, "
          f"{100.0 * off_cpu_whole[t] / max(off_cpu[t], 1):.1f} % of it whole; "
          f"main thread {life / 1e6:.3f} s")
    if not 0.8 * life <= total[t] <= 1.2 * life:
        sys.exit(f"{t}: {total[t]} us in all, its life is {life} us")
    if off_cpu[t] < 0.2 * life:
        sys.exit(f"{t}: only {off_cpu[t]} us off the CPU")
    if off_cpu_whole[t] < 0.95 * off_cpu[t]:
        sys.exit(f"{t}: {off_cpu[t] - off_cpu_whole[t]} us off the CPU in cut stacks")
PY
echo PASS
