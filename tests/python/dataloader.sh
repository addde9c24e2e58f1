#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# A real PyTorch DataLoader with two worker processes: the dataset's
# decode_sample is under "[worker 0]" and "[worker 1]", the training step
# under the main process, all with Python frames.  $1: the interpreter.
. "$TESTS_SOURCE/lib/testlib.sh"
. "$TESTS_SOURCE/python/pylib.sh"
need_root
PY=$1
need_python "$PY"
"$PY" -c 'import torch' 2>/dev/null || skip "no torch for $PY"

"$LLMPROF" record -F 499 -o "$WORK/loader.folded" -- "$PY" "$PYTHON_FIXTURES/dataloader.py" 4 \
	>"$WORK/loader.out" 2>"$WORK/loader.err" || fail "record failed: $(cat "$WORK/loader.err")"
grep -q '^steps ' "$WORK/loader.out" || fail "the script did not finish: $(cat "$WORK/loader.out")"
DECODE=$(pyframe decode_sample dataloader.py | sed 's/[.()[]/\\&/g; s/\]/\\]/g')
STEP=$(pyframe train_step dataloader.py | sed 's/[.()[]/\\&/g; s/\]/\\]/g')
for w in 0 1; do
	$CHECK has "$WORK/loader.folded" "^python3 \\[worker $w\\];.*;$DECODE" ||
		fail "decode_sample is not under worker $w: $(cut -d';' -f1 "$WORK/loader.folded" | sort | uniq -c)"
done
$CHECK has "$WORK/loader.folded" "^python3;.*;$STEP" || fail "train_step is not under the main process"
grep -E "^python3 \\[worker [01]\\];.*;$STEP" "$WORK/loader.folded" && fail "train_step in a worker"
grep -E "^python3;.*;$DECODE" "$WORK/loader.folded" && fail "decode_sample in the main process"
echo PASS
