#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# A shared library stripped of all its symbols (its .eh_frame kept): every
# sample in its one CPU-burning function, whatever address it hit, is named
# by one frame, [libburn.so+0xSTART], START being the function's FDE start
# as readelf --debug-dump=frames gives it.  The summary counts the unnamed
# frames and points at debuginfod.
. "$TESTS_SOURCE/lib/testlib.sh"
need_root
CC=${CC:-cc}
command -v "$CC" >/dev/null || skip "no C compiler"
command -v readelf >/dev/null && command -v strip >/dev/null || skip "no binutils"

cat >"$WORK/burn.c" <<'C'
/* Many distinct instructions, so samples land on many addresses. */
#define STEP(k) x = x * 6364136223846793005ULL + (k) + (x >> 17);
#define TEN(k) STEP(k) STEP(k+1) STEP(k+2) STEP(k+3) STEP(k+4) STEP(k+5) STEP(k+6) STEP(k+7) STEP(k+8) STEP(k+9)
/* Local: no dynamic symbol names it once .symtab is stripped. */
static __attribute__((noinline)) unsigned long long burn(unsigned long long x)
{
	for (int i = 0; i < 2000; i++) {
		TEN(0) TEN(10) TEN(20) TEN(30) TEN(40) TEN(50) TEN(60) TEN(70)
	}
	return x;
}
unsigned long long run(unsigned long long x)
{
	return burn(x) + 1;
}
C
cat >"$WORK/main.c" <<'C'
#include <stdlib.h>
#include <time.h>
unsigned long long run(unsigned long long x);
int main(int argc, char **argv)
{
	time_t end = time(NULL) + atoi(argv[1]);
	unsigned long long x = 1;
	while (time(NULL) < end)
		x = run(x);
	return (int)(x & 1);
}
C
"$CC" -O1 -fPIC -shared -fno-omit-frame-pointer -fasynchronous-unwind-tables \
	-o "$WORK/libburn.so" "$WORK/burn.c" || fail "cannot build libburn.so"
burn_addr=$(nm "$WORK/libburn.so" | awk '$3 == "burn" {print $1}')
[ -n "$burn_addr" ] || fail "no burn in libburn.so"
strip --strip-all "$WORK/libburn.so" || fail "strip failed"
nm "$WORK/libburn.so" 2>&1 | grep -q ' burn$' && fail "burn still has a symbol"
nm -D "$WORK/libburn.so" 2>&1 | grep -q ' burn$' && fail "burn has a dynamic symbol"
"$CC" -O1 -fno-omit-frame-pointer -o "$WORK/main" "$WORK/main.c" -L"$WORK" -lburn \
	-Wl,-rpath,"$WORK" || fail "cannot build main"

# The FDE whose range holds burn: "pc=START..END".
fde=
while read -r range; do
	start=${range%%..*} end=${range##*..}
	if (( 16#$burn_addr >= 16#$start && 16#$burn_addr < 16#$end )); then
		fde=$(printf '%x' $((16#$start)))
	fi
done < <(readelf --debug-dump=frames "$WORK/libburn.so" | grep -o ' FDE .*pc=[0-9a-f.]*' |
	sed 's/.*pc=//')
[ -n "$fde" ] || fail "no FDE for burn at 0x$burn_addr"

"$LLMPROF" record -F 999 -o "$WORK/out.folded" -- "$WORK/main" 2 2>"$WORK/err" ||
	fail "record failed: $(cat "$WORK/err")"
# burn is the leaf (kernel frames aside) under run.
names=$(grep -o ';run;\[libburn\.so+0x[0-9a-f]*\]' "$WORK/out.folded" | sed 's/;run;//' | sort -u)
[ -n "$names" ] || fail "no libburn.so frame: $(head -5 "$WORK/out.folded")"
[ "$(echo "$names" | wc -l)" -eq 1 ] || fail "burn split into frames: $names"
[ "$names" = "[libburn.so+0x$fde]" ] || fail "frame $names, FDE start 0x$fde"
samples=$(awk '/\[libburn\.so\+0x/ {n += $NF} END {print n+0}' "$WORK/out.folded")
[ "$samples" -gt 500 ] || fail "only $samples samples in burn"
grep -q 'frames\? had no symbol.*debuginfod' "$WORK/err" ||
	fail "no note on unnamed frames: $(cat "$WORK/err")"
echo PASS
