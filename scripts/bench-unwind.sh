#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# The cost of complete stacks, side by side and interleaved: a fixed-work
# program without frame pointers run with no profiler, with llmprof
# --unwind fp, --unwind ehframe and --unwind dwarf, and with perf record
# --call-graph dwarf, at 99 and 999 Hz.  Prints one table: the target's slowdown (median of its
# own timing, as a ratio to no profiler), the profiler's own CPU seconds
# while recording and afterwards (perf script unwinds after the fact;
# llmprof has nothing left to do), its peak memory, the bytes each sample
# moves through the kernel-user buffer, the share of samples whose
# stack is whole, the BPF sample program's time per sample
# (kernel.bpf_stats_enabled, turned on for the run: its run_time_ns over
# the samples taken, the random clock's discarded ticks included), and for
# ehframe, the share of its samples whose stack the dwarf run of the same
# round also has.
#
# Usage: scripts/bench-unwind.sh [RUNS] [WORKLOAD]   (root; default 3 runs)
#   WORKLOAD c      the ground truth built -O2 -fomit-frame-pointer (default);
#                   whole = main on the stack
#   WORKLOAD torch  Debian's python3 training a small MLP with torch;
#                   whole = the stack reaches the thread's start
set -euo pipefail
cd "$(dirname "$0")/.."
runs=${1:-3}
workload=${2:-c}
build_dir=${BUILD_DIR:-build}
[ -x "$build_dir/cmd/llmprof" ] || BUILD_DIR=$build_dir scripts/build.sh >/dev/null
llmprof=$build_dir/cmd/llmprof
case $workload in
c)
	fixture=$build_dir/fixtures/ground_truth_nofp
	[ -x "$fixture" ] || cmake --build "$build_dir" --target fixture_ground_truth_nofp >/dev/null
	target=("$fixture" 0 "${ROUNDS:-1000}")
	;;
torch)
	/usr/bin/python3 -c 'import torch' 2>/dev/null ||
		{ echo "bench-unwind: needs python3-torch" >&2; exit 1; }
	target=(/usr/bin/python3 tests/unwind/fixtures/torch_mlp.py 0 "${STEPS:-150}")
	;;
*)
	echo "bench-unwind: unknown workload '$workload' (c or torch)" >&2
	exit 2
	;;
esac
command -v perf >/dev/null || { echo "bench-unwind: needs perf (apt-get install linux-perf)" >&2; exit 1; }
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

configs=(none fp-99 ehframe-99 dwarf-99 perf-99 fp-999 ehframe-999 dwarf-999 perf-999)
stats_before=$(sysctl -n kernel.bpf_stats_enabled)
sysctl -q kernel.bpf_stats_enabled=1
trap 'sysctl -q kernel.bpf_stats_enabled="$stats_before"; rm -rf "$work"' EXIT

# whole FOLDED: the percentage of samples with a whole stack.
whole() {
	if [ "$workload" = c ]; then
		python3 - "$1" <<'PY'
import sys
total = whole = 0
for line in open(sys.argv[1]):
    stack, _, count = line.rstrip("\n").rpartition(" ")
    total += int(count)
    if "main" in stack.split(";"):
        whole += int(count)
print("%.1f" % (100.0 * whole / max(total, 1)))
PY
	else
		python3 tests/unwind/check_roots.py "$1" | awk 'NR == 1 { sub("%", "", $2); print $2 }'
	fi
}

# perf script's callchains as folded stacks, to judge them as llmprof's.
perf_folded() {
	perf script -i "$1" -F comm,ip,sym 2>/dev/null | python3 -c '
import sys
stacks, frames, comm = {}, [], None
def flush():
    if comm is not None:
        key = ";".join([comm] + frames[::-1])
        stacks[key] = stacks.get(key, 0) + 1
for line in sys.stdin:
    line = line.rstrip("\n")
    if not line.strip():
        flush(); frames, comm = [], None
    elif not line[0].isspace():
        comm = line.split()[0]
    else:
        parts = line.split(None, 1)
        frames.append(parts[1].split("+0x")[0] if len(parts) > 1 else "[unknown]")
flush()
for key, count in sorted(stacks.items()):
    print(key, count)
'
}

# run_one CONFIG: prints "target_s own_cpu_s post_cpu_s peak_kib bytes_per_sample whole_pct
# bpf_ns_per_sample".
run_one() {
	local config=$1 out=$work/$1 log=$work/target.log pid profiler hz=${1#*-}
	local post=0 bytes=- samples bpf_ns=-
	"${target[@]}" >"$log" &
	pid=$!
	case $config in
	none)
		wait $pid
		echo "$(awk '/seconds/ {print $4}' "$log") 0 0 0 - - -"
		return
		;;
	fp-* | dwarf-* | ehframe-*)
		# Again for every run: another benchmark that ends meanwhile
		# puts back the setting it found.
		sysctl -q kernel.bpf_stats_enabled=1
		/usr/bin/time -f '%U %S %M' -o "$work/time" "$llmprof" attach -v -p $pid -F "$hz" \
			--unwind "${config%-*}" -o "$out.folded" 2>"$out.err" &
		profiler=$!
		wait $pid
		wait $profiler
		# What the kernel writes per sample: the record, of which a
		# stack copy fills only what the stack holds.
		bytes=$(sed -n 's/.*(records of [0-9]* bytes, \([0-9]*\) written).*/\1/p' "$out.err")
		[ -n "$bytes" ] ||
			bytes=$(sed -n 's/.*sample records of \([0-9]*\) bytes.*/\1/p' "$out.err")
		bpf_ns=$(sed -n 's/.*BPF sample program: .* \([0-9]*\) ns per sample.*/\1/p' "$out.err")
		cp "$out.folded" "$work/last-$config.folded"
		;;
	perf-*)
		/usr/bin/time -f '%U %S %M' -o "$work/time" perf record -q -e cpu-clock -F "$hz" \
			--call-graph dwarf,16384 -p $pid -o "$out.data" >/dev/null 2>&1 &
		profiler=$!
		wait $pid
		wait $profiler || true
		/usr/bin/time -f '%U %S' -o "$work/post" bash -c 'perf_folded "$1"' _ "$out.data" \
			>"$out.folded"
		read -r pu ps <"$work/post"
		post=$(echo "${pu:-0} + ${ps:-0}" | bc -l)
		samples=$(awk '{ n += $NF } END { print n }' "$out.folded")
		bytes=$(($(stat -c %s "$out.data") / (samples > 0 ? samples : 1)))
		;;
	esac
	read -r user sys kib <"$work/time"
	echo "$(awk '/seconds/ {print $4}' "$log") $(echo "$user + $sys" | bc -l) $post $kib" \
		"${bytes:--} $(whole "$out.folded") ${bpf_ns:--}"
}

command -v bc >/dev/null || { echo "bench-unwind: needs bc (apt-get install bc)" >&2; exit 1; }
export -f perf_folded
for ((i = 1; i <= runs; i++)); do
	for config in "${configs[@]}"; do
		echo "$config $(run_one "$config")" >>"$work/results"
	done
	for hz in 99 999; do
		python3 tests/unwind/compare_stacks.py "$work/last-ehframe-$hz.folded" \
			"$work/last-dwarf-$hz.folded" --strip-kernel |
			awk -v hz=$hz 'NR == 1 { sub("%", "", $1); print hz, $1 }' >>"$work/agree"
	done
	echo "bench-unwind: round $i/$runs done" >&2
done

python3 - "$work/results" "$workload" "$work/agree" <<'PY'
import statistics, sys
rows = {}
for line in open(sys.argv[1]):
    config, target, cpu, post, kib, nbytes, whole, bpf_ns = line.split()
    rows.setdefault(config, []).append((float(target), float(cpu), float(post), int(kib),
                                        nbytes, whole, bpf_ns))
agree = {}
for line in open(sys.argv[3]):
    hz, share = line.split()
    agree.setdefault(hz, []).append(float(share))
base = statistics.median(r[0] for r in rows["none"])
names = {"none": "no profiler", "fp": "llmprof --unwind fp", "dwarf": "llmprof --unwind dwarf",
         "ehframe": "llmprof --unwind ehframe", "perf": "perf --call-graph dwarf"}
print(f"workload {sys.argv[2]}")
print(f"{'profiler':<26}{'Hz':>5}{'target s':>10}{'slowdown':>10}{'own CPU s':>11}"
      f"{'after s':>9}{'peak MiB':>10}{'B/sample':>10}{'whole %':>9}{'BPF us':>8}"
      f"{'=dwarf %':>9}")
def median_of(values):
    values = [float(v) for v in values if v != "-"]
    return statistics.median(values) if values else None
for config, runs in rows.items():
    name, _, hz = config.partition("-")
    target = statistics.median(r[0] for r in runs)
    cpu = statistics.median(r[1] for r in runs)
    post = statistics.median(r[2] for r in runs)
    mib = max(r[3] for r in runs) / 1024
    nbytes, whole = median_of(r[4] for r in runs), median_of(r[5] for r in runs)
    bpf_ns = median_of(r[6] for r in runs)
    same = statistics.median(agree[hz]) if name == "ehframe" and agree.get(hz) else None
    print(f"{names[name]:<26}{hz or '-':>5}{target:>10.3f}{target / base:>10.4f}{cpu:>11.3f}"
          f"{post:>9.3f}{mib:>10.1f}{'-' if nbytes is None else f'{nbytes:.0f}':>10}"
          f"{'-' if whole is None else f'{whole:.1f}':>9}"
          f"{'-' if bpf_ns is None else f'{bpf_ns / 1000:.1f}':>8}"
          f"{'-' if same is None else f'{same:.1f}':>9}")
print(f"(medians of {len(rows['none'])} interleaved runs; slowdown = target time / no-profiler"
      " time; 'after s' = perf script's CPU to unwind and resolve perf.data; BPF us = the"
      " sample program's time per sample; =dwarf % = ehframe's samples whose stack the dwarf"
      " run of the same round has)")
PY
