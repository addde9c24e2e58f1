#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# NCCL calls joined with their GPU kernels, on the mock CUDA stack with the
# stand-in libnccl: two ranks as two processes (record over a fork), each on
# its own mock device, with known sizes and a programmed bus bandwidth of
# 1024 bytes a microsecond (nccl_ranks_app.c has the figures).  Each kernel
# sits under its call's "[nccl] OP SIZE" frame and the function that made
# the call (a group's kernel under GroupEnd's caller); the table gives GPU
# times, algbw and busbw (nccl-tests' factors) to 1%; the exposed
# communication is exact; speedscope carries it all to `llmprof report`.
# Then the rooted collectives (ncclBcast, ncclGather, ncclScatter) and
# calls on communicators from ncclCommSplit and ncclCommShrink.
. "$TESTS_SOURCE/lib/testlib.sh"
need_root
LIB_DIR=$(dirname "$NCCL_RANKS_APP")
export LLMPROF_CUPTI_LIBRARY=$LIB_DIR/lib/libcupti.so
export MOCK_CUDA_CONCURRENT_STREAMS=1 MOCK_CUDA_DEVICES=2

"$LLMPROF" record -o "$WORK/r.folded" -- "$NCCL_RANKS_APP" >"$WORK/app.out" 2>"$WORK/r.err" ||
	fail "record: $(cat "$WORK/r.err")"
[ "$(grep -c ' done$' "$WORK/app.out")" = 2 ] || fail "the ranks did not finish: $(cat "$WORK/app.out")"
$CHECK folded "$WORK/r.folded" >/dev/null || fail "invalid folded"

python3 - "$WORK/r.folded" "$WORK/r.err" <<'PY' || fail "$(grep -E 'nccl|matmul' "$WORK/r.folded"; cat "$WORK/r.err")"
import re, sys
folded, err = sys.argv[1], open(sys.argv[2]).read()
# (caller, [nccl] frame, kernel): microseconds over both ranks.
want = {
    ("overlapped", "[nccl] AllReduce 4.0 MiB", "ncclDevKernel_AllReduce_Sum_f32_RING_LL"): 2 * 4096,
    ("exposed", "[nccl] AllReduce 8.0 MiB", "ncclDevKernel_AllReduce_Sum_f32_RING_LL"): 2 * 8192,
    ("gather", "[nccl] AllGather 1.0 MiB", "ncclDevKernel_AllGather_RING_LL"): 2 * 1024,
    ("exchange", "[nccl] Send 1.0 MiB + Recv 1.0 MiB", "ncclDevKernel_SendRecv"): 2 * 2048,
}
got, bad = {}, []
for line in open(folded):
    stack, _, weight = line.rstrip("\n").rpartition(" ")
    frames = stack.split(";")
    if not frames[-1].startswith("[gpu] "):
        continue
    if "nccl" not in frames[-1]:
        if "[nccl]" in stack:
            bad.append("a compute kernel under an NCCL frame: " + stack)
        continue
    # The caller sits above the stand-in's own frames (and GroupEnd's).
    caller = next((f for f in ("overlapped", "exposed", "gather", "exchange") if f in frames), None)
    key = (caller, frames[-2], frames[-1][6:])
    got[key] = got.get(key, 0) + int(weight)
    if "[unknown" in stack:
        bad.append("the uretprobe trampoline left in: " + stack)
for k, us in want.items():
    if got.get(k, 0) != us:
        bad.append("%s: %d us, expected %d" % (k, got.get(k, 0), us))
for k in got:
    if k not in want:
        bad.append("unexpected %s: %d" % (k, got[k]))
# The table: operation, bucket -> (calls, GPU ms, algbw, busbw) in GB/s.
bus = 1.024
table = {
    ("AllReduce", "4.0 MiB"): (2, 8.192, bus, bus),
    ("AllReduce", "8.0 MiB"): (2, 16.384, bus, bus),
    ("AllGather", "1.0 MiB"): (2, 2.048, 2 * bus, bus),  # 2 ranks' data, (n-1)/n
    ("Send", "1.0 MiB"): (2, 2.048, bus, bus),
    ("Recv", "1.0 MiB"): (2, 2.048, bus, bus),
}
rows = {}
for m in re.finditer(r"^llmprof:   (\w+) +([\d.]+ \w+) +(\d+) +(\d+) +[\d.]+ \w+ +([\d.]+) +([\d.]+) +([\d.]+)$", err, re.M):
    rows[(m[1], m[2])] = (int(m[3]), int(m[4]), float(m[5]), float(m[6]), float(m[7]))
for k, (calls, ms, alg, busbw) in table.items():
    r = rows.get(k)
    if not r:
        bad.append("no row %s" % (k,))
        continue
    if r[0] != 2 or r[1] != calls:
        bad.append("%s: %d ranks, %d calls" % (k, r[0], r[1]))
    for what, g, w in (("GPU ms", r[2], ms), ("algbw", r[3], alg), ("busbw", r[4], busbw)):
        if abs(g - w) > 0.01 * w:
            bad.append("%s %s: %g, expected %g" % (k, what, g, w))
if len(rows) != len(table):
    bad.append("rows: %s" % sorted(rows))
# 15360 us of NCCL kernels per device, 11264 us of it beside no compute.
if "exposed communication: 22.528 ms of 30.720 ms of NCCL GPU time (73.3%)" not in err or "on 2 devices" not in err:
    bad.append("exposed communication wrong")
if "NCCL: 10 calls" not in err:
    bad.append("not every call of both ranks")
if bad:
    print("\n".join(bad), file=sys.stderr)
    sys.exit(1)
PY

# Ranks that each see their GPU as device 0 are still two devices.
MOCK_CUDA_DEVICES=1 "$LLMPROF" record -o "$WORK/d0.folded" -- "$NCCL_RANKS_APP" --device-0 \
	>/dev/null 2>"$WORK/d0.err" || fail "--device-0: $(cat "$WORK/d0.err")"
grep -q "exposed communication: 22.528 ms of 30.720 ms of NCCL GPU time (73.3%).* on 2 devices" \
	"$WORK/d0.err" || fail "--device-0: $(grep -A8 'NCCL:' "$WORK/d0.err")"

# speedscope: the kernels on their streams named with their collective, and
# the table for `llmprof report`.
"$LLMPROF" record -f speedscope -o "$WORK/r.json" -- "$NCCL_RANKS_APP" >/dev/null 2>"$WORK/s.err" ||
	fail "record speedscope: $(cat "$WORK/s.err")"
if [ -f "$SPEEDSCOPE_SCHEMA" ]; then
	$CHECK speedscope "$WORK/r.json" --schema "$SPEEDSCOPE_SCHEMA" >/dev/null || fail "speedscope invalid"
fi
python3 - "$WORK/r.json" <<'PY' || fail "speedscope: $(head -c 2000 "$WORK/r.json")"
import json, sys
d = json.load(open(sys.argv[1]))
frames = [f["name"] for f in d["shared"]["frames"]]
n = d["llmprofNccl"]
assert n["kernelNs"] == 30720000 and n["exposedNs"] == 22528000 and n["devices"] == 2, n
rows = {(r["operation"], r["bucket"]): r for r in n["rows"]}
r = rows[("AllReduce", 8 << 20)]
assert r["calls"] == 2 and r["ranks"] == 2 and r["size"] == 16 << 20 and r["gpuNs"] == 16384000, r
r = rows[("AllGather", 1 << 20)]
assert r["size"] == 4 << 20 and r["bytes"] == 2 << 20 and r["gpuNs"] == 2048000, r
named = {}
for p in d["profiles"]:
    if not p["name"].startswith("GPU "):
        continue
    for e in p["events"]:
        if e["type"] == "O":
            named[frames[e["frame"]]] = named.get(frames[e["frame"]], 0) + 1
want = {
    "[gpu] ncclDevKernel_AllReduce_Sum_f32_RING_LL (AllReduce 8.0 MiB)": 2,
    "[gpu] ncclDevKernel_AllReduce_Sum_f32_RING_LL (AllReduce 4.0 MiB)": 2,
    "[gpu] ncclDevKernel_AllGather_RING_LL (AllGather 1.0 MiB)": 2,
    "[gpu] ncclDevKernel_SendRecv (Send 1.0 MiB + Recv 1.0 MiB)": 2,
    "[gpu] matmul_kernel": 2,
}
assert named == want, named
PY
"$LLMPROF" report "$WORK/r.json" >"$WORK/report" || fail "report"
grep -q "^NCCL collectives:" "$WORK/report" || fail "no NCCL table in the report: $(cat "$WORK/report")"
grep -Eq "^  AllReduce +8.0 MiB +2 +2 +16.0 MiB +16.384 +1.024 +1.024$" "$WORK/report" ||
	fail "report's AllReduce row: $(grep -A9 NCCL "$WORK/report")"
grep -q "exposed communication: 22.528 ms of 30.720 ms" "$WORK/report" ||
	fail "report's exposed share: $(grep -A9 NCCL "$WORK/report")"

"$LLMPROF" report -f json "$WORK/r.json" >"$WORK/report.json" || fail "report -f json"
python3 - "$WORK/report.json" <<'PY' || fail "report -f json: $(cat "$WORK/report.json")"
import json, sys
n = json.load(open(sys.argv[1]))["nccl"]
assert n["exposed_ns"] == 22528000 and n["kernel_ns"] == 30720000, n
row = next(r for r in n["rows"] if r["operation"] == "AllGather")
assert abs(row["algbw"] - 2.048) < 0.02 and abs(row["busbw"] - 1.024) < 0.01, row
PY

# The findings read the same file: the GPU rules run on its timeline, and
# exposed-communication takes the recording's own figure (22.528 ms on 2
# devices over the wall time).
"$LLMPROF" report --findings -v "$WORK/r.json" >"$WORK/findings" || fail "report --findings"
grep -q "^  gpu-idle  *fired" "$WORK/findings" || fail "gpu-idle did not run: $(cat "$WORK/findings")"
grep -Eq "^  exposed-communication +quiet +0\.[0-9]% of the time the GPU communicated" "$WORK/findings" ||
	fail "exposed-communication: $(grep exposed "$WORK/findings")"
wall_ms=$(sed -n 's/.*NCCL GPU time (73.3%).* of \([0-9.]*\) s wall time on 2 devices.*/\1/p' "$WORK/s.err")
[ -n "$wall_ms" ] || fail "no wall time in the summary: $(grep exposed "$WORK/s.err")"
want=$(awk -v w="$wall_ms" 'BEGIN { printf "%.1f", 100 * 0.022528 / (w * 2) }')
grep -q "exposed-communication .* $want% of the time" "$WORK/findings" ||
	fail "exposed share not $want%: $(grep exposed "$WORK/findings")"

# A communicator of one rank: NCCL copies instead of launching a kernel;
# the copies are the calls' GPU time, and an in-place call has none.
"$LLMPROF" record -o "$WORK/one.folded" -- "$NCCL_RANKS_APP" --one-rank >/dev/null 2>"$WORK/one.err" ||
	fail "--one-rank: $(cat "$WORK/one.err")"
grep -q ';one_rank;.*;\[nccl\] AllReduce 4.0 MiB;\[gpu\] memcpy DtoD[^;]* 424$' "$WORK/one.folded" &&
	grep -q ';one_rank;.*;\[nccl\] AllGather 1.0 MiB;\[gpu\] memcpy DtoD[^;]* 110$' "$WORK/one.folded" &&
	grep -q ';one_rank;.*;\[nccl\] AllReduce 1.0 MiB;\[gpu\] memcpy DtoD[^;]* 110$' "$WORK/one.folded" ||
	fail "one rank's copies: $(grep nccl "$WORK/one.folded")"
# AllReduce: 2 calls, one copy of 4 MiB in 424430 ns: 9.882 GB/s; busbw 0.
grep -Eq '^llmprof:   AllReduce +4.0 MiB +1 +2 +8.0 MiB +0.424 +9.88[0-9] +0.000$' "$WORK/one.err" &&
	grep -Eq '^llmprof:   AllGather +1.0 MiB +1 +1 +1.0 MiB +0.110 +9.54[0-9] +0.000$' "$WORK/one.err" &&
	grep -Eq '^llmprof:   AllReduce +1.0 MiB +1 +1 +1.0 MiB +0.110 +9.54[0-9] +0.000$' "$WORK/one.err" &&
	grep -q 'exposed communication: 0.644 ms of 0.644 ms' "$WORK/one.err" ||
	fail "one rank's table: $(grep -A6 'NCCL:' "$WORK/one.err")"

# The rooted collectives and the communicators made from another: ncclBcast
# counted as Broadcast, Gather and Scatter with nccl-tests' size (both
# ranks' parts) and bus factor (n-1)/n, an AllReduce on a shrunk
# communicator with the parent's two ranks, one on a split communicator with
# its size unknown.
"$LLMPROF" record -v -o "$WORK/rooted.folded" -- "$NCCL_RANKS_APP" --rooted >/dev/null \
	2>"$WORK/rooted.err" || fail "--rooted: $(cat "$WORK/rooted.err")"
python3 - "$WORK/rooted.folded" "$WORK/rooted.err" <<'PY' || fail "--rooted: $(grep -A8 'NCCL:' "$WORK/rooted.err"; grep nccl "$WORK/rooted.folded")"
import re, sys
folded, err = sys.argv[1], open(sys.argv[2]).read()
want = {
    ("bcast", "[nccl] Broadcast 1.0 MiB", "ncclDevKernel_Broadcast_RING_LL"): 2 * 1024,
    ("gather_root", "[nccl] Gather 256.0 KiB", "ncclDevKernel_SendRecv"): 2 * 256,
    ("scatter_root", "[nccl] Scatter 256.0 KiB", "ncclDevKernel_SendRecv"): 2 * 256,
    ("on_split", "[nccl] AllReduce 1.0 MiB", "ncclDevKernel_AllReduce_Sum_f32_RING_LL"): 2 * 1024,
    ("on_shrunk", "[nccl] AllReduce 2.0 MiB", "ncclDevKernel_AllReduce_Sum_f32_RING_LL"): 2 * 2048,
}
got = {}
for line in open(folded):
    stack, _, weight = line.rstrip("\n").rpartition(" ")
    frames = stack.split(";")
    if not frames[-1].startswith("[gpu] ncclDev"):
        continue
    caller = next((f for f in frames if f in ("bcast", "gather_root", "scatter_root", "on_split", "on_shrunk")), None)
    key = (caller, frames[-2], frames[-1][6:])
    got[key] = got.get(key, 0) + int(weight)
bad = ["%s: %d us, expected %d" % (k, got.get(k, 0), v) for k, v in want.items() if got.get(k, 0) != v]
bad += ["unexpected %s" % (k,) for k in got if k not in want]
# operation, bucket, ranks, calls, bytes, GPU ms, algbw, busbw
rows = {
    ("Broadcast", "1.0 MiB"): ("2", "2", "2.0 MiB", "2.048", "1.024", "1.024"),
    ("Gather", "256.0 KiB"): ("2", "2", "512.0 KiB", "0.512", "2.048", "1.024"),
    ("Scatter", "256.0 KiB"): ("2", "2", "512.0 KiB", "0.512", "2.048", "1.024"),
    ("AllReduce", "2.0 MiB"): ("2", "2", "4.0 MiB", "4.096", "1.024", "1.024"),
    ("AllReduce", "1.0 MiB"): ("?", "2", "2.0 MiB", "2.048", "1.024", "1.024"),
}
for (op, bucket), cells in rows.items():
    if not re.search(r"^llmprof:   %s +%s +%s$" % (op, re.escape(bucket), " +".join(re.escape(c) for c in cells)), err, re.M):
        bad.append("no row %s %s %s" % (op, bucket, cells))
# Every call of both ranks recorded, the communicator calls included.
for call in ("CommSplit", "CommShrink"):
    if len(re.findall(r"debug: NCCL: %s .*: 0$" % call, err, re.M)) != 2:
        bad.append("%s: not 2 successful calls" % call)
if bad:
    print("\n".join(bad), file=sys.stderr)
    sys.exit(1)
PY

# --no-nccl: the kernels stay, without their calls.
"$LLMPROF" record --no-nccl -o "$WORK/off.folded" -- "$NCCL_RANKS_APP" >/dev/null 2>"$WORK/off.err" ||
	fail "--no-nccl: $(cat "$WORK/off.err")"
grep -q '\[gpu\] ncclDevKernel_AllReduce' "$WORK/off.folded" || fail "--no-nccl lost the kernels"
if grep -q '\[nccl\]' "$WORK/off.folded"; then fail "--no-nccl left NCCL frames"; fi
echo PASS
