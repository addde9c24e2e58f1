#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0
"""Checks a Chrome trace (Trace Event Format JSON) as Perfetto reads it.

  check_chrome_trace.py FILE [--self NAME=PCT]... [--total NAME=PCT]...
                        [--tolerance PP] [--gpu-kernel NAME]...
                        [--gpu-ratio A/B=R] [--off-cpu] [--match-folded FOLDED]

Structure: every event has ph, ts, pid and tid; B/E balanced per thread and
in time order; X durations >= 0; every track with slices has a thread_name.
Shares are of the time each function is the innermost slice (kernel slices
left out, as the folded checks strip trailing kernel frames) or anywhere on
the stack, over all CPU slice time.  GPU kernels must be X events on a track
of a process named "GPU N"; flows ("s"/"f") go from a CPU thread to a GPU
track.  --match-folded: every function with 5 % or
more self weight in FOLDED (the same profile) has that self share of the
trace's slice time, within the tolerance.  Exits 1 with a message on the first failure.
"""
import argparse
import json
import sys


def fail(msg):
    print("FAIL: " + msg, file=sys.stderr)
    sys.exit(1)


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("file")
    parser.add_argument("--self", action="append", default=[])
    parser.add_argument("--total", action="append", default=[])
    parser.add_argument("--tolerance", type=float, default=3.0)
    parser.add_argument("--gpu-kernel", action="append", default=[])
    parser.add_argument("--gpu-ratio")
    parser.add_argument("--off-cpu", action="store_true")
    parser.add_argument("--match-folded")
    args = parser.parse_args()

    with open(args.file, encoding="utf-8") as f:
        doc = json.load(f)
    events = doc["traceEvents"] if isinstance(doc, dict) else doc
    if not isinstance(events, list):
        fail("traceEvents is not a list")

    process_names, thread_names = {}, {}
    per_thread, flows = {}, {}
    for i, e in enumerate(events):
        for key in ("ph", "ts", "pid", "tid"):
            if key not in e:
                fail(f"event {i} has no {key}: {e}")
        if not isinstance(e["ts"], (int, float)) or e["ts"] < 0:
            fail(f"event {i}: bad ts {e['ts']!r}")
        if e["ph"] == "M":
            if e["name"] == "process_name":
                process_names[e["pid"]] = e["args"]["name"]
            elif e["name"] == "thread_name":
                thread_names[(e["pid"], e["tid"])] = e["args"]["name"]
        elif e["ph"] in ("B", "E", "X"):
            per_thread.setdefault((e["pid"], e["tid"]), []).append(e)
        elif e["ph"] in ("s", "f"):
            if "id" not in e or "name" not in e or "cat" not in e:
                fail(f"event {i}: a flow without id, name or cat: {e}")
            flows.setdefault(e["id"], {})[e["ph"]] = e
        else:
            fail(f"event {i}: unexpected phase {e['ph']!r}")

    # Launch flows: a start on a CPU thread, an end on a GPU stream bound
    # to the span there ("bp":"e"), both of one name and category.
    for flow_id, ends in flows.items():
        if set(ends) != {"s", "f"}:
            fail(f"flow {flow_id} has {sorted(ends)}, not one start and one end")
        start, end = ends["s"], ends["f"]
        if (start["name"], start["cat"]) != (end["name"], end["cat"]):
            fail(f"flow {flow_id}: its ends differ in name or category")
        if not process_names.get(end["pid"], "").startswith("GPU ") or end.get("bp") != "e":
            fail(f"flow {flow_id}: its end is not bound to a GPU span: {end}")
        if process_names.get(start["pid"], "").startswith("GPU "):
            fail(f"flow {flow_id}: it starts on a GPU track")

    self_time, total_time, gpu_time = {}, {}, {}
    cpu_total, off_cpu = 0.0, 0
    for track, track_events in per_thread.items():
        if track not in thread_names:
            fail(f"track pid {track[0]} tid {track[1]} has no thread_name")
        open_slices, last = [], 0.0
        for e in track_events:
            if e["ts"] < last and e["ph"] != "X":
                fail(f"track {track}: events out of time order at {e['ts']}")
            if e["ph"] == "X":
                if e.get("dur", -1) < 0:
                    fail(f"track {track}: X event without a duration >= 0: {e}")
                if not process_names.get(track[0], "").startswith("GPU "):
                    fail(f"X event outside a GPU track: {e}")
                gpu_time.setdefault(e["name"], []).append(e["dur"])
                continue
            if open_slices:
                span = e["ts"] - last
                user = [s for s in open_slices if s["cat"] != "kernel"] or open_slices
                leaf = user[-1]["name"]
                self_time[leaf] = self_time.get(leaf, 0.0) + span
                for name in {s["name"] for s in open_slices}:
                    total_time[name] = total_time.get(name, 0.0) + span
                cpu_total += span
            last = e["ts"]
            if e["ph"] == "B":
                if "name" not in e:
                    fail(f"track {track}: B event without a name")
                off_cpu += e.get("cat") == "off-cpu"
                open_slices.append(e)
            elif not open_slices:
                fail(f"track {track}: E without a B at {e['ts']}")
            else:
                open_slices.pop()
        if open_slices:
            fail(f"track {track}: {len(open_slices)} slices never end")

    scale = 100.0 / cpu_total if cpu_total else 0
    for spec, table, what in [(s, self_time, "self") for s in args.self] + \
                              [(s, total_time, "total") for s in args.total]:
        name, expected = spec.rsplit("=", 1)
        got = table.get(name, 0.0) * scale
        print(f"{what} {name}: {got:.2f}% (expected {expected}% +- {args.tolerance})")
        if abs(got - float(expected)) > args.tolerance:
            fail(f"{what} share of {name} is {got:.2f}% of slice time, expected {expected}%")
    if args.match_folded:
        folded, weight = {}, 0
        for line in open(args.match_folded, encoding="utf-8"):
            stack, _, count = line.rstrip("\n").rpartition(" ")
            frames = stack.split(";")
            while len(frames) > 1 and frames[-1].endswith("_[k]"):
                frames.pop()
            folded[frames[-1]] = folded.get(frames[-1], 0) + int(count)
            weight += int(count)
        for name, count in sorted(folded.items()):
            want = 100.0 * count / weight
            if want < 5:
                continue
            got = self_time.get(name, 0.0) * scale
            print(f"self {name}: {got:.2f}% (folded {want:.2f}% +- {args.tolerance})")
            if abs(got - want) > args.tolerance:
                fail(f"self share of {name} is {got:.2f}% of slice time, {want:.2f}% in folded")
    for name in args.gpu_kernel:
        if name not in gpu_time:
            fail(f"no X event {name!r} on a GPU track (have {sorted(gpu_time)[:8]})")
    if args.gpu_ratio:
        names, expected = args.gpu_ratio.rsplit("=", 1)
        a, b = names.split("/")
        ratio = sum(gpu_time.get(a, [])) / max(sum(gpu_time.get(b, [0])), 1e-9)
        print(f"GPU time {a}/{b}: {ratio:.3f} (expected {expected})")
        if abs(ratio - float(expected)) > 0.1 * float(expected):
            fail(f"GPU time ratio {a}/{b} is {ratio:.3f}, expected {expected}")
    if args.off_cpu and not off_cpu:
        fail("no off-cpu slice")
    print(f"{args.file}: valid trace, {len(events)} events, {len(per_thread)} tracks, "
          f"{cpu_total / 1e6:.3f} s of CPU slices, {sum(map(len, gpu_time.values()))} GPU spans")


if __name__ == "__main__":
    main()
