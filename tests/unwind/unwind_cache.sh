#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# The unwind cache across runs, in a fresh LLMPROF_CACHE_DIR.  On the
# ground truth built without frame pointers: the first attach compiles its
# files' rows and keeps an entry for each file with a build-id; the second
# reads them all and compiles none, and loads the same rows (-v's digest,
# a sum of each loaded file's rows hash, is the first run's, and that of a
# run with --no-unwind-cache); every entry's rows are what the compiler
# gives the file now (test_unwind_cache --check compiles each file again);
# an entry with one byte flipped is ignored, compiled again and rewritten;
# a cache directory that others may write or another user owns is not used
# (rows compiled, nothing written); and in every run main is on at least
# 99 % of the stacks.  Where Debian's python3 has torch: a process that
# imported it (some 310 mapped files): the second attach reads files' rows
# from the cache and spends less than half the first one's CPU compiling,
# its stacks reach the thread's start as often (95 %, as
# root.unwind_python_torch asks), and every entry is a fresh compile's rows.
. "$TESTS_SOURCE/lib/testlib.sh"
need_root
export LLMPROF_CACHE_DIR=$WORK/cache

# field ERR NAME: from -v's "unwind rows:" line: read, compiled, digest,
# compile_cpu.
field() {
	local line
	line=$(grep 'unwind rows:' "$1" | tail -1)
	case $2 in
	read) sed -n 's/.*unwind rows: \([0-9]*\) files read.*/\1/p' <<<"$line" ;;
	compiled) sed -n 's/.*), \([0-9]*\) compiled.*/\1/p' <<<"$line" ;;
	digest) sed -n 's/.*rows digest \([0-9a-f]*\).*/\1/p' <<<"$line" ;;
	compile_cpu) sed -n 's/.* compiled (\([0-9.]*\) s of CPU).*/\1/p' <<<"$line" ;;
	esac
}
main_share() {
	python3 -c '
import sys
total = whole = 0
for line in open(sys.argv[1]):
    stack, _, n = line.rstrip("\n").rpartition(" ")
    total += int(n)
    whole += int(n) if "main" in stack.split(";") else 0
sys.exit(total == 0 or 100.0 * whole / total < 99)' "$1"
}
# run NAME [OPTIONS]: one attach to the ground truth, checked whole.
run() {
	local name=$1
	shift
	"$LLMPROF" attach -v -p "$BG_PID" -d 1 -F 999 "$@" -o "$WORK/$name.folded" \
		2>"$WORK/$name.err" || fail "$name: attach failed: $(cat "$WORK/$name.err")"
	grep -q 'unwind rows:' "$WORK/$name.err" || fail "$name: no 'unwind rows' line in -v"
	main_share "$WORK/$name.folded" || fail "$name: main on fewer than 99 % of the stacks"
	echo "$name: $(field "$WORK/$name.err" read) read, $(field "$WORK/$name.err" compiled) compiled, digest $(field "$WORK/$name.err" digest)"
}
entries() {
	find "$LLMPROF_CACHE_DIR" -name '*.unwind' | wc -l
}

start_bg "$FIXTURES/ground_truth_nofp_gcc" 40
sleep 0.3
cp "/proc/$BG_PID/maps" "$WORK/maps"

run first
compiled=$(field "$WORK/first.err" compiled)
digest=$(field "$WORK/first.err" digest)
[ "$(field "$WORK/first.err" read)" = 0 ] && [ "$compiled" -ge 3 ] ||
	fail "first run: expected every file compiled, none read"
[ "$(stat -c %a "$LLMPROF_CACHE_DIR")" = 700 ] || fail "cache directory mode $(stat -c %a "$LLMPROF_CACHE_DIR")"
# The vDSO and the files, all with build-ids here.
[ "$(entries)" -eq "$compiled" ] || fail "$(entries) entries for $compiled files compiled"
[ -z "$(find "$LLMPROF_CACHE_DIR" -name '.tmp-*')" ] || fail "temporary files left"

run second
[ "$(field "$WORK/second.err" read)" = "$compiled" ] && [ "$(field "$WORK/second.err" compiled)" = 0 ] ||
	fail "second run: expected $compiled files read, none compiled"
[ "$(field "$WORK/second.err" digest)" = "$digest" ] || fail "second run loaded other rows than the first"

run off --no-unwind-cache
grep -q 'unwind rows: 0 files read from the cache (off)' "$WORK/off.err" || fail "--no-unwind-cache read the cache"
[ "$(field "$WORK/off.err" digest)" = "$digest" ] || fail "rows compiled again differ from the cached ones"

"$UNWIND_CACHE_CHECK" --check "$LLMPROF_CACHE_DIR" "$WORK/maps" || fail "entries are not the compiler's rows"

# One byte of the largest entry (libc's) flipped, in its rows.
largest=$(ls -S "$LLMPROF_CACHE_DIR"/*.unwind | head -1)
python3 -c '
import sys
with open(sys.argv[1], "r+b") as f:
    f.seek(312 + 8 * 100 + 2)
    b = f.read(1)
    f.seek(-1, 1)
    f.write(bytes([b[0] ^ 0x10]))' "$largest"
run corrupted
grep -q "ignored: checksum mismatch" "$WORK/corrupted.err" || fail "the flipped byte was not detected"
[ "$(field "$WORK/corrupted.err" compiled)" = 1 ] || fail "the corrupted entry was not compiled again"
[ "$(field "$WORK/corrupted.err" digest)" = "$digest" ] || fail "rows differ after the corrupted entry"
run rewritten
[ "$(field "$WORK/rewritten.err" compiled)" = 0 ] || fail "the corrupted entry was not rewritten"

# Directories that are not the user's alone: not used, nothing written.
rm -f "$LLMPROF_CACHE_DIR"/*.unwind
chmod 0777 "$LLMPROF_CACHE_DIR"
run world_writable
grep -q "not used: writable by group or others" "$WORK/world_writable.err" ||
	fail "a world-writable cache directory was used"
[ "$(entries)" = 0 ] || fail "entries written to a world-writable directory"
chmod 0700 "$LLMPROF_CACHE_DIR"
chown 65534 "$LLMPROF_CACHE_DIR"
run other_user
grep -q "not used: owned by another user" "$WORK/other_user.err" || fail "another user's cache directory was used"
[ "$(entries)" = 0 ] || fail "entries written to another user's directory"
[ "$(field "$WORK/other_user.err" digest)" = "$digest" ] || fail "rows differ without the cache"
chown 0 "$LLMPROF_CACHE_DIR"
kill "$BG_PID" 2>/dev/null

PYTHON=/usr/bin/python3
if [ -x $PYTHON ] && $PYTHON -c 'import torch' 2>/dev/null; then
	ROOTS="python3 $TESTS_SOURCE/unwind/check_roots.py"
	export LLMPROF_CACHE_DIR=$WORK/torch-cache
	start_bg $PYTHON "$TESTS_SOURCE/unwind/fixtures/torch_mlp.py" 30 >"$WORK/out"
	for _ in $(seq 100); do
		grep -q ready "$WORK/out" && break
		sleep 0.1
	done
	grep -q ready "$WORK/out" || fail "the torch fixture did not start"
	cp "/proc/$BG_PID/maps" "$WORK/torch.maps"
	for name in torch_first torch_second; do
		"$LLMPROF" attach -v -p "$BG_PID" -d 3 -F 499 --no-python -o "$WORK/$name.folded" \
			2>"$WORK/$name.err" || fail "$name: attach failed: $(cat "$WORK/$name.err")"
		$ROOTS "$WORK/$name.folded" --min 95 || fail "$name: stacks cut short"
		echo "$name: $(field "$WORK/$name.err" read) read, $(field "$WORK/$name.err" compiled) compiled"
	done
	first_compiled=$(field "$WORK/torch_first.err" compiled)
	[ "$(field "$WORK/torch_first.err" read)" = 0 ] && [ "$first_compiled" -ge 10 ] ||
		fail "torch, first run: expected many files compiled, none read"
	# Which files are built depends on which samples reach (those no
	# sample reached wait once libtorch fills a quarter of the rows map);
	# libtorch_cpu, on every stack, is most of the compile.
	first_cpu=$(field "$WORK/torch_first.err" compile_cpu)
	second_cpu=$(field "$WORK/torch_second.err" compile_cpu)
	[ "$(field "$WORK/torch_second.err" read)" -ge 10 ] ||
		fail "torch, second run: fewer than 10 files' rows read from the cache"
	awk -v a="$first_cpu" -v b="$second_cpu" 'BEGIN { exit !(b < a / 2) }' ||
		fail "torch: compiling took $second_cpu s of CPU on the second run, $first_cpu s on the first"
	echo "torch: compiling took $first_cpu s of CPU on the first run, $second_cpu s on the second"
	"$UNWIND_CACHE_CHECK" --check "$LLMPROF_CACHE_DIR" "$WORK/torch.maps" ||
		fail "torch: entries are not the compiler's rows"
else
	echo "no python3 with torch: the ground truth only"
fi
echo PASS
