#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# C++ exceptions in a program without frame pointers, under --unwind
# ehframe and --unwind dwarf: nearly every sample has main on its stack,
# those inside the throw (libstdc++'s __cxa_throw, libgcc_s's _Unwind_*)
# too.
. "$TESTS_SOURCE/lib/testlib.sh"
need_root

for mode in ehframe dwarf; do
	"$LLMPROF" record --unwind "$mode" -F 999 -o "$WORK/$mode.folded" -- \
		"$FIXTURES/unwind_exceptions" 2 >/dev/null 2>"$WORK/$mode.err" ||
		fail "record --unwind $mode failed: $(cat "$WORK/$mode.err")"
	python3 - "$WORK/$mode.folded" "$mode" <<'PY' || fail "--unwind $mode: stacks cut in the throw"
import re, sys
total = with_main = throw = throw_main = 0
for line in open(sys.argv[1]):
    stack, _, n = line.rstrip("\n").rpartition(" ")
    n = int(n)
    frames = stack.split(";")
    total += n
    has_main = "main" in frames
    with_main += n * has_main
    if any(re.match(r"(_Unwind_|__cxa_throw|uw_)", f) for f in frames):
        throw += n
        throw_main += n * has_main
print("--unwind %s: %d samples, %.1f%% with main; %d in the throw, %.1f%% of them with main" %
      (sys.argv[2], total, 100.0 * with_main / max(total, 1), throw,
       100.0 * throw_main / max(throw, 1)))
sys.exit(total < 500 or with_main < 0.98 * total or throw < 10 or throw_main < 0.95 * throw)
PY
done
echo PASS
