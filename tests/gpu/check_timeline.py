#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0
"""Checks that the CPU and GPU timelines of an llmprof Chrome trace agree.

check_timeline.py TRACE [--bound-ms MS] [--min-linked SHARE] [--slack-us US]
                        [--count NAME=N]...
                        [--at-least NAME=N]... [--unique-correlation]
                        [--distinct-threads A,B]

Every GPU span (kernel, copy, set) that has a launch flow (the "s"/"f" pair
of category gpu.launch, from the launching thread's track to the span) must
start at or after its launch (less the clock error the flow states, as
args.clock_error_us, and --slack-us), and within --bound-ms (default 1000);
the "s" end must be on a CPU thread track inside the profile, the "f" end on
the span's own stream track.  At least --min-linked (default 0.99) of the
spans must have a launch.  --count NAME=N: exactly N spans whose name starts
with NAME; --at-least NAME=N: N or more; --unique-correlation: no two
kernels share a correlation id (one record per launch; not for CUDA graphs,
whose kernels share their graph launch's); --distinct-threads A,B: the
spans named A and those named B were launched from two different threads,
each from one.  Prints one summary line
("timeline: ..."), "FIGURE|..." lines for gpu-check's table, the failures,
and exits 1 when any check fails.
"""
import argparse
import bisect
import json
import statistics
import sys

GPU_TRACK_ID_BASE = 1000000000


def parse_counts(items):
    counts = {}
    for item in items:
        name, _, n = item.rpartition("=")
        if not name or not n.isdigit():
            sys.exit(f"check_timeline: bad count '{item}' (NAME=N)")
        counts[name] = int(n)
    return counts


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("trace")
    ap.add_argument("--bound-ms", type=float, default=1000.0)
    ap.add_argument("--min-linked", type=float, default=0.99)
    ap.add_argument("--slack-us", type=float, default=0.0)
    ap.add_argument("--count", action="append", default=[])
    ap.add_argument("--at-least", action="append", default=[])
    ap.add_argument("--unique-correlation", action="store_true")
    ap.add_argument("--distinct-threads")
    args = ap.parse_args()
    exact, at_least = parse_counts(args.count), parse_counts(args.at_least)

    doc = json.load(open(args.trace))
    events = doc["traceEvents"]
    duration_us = doc.get("otherData", {}).get("duration_us", 0)
    spans = {}
    for e in events:
        if e["ph"] == "X" and str(e.get("cat", "")).startswith("gpu."):
            spans.setdefault((e["pid"], e["tid"]), []).append(e)
    for track in spans.values():
        track.sort(key=lambda e: e["ts"])
    span_starts = {key: [e["ts"] for e in track] for key, track in spans.items()}
    starts, finishes = {}, {}
    for e in events:
        if e.get("cat") != "gpu.launch":
            continue
        if e["ph"] == "s":
            starts[e["id"]] = e
        elif e["ph"] == "f":
            finishes[e["id"]] = e

    failures = []

    def fail(text):
        failures.append(text)

    def span_at(f):
        # "bp":"e": the span on the flow's track that encloses its time
        # (spans on a stream do not overlap: the last that starts by then).
        key = (f["pid"], f["tid"])
        i = bisect.bisect_right(span_starts.get(key, []), f["ts"]) - 1
        if i < 0:
            return None
        s = spans[key][i]
        return s if f["ts"] <= s["ts"] + s["dur"] else None

    linked = {}
    launchers = {}
    delays = []
    max_slack = 0.0
    bound_us = args.bound_ms * 1000
    for flow_id, f in finishes.items():
        s = starts.get(flow_id)
        if s is None:
            fail(f"flow {flow_id}: an end on the GPU without a start on a CPU thread")
            continue
        span = span_at(f)
        if span is None:
            fail(f"flow {flow_id}: no GPU span at {f['ts']} us on track {f['pid']}/{f['tid']}")
            continue
        if f.get("bp") != "e":
            fail(f"flow {flow_id}: its end does not bind to the enclosing span")
        if s["pid"] >= GPU_TRACK_ID_BASE:
            fail(f"flow {flow_id}: launched from a GPU track")
        if s["ts"] < 0 or (duration_us and s["ts"] > duration_us + 1000):
            fail(f"flow {flow_id}: launch at {s['ts']} us, outside the profile")
        delay = span["ts"] - s["ts"]
        delays.append(delay)
        # The clocks agree to within the error llmprof states (an attached
        # agent measures CUPTI's clock against ours), and --slack-us.
        slack = f.get("args", {}).get("clock_error_us", 0) + args.slack_us
        max_slack = max(max_slack, slack)
        if delay < -slack:
            fail(f"{span['name']} (correlation {span['args'].get('correlation')}): starts "
                 f"{-delay:.3f} us before its launch (clock error {slack:g} us)")
        elif delay > bound_us:
            fail(f"{span['name']} (correlation {span['args'].get('correlation')}): starts "
                 f"{delay / 1000:.1f} ms after its launch (bound {args.bound_ms:g} ms)")
        linked[id(span)] = True
        launchers.setdefault(span["name"], set()).add((s["pid"], s["tid"]))

    all_spans = [e for track in spans.values() for e in track]
    by_name = {}
    for e in all_spans:
        by_name[e["name"]] = by_name.get(e["name"], 0) + 1
    share = len(linked) / len(all_spans) if all_spans else 0
    if not all_spans:
        fail("no GPU spans in the trace")
    elif share < args.min_linked:
        fail(f"only {len(linked)} of {len(all_spans)} GPU spans have a launch "
             f"(want {100 * args.min_linked:.0f}%)")

    def count(prefix):
        return sum(n for name, n in by_name.items() if name.startswith(prefix))

    for name, n in exact.items():
        if count(name) != n:
            fail(f"{name}: {count(name)} spans, the program made {n}")
    for name, n in at_least.items():
        if count(name) < n:
            fail(f"{name}: {count(name)} spans, want at least {n}")

    if args.unique_correlation:
        seen = {}
        for e in all_spans:
            if e.get("cat") != "gpu.kernel":
                continue
            key = (e["pid"], e["args"].get("correlation"))
            seen[key] = seen.get(key, 0) + 1
        doubled = sum(1 for n in seen.values() if n > 1)
        if doubled:
            fail(f"{doubled} correlation ids have more than one kernel record")

    if args.distinct_threads:
        a, _, b = args.distinct_threads.partition(",")
        ta, tb = launchers.get(a, set()), launchers.get(b, set())
        if len(ta) != 1 or len(tb) != 1 or ta == tb:
            fail(f"{a} launched from threads {sorted(ta)}, {b} from {sorted(tb)}: "
                 "want one thread each, two threads")
        else:
            print(f"FIGURE|launching threads of {a}, {b}|{next(iter(ta))[1]}, "
                  f"{next(iter(tb))[1]}|two threads|-|PASS")

    verdict = "FAIL" if failures else "PASS"
    if delays:
        print(f"FIGURE|launch to GPU start, median / min / max|{statistics.median(delays):.1f} / "
              f"{min(delays):.1f} / {max(delays):.1f} us|-{max_slack:g} us <= each <= "
              f"{args.bound_ms:g} ms|-|{verdict}")
    print(f"FIGURE|GPU spans with their launch|{len(linked)} of {len(all_spans)}|"
          f">= {100 * args.min_linked:.0f}%|-|{verdict}")
    for name in sorted(exact):
        print(f"FIGURE|{name} spans (trace)|{count(name)}|{exact[name]}|-|"
              f"{'PASS' if count(name) == exact[name] else 'FAIL'}")
    if delays:
        print(f"timeline: {len(all_spans)} GPU spans, {len(linked)} with a launch; "
              f"launch to start: median {statistics.median(delays):.1f} us, "
              f"min {min(delays):.1f} us, max {max(delays):.1f} us; clock error up to "
              f"{max_slack:g} us")
    else:
        print(f"timeline: {len(all_spans)} GPU spans, none with a launch")
    for name in sorted(set(exact) | set(at_least)):
        print(f"timeline: {name}: {count(name)} spans")
    for text in failures[:10]:
        print(f"FAIL: {text}")
    if len(failures) > 10:
        print(f"FAIL: ... and {len(failures) - 10} more")
    sys.exit(1 if failures else 0)


if __name__ == "__main__":
    main()
