#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# A Python function calling into PyTorch shows libtorch's frames, down to
# the BLAS kernel, under it.  $1: an interpreter with torch.
. "$TESTS_SOURCE/lib/testlib.sh"
. "$TESTS_SOURCE/python/pylib.sh"
need_root
PY=$1
need_python "$PY"
"$PY" -c 'import torch' 2>/dev/null || skip "no torch for $PY"

start_bg "$PY" "$PYTHON_FIXTURES/torch_mm.py" 10 >"$WORK/torch.out"
wait_ready "$WORK/torch.out"
sleep 0.3
"$LLMPROF" attach -p "$BG_PID" -d 2 -F 499 -o "$WORK/torch.folded" 2>"$WORK/torch.err" ||
	fail "attach failed: $(cat "$WORK/torch.err")"
$CHECK has "$WORK/torch.folded" \
	'train_loop \(torch_mm\.py\)_\[p\];matmul_step \(torch_mm\.py\)_\[p\];.*(at::|sgemm|gemm)' ||
	fail "no libtorch frames under matmul_step"
$CHECK shares "$WORK/torch.folded" --total "$(pyframe matmul_step torch_mm.py)=95" \
	--tolerance 5 || fail "matmul_step does not hold the profile"
echo PASS
