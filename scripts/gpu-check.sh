#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
#
# Checks llmprof's GPU support on a machine with an NVIDIA GPU (CI has none):
#   1. a CUDA C program (tests/gpu/named_kernels.cu, built with nvcc, with
#      cuBLAS where it links) under "llmprof record": named kernels, copies
#      from pageable and from pinned memory, a CUDA graph of two kernels, two
#      threads launching on their own streams, and cuBLAS SGEMMs (launched
#      through the driver API).  Every group's GPU spans are under the host
#      function that launched it, with GPU time within 10 percent of the
#      program's own CUDA-event timings (25 for copies), and as many spans
#      as the program made operations (a Chrome trace of a second run).  The
#      CPU and GPU timelines agree: every span starts after its launch call
#      (the trace's launch flows) and within LAUNCH_BOUND_MS of it, and the
#      two threads' kernels come from two threads;
#   2. a PyTorch torch.matmul loop (tests/gpu/torch_matmul.py) under
#      "llmprof record": the matmul kernels appear under step(), GPU time
#      within 10 percent of CUDA events, the main kernel once per matmul;
#   3. "llmprof attach" three times to an already-running PyTorch loop:
#      kernels under step(), mean GPU time per matmul within 10 percent of
#      CUDA events; the third attach's Chrome trace has one kernel record
#      per launch and agreeing timelines; the target runs on and exits 0
#      after llmprof is done;
#   4. "llmprof record --gpu-memory" of a PyTorch model with known tensors
#      (tests/gpu/torch_memory.py): the peak by stack matches
#      torch.cuda.max_memory_reserved() (up to 64 MiB more, for libraries
#      below PyTorch), with the 256 MiB of weights under load_weights;
#   5. NCCL collectives of torch.distributed under record;
#   6. overhead and robustness on PyTorch loops: a launch-bound step's time
#      before and while attached, a CUDA-graph loop attached twice,
#      expandable segments under --gpu-memory, a torch.profiler window
#      inside record, two ranks each on CUDA_VISIBLE_DEVICES=0.
#
# Usage: scripts/gpu-check.sh LLMPROF [WORKDIR]
#   LLMPROF  the llmprof binary to test (the static one, copied here)
#   WORKDIR  where builds and profiles go (default: a new temporary dir)
# Run as root (llmprof needs BPF).  Environment: NVCC (default: nvcc on
# PATH or /usr/local/cuda/bin/nvcc), PYTHON (default python3),
# LLMPROF_CUPTI_LIBRARY (a libcupti for the CUDA C program, else found
# here), TOLERANCE (default 0.10), LAUNCH_BOUND_MS (default 1000).
# Every step runs under timeout(1) (STEP_TIMEOUT seconds, default 300; the
# 40 s attach target 180; probes of the tools 60), so a hung llmprof, target
# or CUPTI (13.0 GA can deadlock at detach) fails that step and the script
# goes on: it ends in well under an hour.  The first line after the GPU list
# names the versions: driver, CUDA, CUPTI, torch, NCCL.
# Exit status: 0 all checks ran and passed, 1 a check failed, 2 usage, 77
# "cannot check: ...": no GPU, no nvcc or no PyTorch with CUDA, so some
# check did not run (never "all checks passed" for a check not made).
# The last lines are the verdict of every check, then one table of every
# figure (llmprof's, the reference, the ratio, the verdict).

set -euo pipefail

usage() {
	echo "usage: $0 LLMPROF [WORKDIR]" >&2
	exit 2
}

if [ $# -lt 1 ] || [ $# -gt 2 ]; then
	usage
fi
LLMPROF=$(readlink -f -- "$1")
[ -x "$LLMPROF" ] || { echo "gpu-check: $1 is not an executable" >&2; exit 2; }
SRC=$(cd -- "$(dirname -- "${BASH_SOURCE[0]}")/.." && pwd)
WORK=${2:-$(mktemp -d /tmp/llmprof-gpu-check.XXXXXX)}
mkdir -p -- "$WORK"
PYTHON=${PYTHON:-python3}
TOLERANCE=${TOLERANCE:-0.10}
LAUNCH_BOUND_MS=${LAUNCH_BOUND_MS:-1000}
STEP_TIMEOUT=${STEP_TIMEOUT:-300}
failures=0
cannot=()
results=()
background_pid=

cleanup() {
	if [ -n "$background_pid" ] && kill -0 "$background_pid" 2>/dev/null; then
		kill "$background_pid" 2>/dev/null || true
	fi
}
trap cleanup EXIT

pass() { echo "PASS: $*"; results+=("PASS  $*"); }
fail() { echo "FAIL: $*"; results+=("FAIL  $*"); failures=$((failures + 1)); }
cannot_check() { echo "gpu-check: cannot check: $*" >&2; cannot+=("$*"); results+=("SKIP  cannot check: $*"); }
note() { echo "gpu-check: $*" >&2; }

# bounded SECONDS COMMAND...: COMMAND for at most SECONDS, then SIGTERM and
# SIGKILL 10 s later; its status, 124 or 137 on a timeout, which it names.
bounded() {
	local seconds=$1 status=0
	shift
	timeout --kill-after=10 "$seconds" "$@" || status=$?
	if [ "$status" -eq 124 ] || [ "$status" -eq 137 ]; then
		note "timed out after $seconds s: $*"
	fi
	return "$status"
}

# print_versions: one line, so a failure can be tied to a cause.  Each
# probe is bounded; what cannot be found is "none".
print_versions() {
	local driver cuda cupti torch nccl lib
	driver=$(bounded 60 nvidia-smi --query-gpu=driver_version --format=csv,noheader 2>/dev/null |
		head -1) || true
	cuda=$(bounded 60 "$NVCC" --version 2>/dev/null | sed -n 's/.*release \([0-9.]*\).*/\1/p') || true
	lib=${LLMPROF_CUPTI_LIBRARY:-}
	cupti=none
	if [ -n "$lib" ] && [ -e "$lib" ]; then
		cupti=$(basename -- "$(readlink -f -- "$lib")")
	fi
	# PyTorch's wheels bring their own libcupti (13.0.48 in cu130 wheels).
	torch=$(bounded 120 "$PYTHON" - 2>/dev/null <<'PY'
import importlib.metadata as m
try:
    import torch
    nccl = ".".join(map(str, torch.cuda.nccl.version())) if torch.cuda.is_available() else "none"
    print(torch.__version__, torch.version.cuda, nccl, end=" ")
except Exception:
    print("none none none", end=" ")
wheels = [d.metadata["Name"] + "=" + d.version for d in m.distributions()
          if (d.metadata["Name"] or "").startswith("nvidia-cuda-cupti")]
print(",".join(sorted(wheels)) or "none")
PY
	) || torch="none none none none"
	read -r torch_version torch_cuda nccl torch_cupti <<<"$torch"
	echo "gpu-check: versions: driver ${driver:-none}, CUDA ${cuda:-none} (torch's ${torch_cuda:-none})," \
		"CUPTI ${cupti} (torch's ${torch_cupti:-none}), torch ${torch_version:-none}, NCCL ${nccl:-none}"
}

if [ "$(id -u)" -ne 0 ]; then
	note "run as root: llmprof needs BPF"
	exit 2
fi
if ! command -v nvidia-smi >/dev/null 2>&1 || ! bounded 60 nvidia-smi -L >/dev/null 2>&1; then
	echo "gpu-check: cannot check: no GPU (nvidia-smi -L failed)" >&2
	exit 77
fi
command -v "$PYTHON" >/dev/null 2>&1 || { note "$PYTHON not found"; exit 2; }
bounded 60 nvidia-smi -L
bounded 60 "$LLMPROF" --version

# A libcupti for programs that map none themselves (PyTorch maps its own).
if [ -z "${LLMPROF_CUPTI_LIBRARY:-}" ]; then
	for candidate in /usr/local/cuda/extras/CUPTI/lib64/libcupti.so \
		/usr/local/cuda/lib64/libcupti.so \
		/usr/lib/x86_64-linux-gnu/libcupti.so; do
		if [ -e "$candidate" ]; then
			export LLMPROF_CUPTI_LIBRARY=$candidate
			break
		fi
	done
fi
note "LLMPROF_CUPTI_LIBRARY=${LLMPROF_CUPTI_LIBRARY:-(none: the agent searches)}"
NVCC=${NVCC:-$(command -v nvcc || echo /usr/local/cuda/bin/nvcc)}
print_versions

# check_kernels FOLDED EVENTS MAPPING SUMMARY [TRACE]
#   MAPPING: "EVENT:LEAF:LAUNCHER:PER[:TOLERANCE];..."; EVENT the program's
#   "event EVENT TOTAL_US COUNT" line (EVENTS), LEAF the [gpu] leaf (a
#   prefix; "*" any GPU leaf under LAUNCHER), LAUNCHER the frame that must be
#   on its launch stack, PER the GPU spans per operation ("+": one or more),
#   TOLERANCE a wider one for this entry.  Compares the GPU time under
#   LAUNCHER in FOLDED (weights in microseconds) with the CUDA-event total,
#   and counts the spans in TRACE (a Chrome trace of another run of the
#   same program; else in the SUMMARY's top kernels) against COUNT x PER.
#   Prints "FIGURE|..." lines for the table.
check_kernels() {
	bounded 120 "$PYTHON" - "$1" "$2" "$3" "$TOLERANCE" "$4" "${5:-}" <<'PY'
import json, re, sys
folded, events, mapping, tolerance, summary, trace = sys.argv[1:7]
tolerance = float(tolerance)
entries = []
for item in mapping.split(";"):
    fields = item.split(":")
    entries.append({"event": fields[0], "leaf": fields[1], "launcher": fields[2],
                    "per": fields[3],
                    "tolerance": float(fields[4]) if len(fields) > 4 else tolerance})
timed, counted = {}, {}
for line in open(events):
    parts = line.split()
    if len(parts) == 4 and parts[0] == "event":
        timed[parts[1]] = float(parts[2])
        counted[parts[1]] = int(parts[3])
# Span counts: by name from the trace, else the GPU summary's top kernels
# ("  12.3%  45.600 ms  300  name").
spans = {}
if trace:
    for e in json.load(open(trace))["traceEvents"]:
        if e["ph"] == "X" and str(e.get("cat", "")).startswith("gpu."):
            spans[e["name"]] = spans.get(e["name"], 0) + 1
else:
    for line in open(summary):
        m = re.match(r"\s+[0-9.]+%\s+[0-9.]+ ms\s+([0-9]+)\s+(.*)$", line)
        if m:
            spans[m.group(2).strip()] = int(m.group(1))
named = [e["leaf"] for e in entries if e["leaf"] != "*"]

def leaf_matches(entry, name):
    if entry["leaf"] == "*":
        # The rest: what no other entry names, and no copy or set.
        return not any(name.startswith(n) for n in named) and \
            not name.startswith(("memcpy", "memset"))
    return name.startswith(entry["leaf"])

stacks = []
for line in open(folded):
    stack, _, weight = line.rstrip("\n").rpartition(" ")
    frames = stack.split(";")
    if frames[-1].startswith("[gpu] "):
        stacks.append((frames[:-1], frames[-1][len("[gpu] "):], int(weight)))
bad = 0
for e in entries:
    event_us, ops = timed.get(e["event"]), counted.get(e["event"])
    if event_us is None:
        print(f"FAIL: {e['event']}: the program printed no CUDA-event timing"); bad += 1; continue
    launcher = re.compile(re.escape(e["launcher"]) + r"\b")
    under = elsewhere = 0
    for frames, name, weight in stacks:
        if not leaf_matches(e, name):
            continue
        if any(launcher.match(f) for f in frames):
            under += weight
        elif e["leaf"] != "*":
            elsewhere += weight
    if not under or elsewhere > 0.01 * under:
        print(f"FAIL: {e['event']}: {under} us under {e['launcher']}, {elsewhere} us elsewhere")
        bad += 1
    else:
        print(f"PASS: {e['event']} is launched from {e['launcher']}")
    ratio = under / event_us if event_us else 0
    verdict = "PASS" if abs(ratio - 1) <= e["tolerance"] else "FAIL"
    bad += verdict == "FAIL"
    print(f"{verdict}: {e['event']}: llmprof {under} us, CUDA events {event_us:.0f} us, ratio {ratio:.3f}")
    print(f"FIGURE|{e['event']} GPU time|{under} us|{event_us:.0f} us (events)|{ratio:.3f}|{verdict}")
    # Counts, not only times: one record per operation, no more.
    got = sum(n for name, n in spans.items() if leaf_matches(e, name))
    if e["per"] == "+":
        want = f">= {ops}"
        ok = got >= ops
    else:
        want = str(ops * int(e["per"]))
        ok = got == ops * int(e["per"])
    verdict = "PASS" if ok else "FAIL"
    bad += verdict == "FAIL"
    print(f"{verdict}: {e['event']}: llmprof counted {got} GPU spans, the program made {want}")
    print(f"FIGURE|{e['event']} count|{got}|{want}|-|{verdict}")
sys.exit(1 if bad else 0)
PY
}

# check_torch FOLDED EVENTS SUMMARY: GPU time of all kernels under step()
# against the matmuls' CUDA-event total; the count of the main kernel (the
# GPU summary's first) against the number of matmuls (one more where the
# warm-up matmul runs the same kernel).
check_torch() {
	bounded 120 "$PYTHON" - "$1" "$2" "$TOLERANCE" "$3" <<'PY'
import re, sys
folded, events, tolerance, summary = sys.argv[1], sys.argv[2], float(sys.argv[3]), sys.argv[4]
event_us = matmuls = None
for line in open(events):
    parts = line.split()
    if len(parts) == 4 and parts[:2] == ["event", "matmul"]:
        event_us = float(parts[2])
        matmuls = int(parts[3])
main_kernel = None
for line in open(summary):
    m = re.match(r"\s+[0-9.]+%\s+[0-9.]+ ms\s+([0-9]+)\s+(.*)$", line)
    if m and "memcpy" not in m.group(2) and "memset" not in m.group(2):
        main_kernel = (m.group(2).strip(), int(m.group(1)))
        break
under = elsewhere = 0
kernels = {}
for line in open(folded):
    stack, _, weight = line.rstrip("\n").rpartition(" ")
    frames = stack.split(";")
    if not frames[-1].startswith("[gpu] ") or "memcpy" in frames[-1] or "memset" in frames[-1]:
        continue
    if any(f.startswith("step (torch_matmul.py)") for f in frames):
        under += int(weight)
        kernels[frames[-1]] = kernels.get(frames[-1], 0) + int(weight)
    else:
        elsewhere += int(weight)
bad = 0
if event_us is None:
    print("FAIL: the PyTorch script printed no event timing"); sys.exit(1)
top = ", ".join(f"{k} {v} us" for k, v in sorted(kernels.items(), key=lambda kv: -kv[1])[:3])
if under and under >= 0.9 * (under + elsewhere):
    print(f"PASS: kernels under step(): {top}")
else:
    print(f"FAIL: {under} us of kernels under step(), {elsewhere} us elsewhere"); bad += 1
ratio = under / event_us if event_us else 0
verdict = "PASS" if abs(ratio - 1) <= tolerance else "FAIL"
bad += verdict == "FAIL"
print(f"{verdict}: matmul: llmprof {under} us under step(), CUDA events {event_us:.0f} us, ratio {ratio:.3f}")
print(f"FIGURE|torch record: matmul GPU time|{under} us|{event_us:.0f} us (events)|{ratio:.3f}|{verdict}")
count = main_kernel[1] if main_kernel else 0
verdict = "PASS" if main_kernel and matmuls <= count <= matmuls + 1 else "FAIL"
bad += verdict == "FAIL"
print(f"{verdict}: matmul: main kernel {main_kernel[0] if main_kernel else '(none)'} x{count}, "
      f"{matmuls} matmuls")
print(f"FIGURE|torch record: main kernel count|{count}|{matmuls} (+1 warm-up)|-|{verdict}")
sys.exit(1 if bad else 0)
PY
}

# check_attach SPEEDSCOPE FOLDED EVENTS: mean GPU time per matmul in the
# attached window against the script's CUDA-event mean.
check_attach() {
	bounded 120 "$PYTHON" - "$1" "$2" "$3" "$TOLERANCE" <<'PY'
import json, sys
speedscope, folded, events, tolerance = sys.argv[1], sys.argv[2], sys.argv[3], float(sys.argv[4])
event_mean = None
for line in open(events):
    parts = line.split()
    if len(parts) == 3 and parts[:2] == ["event_mean", "matmul"]:
        event_mean = float(parts[2])
doc = json.load(open(speedscope))
names = [f["name"] for f in doc["shared"]["frames"]]
durations = {}
for profile in doc["profiles"]:
    if profile.get("type") != "evented" or not profile.get("name", "").startswith("GPU"):
        continue
    opened = {}
    for e in profile["events"]:
        if e["type"] == "O":
            opened[e["frame"]] = e["at"]
        elif e["frame"] in opened:
            name = names[e["frame"]]
            durations.setdefault(name, []).append(e["at"] - opened.pop(e["frame"]))
kernels = {k: v for k, v in durations.items() if "memcpy" not in k and "memset" not in k}
bad = 0
if not kernels or event_mean is None:
    print(f"FAIL: attach: kernels {sorted(kernels)}, event mean {event_mean}"); sys.exit(1)
# Every matmul runs its main kernel once: its count is the matmul count.
main = max(kernels, key=lambda k: sum(kernels[k]))
count = len(kernels[main])
total = sum(sum(v) for v in kernels.values())
mean = total / count
under = elsewhere = 0
for line in open(folded):
    stack, _, weight = line.rstrip("\n").rpartition(" ")
    frames = stack.split(";")
    if frames[-1].startswith("[gpu] ") and "mem" not in frames[-1]:
        if any(f.startswith("step (torch_matmul.py)") for f in frames):
            under += int(weight)
        else:
            elsewhere += int(weight)
if under and under >= 0.9 * (under + elsewhere):
    print(f"PASS: attach: kernels under step() ({main} x{count})")
else:
    print(f"FAIL: attach: {under} us under step(), {elsewhere} us elsewhere"); bad += 1
ratio = mean / event_mean
verdict = "PASS" if abs(ratio - 1) <= tolerance else "FAIL"
bad += verdict == "FAIL"
print(f"{verdict}: attach: {mean:.1f} us GPU per matmul, CUDA events {event_mean:.1f} us, ratio {ratio:.3f}")
print(f"FIGURE|attach: GPU time per matmul|{mean:.1f} us|{event_mean:.1f} us (events)|{ratio:.3f}|{verdict}")
# The window's count has no reference here; the third attach's trace
# checks one record per launch.
verdict = "PASS" if count > 0 else "FAIL"
bad += verdict == "FAIL"
print(f"FIGURE|attach: main kernel count|{count}|> 0 in the window|-|{verdict}")
sys.exit(1 if bad else 0)
PY
}

# build_named_kernels: tests/gpu/named_kernels.cu into $WORK/named_kernels,
# with cuBLAS where nvcc can link it (named_cublas=1), else without.
build_named_kernels() {
	local flags=(-O2 -g -Xcompiler "-fno-omit-frame-pointer,-fno-optimize-sibling-calls")
	if bounded "$STEP_TIMEOUT" "$NVCC" "${flags[@]}" -DWITH_CUBLAS -o "$WORK/named_kernels" \
		"$SRC/tests/gpu/named_kernels.cu" -lcublas 2>"$WORK/named.build"; then
		named_cublas=1
		return 0
	fi
	note "no cuBLAS build: $(tail -1 "$WORK/named.build")"
	bounded "$STEP_TIMEOUT" "$NVCC" "${flags[@]}" -o "$WORK/named_kernels" "$SRC/tests/gpu/named_kernels.cu"
}

# check_timeline TRACE NAME TITLE [ARGS...]: tests/gpu/check_timeline.py on
# a Chrome trace (every GPU span after its launch, within LAUNCH_BOUND_MS),
# passed or failed as TITLE; its figures go to the table.
check_timeline() {
	local trace=$1 name=$2 title=$3
	shift 3
	if bounded 120 "$PYTHON" "$SRC/tests/gpu/check_timeline.py" "$trace" --bound-ms "$LAUNCH_BOUND_MS" "$@" \
		>"$WORK/$name.timeline" 2>&1; then
		cat "$WORK/$name.timeline"
		pass "$title"
	else
		cat "$WORK/$name.timeline"
		fail "$title"
	fi
}

# print_figures: one table of every figure the checks printed as
# "FIGURE|what|llmprof|reference|ratio|verdict" in WORK/*.check and
# WORK/*.timeline, in the order the checks ran.
print_figures() {
	local file
	echo "gpu-check: figures"
	printf '  %-44s %-24s %-26s %-7s %s\n' "figure" "llmprof" "reference" "ratio" "verdict"
	for file in "$WORK"/named.check "$WORK"/named.timeline "$WORK"/torch.check \
		"$WORK"/attach.check "$WORK"/attach3.timeline "$WORK"/memory.check "$WORK"/nccl.check; do
		[ -f "$file" ] || continue
		{ grep '^FIGURE|' "$file" || true; } | while IFS='|' read -r _ what got want ratio verdict; do
			printf '  %-44s %-24s %-26s %-7s %s\n' "$what" "$got" "$want" "$ratio" "$verdict"
		done
	done
}

# 1. CUDA C, record: named kernels, copies from pageable and pinned memory,
# a CUDA graph, two launching threads and cuBLAS (driver-API launches).
if [ -x "$NVCC" ]; then
	named_cublas=0
	if build_named_kernels; then
		mapping="spin_alpha:spin_alpha:launch_alpha:1;spin_beta:spin_beta:launch_beta:1"
		mapping+=";spin_gamma<3>:spin_gamma<3>:launch_gamma:1"
		# A staged pageable copy is several DMA transfers inside the
		# events: a wider bound for the copies.
		mapping+=";memcpy_pageable:memcpy HtoD (pageable):copy_pageable:1:0.25"
		mapping+=";memcpy_pinned:memcpy HtoD (pinned):copy_pinned:1:0.25"
		mapping+=";graph:graph_node_:launch_graph:2"
		mapping+=";spin_thread_a:spin_thread_a:thread_a_loop:1"
		mapping+=";spin_thread_b:spin_thread_b:thread_b_loop:1"
		if [ "$named_cublas" -eq 1 ]; then
			mapping+=";cublas_sgemm:*:launch_cublas:+"
		fi
		# Launch stacks from the folded view; counts and the timeline from
		# a Chrome trace of a second run.
		if bounded "$STEP_TIMEOUT" "$LLMPROF" record -o "$WORK/named.folded" -- "$WORK/named_kernels" 300 \
			>"$WORK/named.events" 2>"$WORK/named.stderr" &&
			bounded "$STEP_TIMEOUT" "$LLMPROF" record -f chrome -o "$WORK/named.trace.json" -- \
				"$WORK/named_kernels" 300 >"$WORK/named2.events" 2>"$WORK/named2.stderr"; then
			cat "$WORK/named.stderr" >&2
			# record exits 0 whatever the command did: the program must
			# have finished both times.
			if ! grep -q '^checksum' "$WORK/named.events" ||
				! grep -q '^checksum' "$WORK/named2.events"; then
				fail "named_kernels failed: $(grep -h '^named_kernels:' "$WORK/named.stderr" \
					"$WORK/named2.stderr" | head -1)"
			elif check_kernels "$WORK/named.folded" "$WORK/named.events" "$mapping" \
				"$WORK/named.stderr" "$WORK/named.trace.json" | tee "$WORK/named.check"; [ "${PIPESTATUS[0]}" -eq 0 ]; then
				pass "CUDA C program under record"
			else
				fail "CUDA C program under record"
			fi
			if grep -q '^checksum' "$WORK/named2.events"; then
				check_timeline "$WORK/named.trace.json" named \
					"CUDA C program: CPU and GPU timelines agree" \
					--distinct-threads spin_thread_a,spin_thread_b
			fi
		else
			cat "$WORK/named.stderr" "$WORK/named2.stderr" >&2
			fail "llmprof record of named_kernels failed"
		fi
		if [ "$named_cublas" -eq 0 ]; then
			cannot_check "no cuBLAS (libcublas): driver-API launches"
		fi
	else
		fail "nvcc could not build tests/gpu/named_kernels.cu"
	fi
else
	cannot_check "no nvcc ($NVCC): the CUDA C program"
fi

# 2. PyTorch, record.
if bounded 120 "$PYTHON" -c 'import torch, sys; sys.exit(0 if torch.cuda.is_available() else 1)' 2>/dev/null; then
	if bounded "$STEP_TIMEOUT" "$LLMPROF" record -o "$WORK/torch.folded" -- "$PYTHON" "$SRC/tests/gpu/torch_matmul.py" \
		--seconds 10 >"$WORK/torch.events" 2>"$WORK/torch.stderr"; then
		cat "$WORK/torch.stderr" >&2
		if check_torch "$WORK/torch.folded" "$WORK/torch.events" "$WORK/torch.stderr" |
			tee "$WORK/torch.check"; [ "${PIPESTATUS[0]}" -eq 0 ]; then
			pass "PyTorch under record"
		else
			fail "PyTorch under record"
		fi
	else
		cat "$WORK/torch.stderr" >&2
		fail "llmprof record of the PyTorch loop failed"
	fi

	# 3. PyTorch, attach to a running loop.
	# The target under timeout(1): llmprof attaches to timeout's child.
	timeout --kill-after=10 180 "$PYTHON" "$SRC/tests/gpu/torch_matmul.py" --seconds 40 --ready \
		>"$WORK/attach.events" 2>"$WORK/attach.target.stderr" &
	background_pid=$!
	target_pid=
	for _ in $(seq 600); do
		grep -q '^ready' "$WORK/attach.events" 2>/dev/null && break
		kill -0 "$background_pid" 2>/dev/null || break
		sleep 0.1
	done
	target_pid=$(pgrep -P "$background_pid" | head -1) || true
	if ! grep -q '^ready' "$WORK/attach.events" || [ -z "$target_pid" ]; then
		fail "the PyTorch target did not get ready"
	else
		sleep 2
		attach_ok=1
		bounded 60 "$LLMPROF" attach -p "$target_pid" -d 10 -f speedscope -o "$WORK/attach.json" \
			2>"$WORK/attach.stderr" || attach_ok=0
		cat "$WORK/attach.stderr" >&2
		# A second attach to the same process: the folded view, with launch
		# stacks (speedscope's GPU streams carry kernels only), and proof
		# that the agent starts again after the first llmprof is gone.
		bounded 60 "$LLMPROF" attach -p "$target_pid" -d 5 -o "$WORK/attach.folded" \
			2>>"$WORK/attach.stderr" || attach_ok=0
		# A third attach: the agent already loaded starts once more; its
		# Chrome trace has the launches, so the timelines must agree, with
		# one kernel record per launch.
		if bounded 60 "$LLMPROF" attach -p "$target_pid" -d 3 -f chrome -o "$WORK/attach3.trace.json" \
			2>"$WORK/attach3.stderr" && grep -q "GPU summary" "$WORK/attach3.stderr"; then
			pass "third attach"
			check_timeline "$WORK/attach3.trace.json" attach3 \
				"third attach: CPU and GPU timelines agree, one record per launch" \
				--unique-correlation
		else
			fail "third attach: $(tail -3 "$WORK/attach3.stderr")"
		fi
		if ! kill -0 "$background_pid" 2>/dev/null; then
			fail "the PyTorch target died during attach"
		fi
		status=0
		wait "$background_pid" || status=$?
		background_pid=
		if [ "$status" -ne 0 ]; then
			fail "the attached PyTorch target exited $status"
			cat "$WORK/attach.target.stderr" >&2
		elif ! grep -q '^checksum' "$WORK/attach.events"; then
			fail "the attached PyTorch target printed no checksum"
		else
			pass "the attached PyTorch target ran on and exited 0"
		fi
		if [ "$attach_ok" -eq 1 ] &&
			check_attach "$WORK/attach.json" "$WORK/attach.folded" "$WORK/attach.events" |
			tee "$WORK/attach.check" && [ "${PIPESTATUS[0]}" -eq 0 ]; then
			pass "PyTorch under attach"
		else
			fail "PyTorch under attach"
		fi
	fi

	# 4. GPU memory: the peak by allocating stack against what PyTorch's
	# caching allocator says it reserved (it gets every segment from
	# cudaMalloc and frees none without empty_cache()).
	if bounded "$STEP_TIMEOUT" "$LLMPROF" record --gpu-memory -o "$WORK/memory.folded" -- "$PYTHON" \
		"$SRC/tests/gpu/torch_memory.py" >"$WORK/memory.events" 2>"$WORK/memory.stderr"; then
		cat "$WORK/memory.stderr" >&2
		if bounded 120 "$PYTHON" - "$WORK/memory.folded" "$WORK/memory.events" <<'PY' | tee "$WORK/memory.check"; [ "${PIPESTATUS[0]}" -eq 0 ]; then
import sys
folded, events = sys.argv[1:3]
reserved = next(int(l.split()[1]) for l in open(events) if l.startswith("reserved_peak "))
total = under_weights = 0
for line in open(folded):
    stack, _, weight = line.rstrip("\n").rpartition(" ")
    if "[before attach]" in stack:
        continue
    total += int(weight)
    if "load_weights" in stack:
        under_weights += int(weight)
mib = 1 << 20
print(f"memory peak {total / mib:.1f} MiB by stack, PyTorch reserved {reserved / mib:.1f} MiB, "
      f"{under_weights / mib:.1f} MiB under load_weights")
ok = reserved <= total <= reserved + 64 * mib
print(f"FIGURE|GPU memory peak by stack|{total / mib:.1f} MiB|{reserved / mib:.1f} MiB reserved (+64)|"
      f"{total / reserved if reserved else 0:.3f}|{'PASS' if ok else 'FAIL'}")
print(f"FIGURE|GPU memory under load_weights|{under_weights / mib:.1f} MiB|>= 256 MiB|-|"
      f"{'PASS' if under_weights >= 256 * mib else 'FAIL'}")
# Libraries below PyTorch (cuBLAS, NCCL) may cudaMalloc a little of their own.
if not (reserved <= total <= reserved + 64 * mib):
    print("FAIL: the peak by stack does not match max_memory_reserved()"); sys.exit(1)
if under_weights < 256 * mib:
    print("FAIL: less than the 256 MiB of weights under load_weights"); sys.exit(1)
PY
			pass "GPU memory peak under record"
		else
			fail "GPU memory peak under record"
		fi
	else
		cat "$WORK/memory.stderr" >&2
		fail "llmprof record --gpu-memory of the PyTorch model failed"
	fi
else
	cannot_check "no torch with CUDA ($PYTHON): PyTorch under record and attach, GPU memory"
fi

# 5. NCCL: one rank of torch.distributed (tests/gpu/torch_nccl.py) under
# "llmprof record -f speedscope": the NCCL table the recording wrote
# (llmprofNccl) has the script's calls and bytes per operation exactly, and
# GPU time within TOLERANCE of its CUDA events; the work sits on its GPU
# stream named with its collective.
check_nccl() {
	local json=$WORK/nccl.json events=$WORK/nccl.events stderr=$WORK/nccl.stderr
	if ! bounded 120 "$PYTHON" -c 'import sys, torch, torch.distributed as d
sys.exit(0 if torch.cuda.is_available() and d.is_nccl_available() else 1)' 2>/dev/null; then
		cannot_check "no torch.distributed with NCCL ($PYTHON): NCCL collectives"
		return
	fi
	if ! bounded "$STEP_TIMEOUT" "$LLMPROF" record -f speedscope -o "$json" -- "$PYTHON" "$SRC/tests/gpu/torch_nccl.py" \
		>"$events" 2>"$stderr"; then
		cat "$stderr" >&2
		fail "llmprof record of the torch.distributed script failed"
		return
	fi
	sed -n '/NCCL:/,/exposed communication/p' "$stderr" >&2
	if grep -q '^nccl_library none$' "$events"; then
		cannot_check "this PyTorch links NCCL statically: no libnccl to probe"
		return
	fi
	if check_nccl_table "$json" "$events" | tee "$WORK/nccl.check"; [ "${PIPESTATUS[0]}" -eq 0 ]; then
		pass "NCCL collectives under record"
	else
		fail "NCCL collectives under record"
	fi
}

# check_nccl_table SPEEDSCOPE EVENTS: llmprofNccl against the script's lines
# "collective OPERATION BYTES_PER_CALL CALLS TOTAL_US".
check_nccl_table() {
	bounded 120 "$PYTHON" - "$1" "$2" "$TOLERANCE" <<'PY'
import json, sys
document, events, tolerance = json.load(open(sys.argv[1])), sys.argv[2], float(sys.argv[3])
want = {}
for line in open(events):
    parts = line.split()
    if len(parts) == 5 and parts[0] == "collective":
        want[parts[1]] = (int(parts[2]), int(parts[3]), float(parts[4]))
nccl = document.get("llmprofNccl")
if not want or not nccl:
    print("FAIL: no NCCL table in the profile" if want else "FAIL: the script printed no timings")
    sys.exit(1)
bad = 0
for operation, (size, calls, event_us) in sorted(want.items()):
    rows = [r for r in nccl["rows"] if r["operation"] == operation and r["bucket"] == size]
    if len(rows) != 1:
        print(f"FAIL: {operation}: no single row of {size} bytes: {nccl['rows']}")
        bad += 1
        continue
    row = rows[0]
    sizes_ok = row["calls"] == calls and row["bytes"] == size * calls and row["ranks"] == 1
    print(f"{'PASS' if sizes_ok else 'FAIL'}: {operation}: llmprof {row['calls']} calls, "
          f"{row['bytes']} bytes, {row['ranks']} rank; the script {calls} calls of {size} bytes")
    print(f"FIGURE|NCCL {operation}: calls and bytes|{row['calls']} x {row['bytes'] // max(row['calls'], 1)} B|"
          f"{calls} x {size} B|-|{'PASS' if sizes_ok else 'FAIL'}")
    bad += not sizes_ok
    ratio = row["gpuNs"] / 1000 / event_us if event_us else 0
    verdict = "PASS" if abs(ratio - 1) <= tolerance and row["timedCalls"] == calls else "FAIL"
    bad += verdict == "FAIL"
    algbw = row["timedSize"] / row["gpuNs"] if row["gpuNs"] else 0
    print(f"FIGURE|NCCL {operation}: GPU time|{row['gpuNs'] / 1000:.0f} us|{event_us:.0f} us (events)|"
          f"{ratio:.3f}|{verdict}")
    print(f"{verdict}: {operation}: llmprof {row['gpuNs'] / 1000:.0f} us of GPU time over "
          f"{row['timedCalls']} calls ({algbw:.1f} GB/s), CUDA events {event_us:.0f} us, "
          f"ratio {ratio:.3f}")
names = [f["name"] for f in document["shared"]["frames"]]
for operation, (size, _, _) in want.items():
    label = f"({operation} {size / (1 << 20):.1f} MiB)"
    if not any(n.endswith(label) for n in names):
        print(f"FAIL: no GPU work on a stream named with {label}")
        bad += 1
print(f"exposed communication {nccl['exposedNs'] / 1e6:.3f} ms of {nccl['kernelNs'] / 1e6:.3f} ms")
sys.exit(1 if bad else 0)
PY
}

# 6. Overhead and robustness on PyTorch (tests/gpu/torch_steps.py), each
# step bounded and printing PASS or FAIL with its figures:
#   a. a launch-bound loop's step time before and while llmprof is attached
#      (the overhead, within OVERHEAD_LIMIT, default 0.25);
#   b. a CUDA-graph loop attached twice: both attaches see its kernels and
#      the target runs on;
#   c. record --gpu-memory with PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True
#      (cuMemCreate/cuMemMap through the driver's entry points): the peak by
#      stack matches max_memory_reserved() (up to 64 MiB more);
#   d. a torch.profiler window inside a record run: the application's own
#      profiler still gets its kernels, and llmprof exits 0;
#   e. two ranks each with CUDA_VISIBLE_DEVICES=0 under one record: the GPU
#      summary has a device 0 row for each rank.
OVERHEAD_LIMIT=${OVERHEAD_LIMIT:-0.25}
steps=$SRC/tests/gpu/torch_steps.py

# median_between FILE FROM TO: the median of the "second EPOCH US" lines
# with FROM <= EPOCH < TO.
median_between() {
	awk -v from="$2" -v to="$3" '$1 == "second" && $2 >= from && $2 < to { print $3 }' "$1" |
		sort -n | awk '{ v[NR] = $1 } END { if (NR) print v[int((NR + 1) / 2)] }'
}

# start_target NAME ARGS...: a torch_steps.py target under timeout(1) that
# has printed "ready"; sets target_pid (empty when it did not get ready).
start_target() {
	local name=$1 waiter
	shift
	timeout --kill-after=10 120 "$PYTHON" "$steps" "$@" --ready >"$WORK/$name.events" \
		2>"$WORK/$name.target.stderr" &
	waiter=$!
	target_pid=
	for _ in $(seq 600); do
		grep -q '^ready' "$WORK/$name.events" 2>/dev/null && break
		kill -0 "$waiter" 2>/dev/null || break
		sleep 0.1
	done
	grep -q '^ready' "$WORK/$name.events" && target_pid=$(pgrep -P "$waiter" | head -1) || true
	target_waiter=$waiter
}

check_steps() {
	local before during t0 t1 kernels total reserved rows
	if ! bounded 120 "$PYTHON" -c 'import torch, sys; sys.exit(0 if torch.cuda.is_available() else 1)' 2>/dev/null; then
		cannot_check "no torch with CUDA ($PYTHON): overhead and robustness steps"
		return
	fi
	# a. Overhead of attach on a launch-bound loop.
	start_target overhead launch --seconds 24
	if [ -z "$target_pid" ]; then
		fail "overhead: the launch-bound target did not get ready"
	else
		sleep 8
		t0=$(date +%s)
		bounded 60 "$LLMPROF" attach -p "$target_pid" -d 8 -o "$WORK/overhead.folded" \
			2>"$WORK/overhead.stderr" || fail "overhead: attach failed: $(tail -3 "$WORK/overhead.stderr")"
		t1=$(date +%s)
		wait "$target_waiter" || true
		before=$(median_between "$WORK/overhead.events" 0 $((t0 - 1)))
		during=$(median_between "$WORK/overhead.events" $((t0 + 2)) $((t1 - 1)))
		if [ -n "$before" ] && [ -n "$during" ]; then
			if awk -v b="$before" -v d="$during" -v l="$OVERHEAD_LIMIT" 'BEGIN { exit !(d <= b * (1 + l)) }'; then
				pass "overhead: launch-bound step $before us alone, $during us attached ($(awk -v b="$before" -v d="$during" 'BEGIN { printf "%+.1f%%", 100 * (d / b - 1) }'))"
			else
				fail "overhead: launch-bound step $before us alone, $during us attached ($(awk -v b="$before" -v d="$during" 'BEGIN { printf "%+.1f%%", 100 * (d / b - 1) }'), limit $OVERHEAD_LIMIT)"
			fi
			grep -h "launch stacks:" "$WORK/overhead.stderr" >&2 || true
		else
			fail "overhead: no step times before ($before) or during ($during) the attach"
		fi
	fi
	# b. A CUDA-graph loop attached twice.
	start_target graph graph --seconds 30
	if [ -z "$target_pid" ]; then
		fail "graph: the CUDA-graph target did not get ready"
	else
		sleep 2
		for round in 1 2; do
			if bounded 60 "$LLMPROF" attach -p "$target_pid" -d 4 -o "$WORK/graph$round.folded" \
				2>"$WORK/graph$round.stderr"; then
				kernels=$(sed -n 's/^ *kernels \([0-9]*\) .*/\1/p' "$WORK/graph$round.stderr" | head -1)
				if [ "${kernels:-0}" -gt 0 ] && kill -0 "$target_pid" 2>/dev/null; then
					pass "graph: attach $round saw ${kernels} kernels of the graph replays"
				else
					fail "graph: attach $round saw ${kernels:-no} kernels, target alive: $(kill -0 "$target_pid" 2>/dev/null && echo yes || echo no)"
				fi
			else
				fail "graph: attach $round failed: $(tail -3 "$WORK/graph$round.stderr")"
			fi
		done
		if wait "$target_waiter"; then
			pass "graph: the target ran on after two attaches ($(sed -n 's/^graph_replays //p' "$WORK/graph.events") replays)"
		else
			fail "graph: the target exited non-zero after two attaches"
		fi
	fi
	# c. Expandable segments: the driver's entry points.
	if PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True bounded "$STEP_TIMEOUT" "$LLMPROF" record --no-gpu \
		--view memory-peak -o "$WORK/expandable.folded" -- "$PYTHON" "$steps" memory --seconds 5 \
		>"$WORK/expandable.events" 2>"$WORK/expandable.stderr"; then
		total=$(awk '{ s += $NF } END { print s + 0 }' "$WORK/expandable.folded")
		reserved=$(sed -n 's/^max_reserved //p' "$WORK/expandable.events")
		if [ -n "$reserved" ] && [ "$total" -ge "$reserved" ] && [ "$total" -le $((reserved + 64 * 1048576)) ]; then
			pass "expandable segments: peak by stack $((total / 1048576)) MiB, max_memory_reserved $((reserved / 1048576)) MiB"
		else
			fail "expandable segments: peak by stack $((total / 1048576)) MiB, max_memory_reserved $((${reserved:-0} / 1048576)) MiB"
		fi
	else
		fail "expandable segments: record failed: $(tail -3 "$WORK/expandable.stderr")"
	fi
	# d. The application's own torch.profiler inside a record run.
	if bounded "$STEP_TIMEOUT" "$LLMPROF" record -o "$WORK/profiler.folded" -- "$PYTHON" "$steps" profiler \
		--seconds 9 >"$WORK/profiler.events" 2>"$WORK/profiler.stderr"; then
		kernels=$(sed -n 's/^profiler_kernels //p' "$WORK/profiler.events")
		if [ "${kernels:-0}" -gt 0 ]; then
			pass "torch.profiler inside record: it got $kernels kernel events; llmprof: $(grep -h -m1 -E '^ *kernels [0-9]|CPU only' "$WORK/profiler.stderr" | sed 's/^ *//')"
		else
			fail "torch.profiler inside record: it got ${kernels:-no} kernel events"
		fi
	else
		fail "torch.profiler inside record: record failed: $(tail -3 "$WORK/profiler.stderr")"
	fi
	# e. Two ranks on their own "device 0".
	if bounded "$STEP_TIMEOUT" "$LLMPROF" record -o "$WORK/ranks.folded" -- sh -c \
		"RANK=0 CUDA_VISIBLE_DEVICES=0 '$PYTHON' '$steps' launch --seconds 3 >/dev/null &
		 RANK=1 CUDA_VISIBLE_DEVICES=0 '$PYTHON' '$steps' launch --seconds 6 >/dev/null; wait" \
		2>"$WORK/ranks.stderr"; then
		rows=$(grep -cE '^ *device 0 of .*\[rank [01]\]' "$WORK/ranks.stderr" || true)
		if [ "$rows" = 2 ]; then
			pass "per-rank devices: $(grep -E '^ *device 0 of' "$WORK/ranks.stderr" | sed 's/^ *//' | tr '\n' ';')"
		else
			fail "per-rank devices: $rows device 0 rows named with a rank: $(grep -A3 'GPU summary' "$WORK/ranks.stderr")"
		fi
	else
		fail "per-rank devices: record failed: $(tail -3 "$WORK/ranks.stderr")"
	fi
}

check_nccl
check_steps

echo "gpu-check: outputs in $WORK"
echo "gpu-check: summary"
for line in "${results[@]}"; do
	echo "  $line"
done
print_figures
if [ "$failures" -ne 0 ]; then
	echo "gpu-check: $failures check(s) failed"
	exit 1
fi
if [ "${#cannot[@]}" -ne 0 ]; then
	echo "gpu-check: cannot check: ${cannot[*]}"
	exit 77
fi
if [ "${#results[@]}" -eq 0 ]; then
	echo "gpu-check: cannot check: nothing ran"
	exit 77
fi
echo "gpu-check: all checks passed"
