#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# The GPU memory findings on profiles recorded with --gpu-memory from the
# mock CUDA memory fixture (real uprobes): the failing 1 TiB cudaMalloc with
# its stack, a steady leak from one function, allocator churn, and a run
# with nothing wrong; each from the speedscope file, which keeps the
# accounting, and at the end of record.
. "$TESTS_SOURCE/lib/testlib.sh"
need_root
app=$MOCK_CUDA/memory_app
[ -x "$app" ] || skip "no mock CUDA memory fixture"
export LD_LIBRARY_PATH=$MOCK_CUDA/lib

# findings NAME ARGS...: records the fixture; NAME.json, NAME.err, NAME.out
# (report --findings -f json).
findings() {
	local name=$1
	shift
	"$LLMPROF" record --no-gpu --gpu-memory -f speedscope -o "$WORK/$name.json" -- "$app" "$@" \
		>/dev/null 2>"$WORK/$name.err" || fail "record $name: $(cat "$WORK/$name.err")"
	"$LLMPROF" report --findings -v -f json "$WORK/$name.json" >"$WORK/$name.out" ||
		fail "report --findings $name"
}

# check NAME PYTHON: asserts on doc (the JSON), f (findings by rule) and
# rules (outcomes by rule).
check() {
	python3 - "$WORK/$1.out" "$2" <<'PY' || fail "$1: $(cat "$WORK/$1.out")"
import json, sys
doc = json.load(open(sys.argv[1]))
f = {x["rule"]: x for x in doc["findings"]}
rules = {r["rule"]: r for r in doc["rules"]}
exec(sys.argv[2])
PY
}

findings oom
check oom '
o = f["allocation-failure"]
assert "cudaMalloc of 1.0 TiB" in o["title"], o
assert o["location"].startswith("try_huge_batch < main"), o
assert any("1 x cudaMalloc of 1.0 TiB: cudaErrorMemoryAllocation (2) at try_huge_batch < main" in e
           for e in o["evidence"]), o
assert "batch size" in o["suggestion"] and "checkpoint" in o["suggestion"], o
assert abs(o["cost"] - 2**40 / (2**40 + 112 * 2**20)) < 1e-3, o
# The weights kept to the end are allocated once: no leak.
assert "memory-leak" not in f and rules["memory-leak"]["ran"], rules["memory-leak"]
assert "allocator-churn" not in f, f
'
grep -q "GPU out of memory: 1 allocation failed (cudaMalloc of 1.0 TiB)" "$WORK/oom.err" ||
	fail "no failure finding at the end of record: $(cat "$WORK/oom.err")"

# The accounting survives a speedscope round trip (convert reads and writes it).
"$LLMPROF" convert -f speedscope -o "$WORK/oom2.json" "$WORK/oom.json" || fail "convert"
"$LLMPROF" report --findings -f json "$WORK/oom2.json" >"$WORK/oom2.out" || fail "report converted"
cmp -s <(grep -o '"findings":.*"rules"' "$WORK/oom.out") <(grep -o '"findings":.*"rules"' "$WORK/oom2.out") ||
	fail "findings changed in a round trip: $(cat "$WORK/oom2.out")"

findings leak --leak-steps 10
check leak '
o = f["memory-leak"]
assert o["location"].startswith("cache_step_output < main"), o
assert "10.0 MiB still allocated at the end" in o["title"], o
assert any("10.0 MiB in 10 x cudaMalloc" in e for e in o["evidence"]), o
# 10 MiB of the 121 MiB peak (weights, activations and the first step).
assert abs(o["cost"] - 10 / 121) < 1e-3, o
assert set(f) == {"memory-leak"}, f
'

findings churn --bench 3000
check churn '
o = f["allocator-churn"]
assert "3000 CUDA allocations" in o["title"], o
assert o["location"].startswith("bench < main"), o
assert any("3000 x cudaMalloc (11.7 MiB) at bench < main" in e for e in o["evidence"]), o
assert 0 < o["cost"] <= 1 and "cudaMallocAsync" in o["suggestion"], o
assert set(f) == {"allocator-churn"}, f
'

findings healthy --healthy
check healthy '
assert not f, f
for rule in ("allocation-failure", "allocator-churn", "memory-leak"):
    assert rules[rule]["ran"], rules[rule]
# Bytes are no CPU time: the CPU rules say so rather than measure 0%.
assert not rules["host-sync"]["ran"] and "weighs bytes" in rules["host-sync"]["note"], rules
'
if grep -q "^llmprof: findings" "$WORK/healthy.err"; then fail "findings on a healthy run: $(cat "$WORK/healthy.err")"; fi

# Folded stacks do not keep the accounting: the rules say so.
"$LLMPROF" record --no-gpu --gpu-memory -o "$WORK/oom.folded" -- "$app" >/dev/null 2>&1 ||
	fail "record folded"
"$LLMPROF" report --findings -v "$WORK/oom.folded" >"$WORK/folded.txt" || fail "report folded"
grep -q "allocation-failure *not run *needs the GPU memory accounting" "$WORK/folded.txt" ||
	fail "folded: $(cat "$WORK/folded.txt")"
echo PASS
