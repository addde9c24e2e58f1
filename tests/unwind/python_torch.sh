#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# Debian's python3 (no frame pointers in python3.11, libpython, libtorch or
# libc) running a torch CPU training loop: with the default unwinding at
# least 95 percent of the samples reach the thread's start (see
# check_roots.py for what counts); frame pointers alone reach far fewer.
# Native stacks only (--no-python): Python frames take the interpreter's
# place at the root of the stack.  On the same samples (--unwind compare),
# 98 percent of the default unwinder's stacks are libdw's on the stack copy
# (99.8-100 % in most 2 s runs here, 98.3 and 98.7 % in two of about twenty):
# attach warms up until the rules of the files that samples run through
# are ready.  A function without a symbol (libgomp's, libtorch's local ones)
# is named by the start of its FDE (frame pointers' stacks hold addresses
# that are no return address at all, where libtorch has none).
. "$TESTS_SOURCE/lib/testlib.sh"
need_root
PYTHON=/usr/bin/python3
ROOTS="python3 $TESTS_SOURCE/unwind/check_roots.py"
[ -x $PYTHON ] && $PYTHON -c 'import torch' 2>/dev/null ||
	skip "needs Debian's python3 with torch (apt-get install python3-torch)"

# Long enough for three attaches on a loaded machine; killed at the end.
start_bg $PYTHON "$TESTS_SOURCE/unwind/fixtures/torch_mlp.py" 120 >"$WORK/out"
for _ in $(seq 100); do
	grep -q ready "$WORK/out" && break
	sleep 0.1
done
grep -q ready "$WORK/out" || fail "the torch fixture did not start"

"$LLMPROF" attach -p "$BG_PID" -d 2 -F 499 --no-python -o "$WORK/auto.folded" 2>"$WORK/err" ||
	fail "attach failed: $(cat "$WORK/err")"
$ROOTS "$WORK/auto.folded" --min 95 || fail "default unwinding: stacks cut short"
"$LLMPROF" attach -p "$BG_PID" -d 1 -F 499 --no-python --unwind fp -o "$WORK/fp.folded" 2>"$WORK/err" ||
	fail "attach --unwind fp failed: $(cat "$WORK/err")"
$ROOTS "$WORK/fp.folded" --max 50 || fail "frame pointers alone reach the start: test is moot"
cp "/proc/$BG_PID/maps" "$WORK/maps"
python3 "$TESTS_SOURCE/unwind/check_fde_frames.py" "$WORK/maps" "$WORK/auto.folded" ||
	fail "unnamed frames not named by their FDE's start"
"$LLMPROF" attach -v -p "$BG_PID" -d 2 -F 999 --unwind compare -o /dev/null 2>"$WORK/err" ||
	fail "attach --unwind compare failed: $(cat "$WORK/err")"
grep -q "warm-up: .* samples in" "$WORK/err" || fail "no warm-up in -v: $(grep debug "$WORK/err")"
same=$(sed -n 's/.*unwind compare: \([0-9]*\) samples: \([0-9.]*\)% of the stacks identical.*/\2/p' "$WORK/err")
[ -n "$same" ] || fail "no comparison in -v"
echo "attached: $same % of the stacks identical to libdw's on the same samples"
awk -v s="$same" 'BEGIN { exit !(s >= 98) }' || fail "only $same % of the stacks identical"
echo PASS
