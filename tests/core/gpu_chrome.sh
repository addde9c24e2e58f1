#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# GPU work in a Chrome trace, against the mock CUDA stack: kernels and copies
# are X events on a stream track of a "GPU 0" process, at the times CUPTI
# gave (gemm_kernel takes twice as long as softmax_kernel), beside the CPU
# thread tracks; --view cpu leaves the GPU out.
. "$TESTS_SOURCE/lib/testlib.sh"
need_root
app=$MOCK_CUDA/mock_app
[ -x "$app" ] || skip "mock CUDA stack not built (no CUPTI headers)"
export LD_LIBRARY_PATH=$MOCK_CUDA/lib
export LLMPROF_CUPTI_LIBRARY=$MOCK_CUDA/lib/libcupti.so
TRACE="python3 $TESTS_SOURCE/lib/check_chrome_trace.py"

"$LLMPROF" record -F 199 -f chrome -o "$WORK/gpu.trace.json" -- "$app" --iterations 50 \
	>/dev/null 2>"$WORK/err" || fail "record failed: $(cat "$WORK/err")"
$TRACE "$WORK/gpu.trace.json" --gpu-kernel gemm_kernel --gpu-kernel softmax_kernel \
	--gpu-ratio gemm_kernel/softmax_kernel=2.0 || fail "GPU events"
python3 - "$WORK/gpu.trace.json" <<'PY' || fail "GPU tracks"
import json, sys
events = json.load(open(sys.argv[1]))["traceEvents"]
processes = {e["pid"]: e["args"]["name"] for e in events
             if e["ph"] == "M" and e["name"] == "process_name"}
threads = {(e["pid"], e["tid"]): e["args"]["name"] for e in events
           if e["ph"] == "M" and e["name"] == "thread_name"}
kernels = [e for e in events if e["ph"] == "X" and e["cat"] == "gpu.kernel"]
copies = [e for e in events if e["ph"] == "X" and e["cat"] == "gpu.memcpy"]
assert kernels and copies, "no kernels or no copies"
for e in kernels + copies:
    assert processes[e["pid"]] == "GPU 0", processes.get(e["pid"])
    assert threads[(e["pid"], e["tid"])].startswith("stream "), threads.get((e["pid"], e["tid"]))
    assert e["dur"] > 0 and e["args"]["correlation"] > 0, e
assert any(e["args"].get("bytes", 0) > 0 for e in copies), "copies without bytes"
cpu = [e for e in events if e["ph"] == "B" and processes.get(e["pid"]) != "GPU 0"]
assert cpu, "no CPU thread slices beside the GPU tracks"
# Kernels run inside the profile, after their first launch.
end = json.load(open(sys.argv[1]))["otherData"]["duration_us"]
assert all(0 <= e["ts"] and e["ts"] + e["dur"] <= end + 1000 for e in kernels), "kernel outside the profile"
print(f"{len(kernels)} kernels, {len(copies)} copies on", sorted(set(threads[(e['pid'], e['tid'])] for e in kernels)))
PY

"$LLMPROF" record -F 199 -f chrome --view cpu -o "$WORK/cpu.trace.json" -- "$app" \
	--iterations 10 >/dev/null 2>&1 || fail "record --view cpu failed"
$TRACE "$WORK/cpu.trace.json" >/dev/null || fail "--view cpu trace invalid"
grep -q '"ph":"X"' "$WORK/cpu.trace.json" && fail "--view cpu has GPU events"
echo PASS
