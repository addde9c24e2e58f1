#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# Samples inside calls that have a uretprobe pending (--gpu-memory's on the
# mock cudaMalloc and cuMemAlloc_v2): the kernel has replaced their return
# addresses on the stack with its trampoline's, and the unwinder takes the
# originals from the task's pending return instances.  In every unwind mode,
# the samples in the driver call have the whole stack below them:
# main;caller_a;cudaMalloc;cuMemAlloc_v2.
. "$TESTS_SOURCE/lib/testlib.sh"
need_root
export LD_LIBRARY_PATH=$MOCK_CUDA_LIB
export MOCK_CUDA_ALLOC_SPIN_MS=20

# share FILE: "INSIDE WHOLE": samples in cuMemAlloc_v2, and those of them
# under main;caller_a;cudaMalloc.
share() {
	python3 - "$1" <<'PY'
import sys
inside = whole = 0
for line in open(sys.argv[1]):
    stack, _, count = line.rstrip("\n").rpartition(" ")
    frames = stack.split(";")
    if "cuMemAlloc_v2" not in frames:
        continue
    inside += int(count)
    if ";main;caller_a;cudaMalloc;cuMemAlloc_v2;" in ";" + stack + ";":
        whole += int(count)
print(inside, whole)
PY
}

for mode in dwarf ehframe fp; do
	"$LLMPROF" record --no-gpu --gpu-memory --view cpu --unwind $mode -F 499 \
		-o "$WORK/$mode.folded" -- "$FIXTURES/uretprobe_calls" 1.5 \
		>"$WORK/app.out" 2>"$WORK/$mode.err" ||
		fail "record --unwind $mode failed: $(cat "$WORK/$mode.err")"
	grep -q " calls$" "$WORK/app.out" || fail "the fixture failed: $(cat "$WORK/app.out")"
	read -r inside whole < <(share "$WORK/$mode.folded")
	[ "$inside" -ge 50 ] ||
		fail "--unwind $mode: $inside samples in cuMemAlloc_v2: $(head -5 "$WORK/$mode.folded")"
	[ $((whole * 100)) -ge $((inside * 95)) ] ||
		fail "--unwind $mode: $whole of $inside samples in cuMemAlloc_v2 under main;caller_a;cudaMalloc: $(sort -k2 -nr -t' ' "$WORK/$mode.folded" | head -5)"
	echo "--unwind $mode: $whole of $inside samples whole"
done
echo PASS
