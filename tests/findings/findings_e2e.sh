#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# Findings on profiles recorded from real processes: a pure-Python loop is
# interpreter overhead and a Python loop over torch.mm is not; a C program
# with nothing wrong has no findings; the mock CUDA application (GPU idle
# between steps, pageable copies) shows
# the GPU rules, at the end of record and in report --findings.
. "$TESTS_SOURCE/lib/testlib.sh"
need_root
# Debian's interpreter, with Debian's torch (install-deps.sh installs both).
PY=/usr/bin/python3

# The interpreter's own time: fires, located in the hot Python function.
"$LLMPROF" record -F 199 -o "$WORK/py.folded" -- "$PY" "$TESTS_SOURCE/python/fixtures/shares.py" 2 \
	>/dev/null 2>"$WORK/py.err" || fail "record python failed: $(cat "$WORK/py.err")"
grep -q 'Python overhead' "$WORK/py.err" || fail "no Python overhead finding at the end of record"
"$LLMPROF" report --findings -f json "$WORK/py.folded" >"$WORK/py.json" || fail "report --findings"
python3 - "$WORK/py.json" <<'PY' || fail "python-overhead finding"
import json, sys
doc = json.load(open(sys.argv[1]))
f = {x["rule"]: x for x in doc["findings"]}
assert "python-overhead" in f, doc
assert f["python-overhead"]["cost"] > 0.5, f["python-overhead"]
assert f["python-overhead"]["location"].startswith("burn "), f["python-overhead"]
rules = {r["rule"]: r for r in doc["rules"]}
assert not rules["gpu-idle"]["ran"] and "needs GPU" in rules["gpu-idle"]["note"], rules["gpu-idle"]
PY

# Python that hands the work to torch: healthy.
"$PY" -c 'import torch' || fail "no torch for $PY"
{
	"$LLMPROF" record -F 199 -o "$WORK/torch.folded" -- "$PY" \
		"$TESTS_SOURCE/python/fixtures/torch_mm.py" 3 >/dev/null 2>"$WORK/torch.err" ||
		fail "record torch failed: $(cat "$WORK/torch.err")"
	"$LLMPROF" report --findings -v "$WORK/torch.folded" >"$WORK/torch.txt" || fail "report torch"
	grep -q 'python-overhead *quiet' "$WORK/torch.txt" ||
		fail "python-overhead on torch.mm: $(cat "$WORK/torch.txt")"
}

# Nothing wrong in a C program that only computes.
"$LLMPROF" record -F 199 -o "$WORK/c.folded" -- "$FIXTURES/ground_truth" 1 >/dev/null 2>"$WORK/c.err" ||
	fail "record C failed"
if grep -q '^llmprof: findings' "$WORK/c.err"; then fail "findings on a healthy C program: $(cat "$WORK/c.err")"; fi
"$LLMPROF" report --findings "$WORK/c.folded" | grep -q 'No rule found a problem' ||
	fail "report --findings on a healthy profile"

# GPU rules from the mock CUDA stack.
app=$MOCK_CUDA/mock_app
if [ -x "$app" ]; then
	export LD_LIBRARY_PATH=$MOCK_CUDA/lib
	export LLMPROF_CUPTI_LIBRARY=$MOCK_CUDA/lib/libcupti.so
	"$LLMPROF" record -F 199 -o "$WORK/gpu.folded" -- "$app" --iterations 40 >/dev/null \
		2>"$WORK/gpu.err" || fail "record mock app failed: $(cat "$WORK/gpu.err")"
	# The mock's synchronisation blocks (off the CPU), so on-CPU samples
	# catch it only by chance: host-sync is checked with off-CPU data.
	for title in 'The GPU is idle' 'pageable host memory'; do
		grep -q "$title" "$WORK/gpu.err" || fail "no '$title' finding: $(cat "$WORK/gpu.err")"
	done
	# From the folded file: no timeline, so no idle figure, but the
	# pageable copies are in the frames.
	"$LLMPROF" report --findings -f json "$WORK/gpu.folded" >"$WORK/gpu.json" || fail "report gpu"
	python3 - "$WORK/gpu.json" <<'PY' || fail "GPU findings from folded"
import json, sys
doc = json.load(open(sys.argv[1]))
f = {x["rule"]: x for x in doc["findings"]}
assert "pageable-copy" in f, doc
assert "cudaMemcpy" in f["pageable-copy"]["location"], f["pageable-copy"]
rules = {r["rule"]: r for r in doc["rules"]}
assert not rules["gpu-idle"]["ran"], rules["gpu-idle"]
PY
fi
echo PASS
