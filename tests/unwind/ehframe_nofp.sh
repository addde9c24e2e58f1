#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# --unwind ehframe on the ground truth built -O2 -fomit-frame-pointer, by
# gcc and by clang: main on the stack of at least 99% of the samples, the
# shares right within 3 points, and the stacks those that --unwind dwarf
# finds on the same program (99% of the samples' stacks in dwarf's set), and
# with --unwind compare, 99% of the stacks dwarf's on the very same samples.
# Two processes of one program share its tables: for both, the files one
# maps (the program, libc, the dynamic loader, the vDSO) are built once.
. "$TESTS_SOURCE/lib/testlib.sh"
need_root
COMPARE="python3 $TESTS_SOURCE/unwind/compare_stacks.py"

for compiler in gcc clang; do
	fixture=$FIXTURES/ground_truth_nofp_$compiler
	[ -x "$fixture" ] || { [ $compiler = clang ] && continue; fail "no $fixture"; }
	start_bg "$fixture" 20
	sleep 0.3
	"$LLMPROF" attach -v -p "$BG_PID" -d 3 -F 999 --unwind ehframe \
		-o "$WORK/$compiler.folded" 2>"$WORK/err" ||
		fail "$compiler: attach --unwind ehframe failed: $(cat "$WORK/err")"
	grep -q "unwind tables ready" "$WORK/err" || fail "$compiler: -v did not say when the tables were ready"
	$CHECK shares "$WORK/$compiler.folded" --self burn_a=50 --self burn_b=30 --self burn_c=20 \
		--total share_bc=50 --total main=99.5 --tolerance 3 || fail "$compiler: shares"
	main=$(python3 -c '
import sys
total = whole = 0
for line in open(sys.argv[1]):
    stack, _, n = line.rstrip("\n").rpartition(" ")
    total += int(n)
    whole += int(n) if "main" in stack.split(";") else 0
print("%.1f" % (100.0 * whole / max(total, 1)))' "$WORK/$compiler.folded")
	echo "$compiler: main on the stack of $main% of the samples"
	python3 -c "import sys; sys.exit(float(sys.argv[1]) < 99)" "$main" ||
		fail "$compiler: main on only $main% of the stacks"
	"$LLMPROF" attach -p "$BG_PID" -d 2 -F 999 --unwind dwarf -o "$WORK/$compiler.dwarf.folded" \
		2>"$WORK/err" || fail "$compiler: attach --unwind dwarf failed: $(cat "$WORK/err")"
	$COMPARE "$WORK/$compiler.folded" "$WORK/$compiler.dwarf.folded" --strip-kernel --min 99 ||
		fail "$compiler: ehframe's stacks are not dwarf's"
	# The same samples both ways: the BPF walk against libdw on a copy.
	"$LLMPROF" attach -v -p "$BG_PID" -d 2 -F 999 --unwind compare -o "$WORK/$compiler.compare.folded" \
		2>"$WORK/err" || fail "$compiler: attach --unwind compare failed: $(cat "$WORK/err")"
	same=$(sed -n 's/.*unwind compare: [0-9]* samples: \([0-9.]*\)% of the stacks identical.*/\1/p' "$WORK/err")
	echo "$compiler: $same% of the stacks identical to dwarf's on the same samples"
	[ -n "$same" ] && python3 -c "import sys; sys.exit(float(sys.argv[1]) < 99)" "$same" ||
		fail "$compiler: --unwind compare: only ${same:-no}% identical: $(grep compare "$WORK/err")"
	kill "$BG_PID" 2>/dev/null
done

files() {
	sed -n 's/.*unwind tables ready: \([0-9]*\) files.*/\1/p' "$1" | tail -1
}
fixture=$FIXTURES/ground_truth_nofp_gcc
start_bg "$fixture" 15
first=$BG_PID
start_bg "$fixture" 15
sleep 0.3
"$LLMPROF" attach -v -p "$first" -d 1 -F 999 --unwind ehframe -o "$WORK/one.folded" 2>"$WORK/one.err" ||
	fail "attach to one process failed: $(cat "$WORK/one.err")"
"$LLMPROF" attach -v -p "$first,$BG_PID" -d 1 -F 999 --unwind ehframe -o "$WORK/two.folded" \
	2>"$WORK/two.err" || fail "attach to two processes failed: $(grep -v debug "$WORK/two.err")"
one=$(files "$WORK/one.err")
two=$(files "$WORK/two.err")
echo "tables built: $one files for one process, $two for two"
[ -n "$one" ] && [ -n "$two" ] && [ "$two" -eq "$one" ] && [ "$two" -le 4 ] || fail "two processes built $two tables, one $one"
echo PASS
