#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# Symbolization: C++ names demangled, inlined functions as _[i] frames, JIT
# frames from the perf map as _[j], a deleted executable still symbolized,
# and an address without a symbol kept as [module+0xOFFSET].
. "$TESTS_SOURCE/lib/testlib.sh"
need_root

"$LLMPROF" record -F 499 -o "$WORK/cxx.folded" -- "$FIXTURES/cxx_inline" 1.5 >/dev/null \
	2>"$WORK/err" || fail "record cxx failed: $(cat "$WORK/err")"
$CHECK has "$WORK/cxx.folded" 'fixture::Worker::run;fixture::mix_\[i\] ' ||
	fail "no inlined mix under demangled Worker::run: $(sort -t' ' -k2 -n "$WORK/cxx.folded" | tail -3)"

"$LLMPROF" record -F 499 -o "$WORK/jit.folded" -- "$FIXTURES/jit" 1.5 >/dev/null 2>"$WORK/err" ||
	fail "record jit failed: $(cat "$WORK/err")"
$CHECK has "$WORK/jit.folded" 'main;jitted_spin_\[j\] ' || fail "no JIT frame"

# A copy of the executable, deleted while it runs.
cp "$FIXTURES/ground_truth" "$WORK/doomed"
start_bg "$WORK/doomed" 4
sleep 0.3
rm "$WORK/doomed"
"$LLMPROF" attach -p "$BG_PID" -d 1.5 -F 499 -o "$WORK/deleted.folded" 2>"$WORK/err" ||
	fail "attach to deleted executable failed: $(cat "$WORK/err")"
$CHECK has "$WORK/deleted.folded" ';main;burn_a ' || fail "deleted executable not symbolized"

# Stripped: no symbols at all, so frames keep their module and offset.
strip -o "$WORK/stripped" "$FIXTURES/ground_truth"
"$LLMPROF" record -F 499 -o "$WORK/stripped.folded" -- "$WORK/stripped" 1 >/dev/null \
	2>"$WORK/err" || fail "record stripped failed"
$CHECK has "$WORK/stripped.folded" '\[stripped\+0x[0-9a-f]+\];\[stripped\+0x[0-9a-f]+\] ' ||
	fail "unsymbolized frames not kept as [module+0xOFFSET]"
echo PASS
