#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# A signal handler on the stack, without frame pointers, under --unwind
# ehframe: the samples in on_signal() go on through the signal frame to
# the code it interrupted, work() and main.
. "$TESTS_SOURCE/lib/testlib.sh"
need_root

start_bg "$FIXTURES/unwind_signal" 5
sleep 0.3
"$LLMPROF" attach -p "$BG_PID" -d 3 -F 999 --unwind ehframe -o "$WORK/signal.folded" \
	2>"$WORK/err" || fail "attach --unwind ehframe failed: $(cat "$WORK/err")"
python3 - "$WORK/signal.folded" <<'PY' || fail "the handler's stacks stop at the signal frame"
import sys
handler = through = 0
for line in open(sys.argv[1]):
    stack, _, n = line.rstrip("\n").rpartition(" ")
    frames = stack.split(";")
    if "on_signal" not in frames:
        continue
    handler += int(n)
    above = frames[:frames.index("on_signal")]
    if "work" in above and "main" in above:
        through += int(n)
print("%d samples in the handler, %.1f%% of them with work and main above" %
      (handler, 100.0 * through / max(handler, 1)))
sys.exit(handler < 100 or through < 0.95 * handler)
PY
echo PASS
