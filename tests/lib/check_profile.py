#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0
"""Checks llmprof output: folded syntax, CPU shares, speedscope validity.

  check_profile.py folded FILE
  check_profile.py shares FILE [--self NAME=PCT]... [--total NAME=PCT]... [--tolerance PP]
  check_profile.py speedscope FILE [--schema SCHEMA.json]
  check_profile.py has FILE REGEX      (some 'stack COUNT' line matches REGEX)
Exits 1 with a message on the first failure.
"""
import argparse
import json
import re
import sys

FLAMEGRAPH_LINE = re.compile(r"^(.*)\s+(\d+)$")
SPEEDSCOPE_LINE = re.compile(r"^(.*) (\d+)$")


def fail(msg):
    print("FAIL: " + msg, file=sys.stderr)
    sys.exit(1)


def read_folded(path):
    stacks = []
    with open(path, encoding="utf-8", errors="strict") as f:
        for number, line in enumerate(f, 1):
            line = line.rstrip("\n")
            m = SPEEDSCOPE_LINE.match(line)
            if not m or not FLAMEGRAPH_LINE.match(line):
                fail(f"{path}:{number}: not a folded line: {line!r}")
            frames = m.group(1).split(";")
            if any(frame == "" for frame in frames):
                fail(f"{path}:{number}: empty frame in {line!r}")
            stacks.append((frames, int(m.group(2))))
    return stacks


def user_frames(frames):
    """The stack without trailing kernel frames (interrupts, page faults)."""
    end = len(frames)
    while end > 1 and frames[end - 1].endswith("_[k]"):
        end -= 1
    return frames[:end]


def shares(stacks):
    total = sum(count for _, count in stacks)
    self_share, total_share = {}, {}
    for frames, count in stacks:
        user = user_frames(frames)
        self_share[user[-1]] = self_share.get(user[-1], 0) + count
        for name in set(frames):
            total_share[name] = total_share.get(name, 0) + count
    scale = 100.0 / total if total else 0
    return ({k: v * scale for k, v in self_share.items()},
            {k: v * scale for k, v in total_share.items()}, total)


def check_shares(args):
    stacks = read_folded(args.file)
    self_share, total_share, total = shares(stacks)
    if not total:
        fail(f"{args.file}: no samples")
    for spec, table, what in [(s, self_share, "self") for s in args.self] + \
                              [(s, total_share, "total") for s in args.total]:
        name, expected = spec.rsplit("=", 1)
        got = table.get(name, 0.0)
        print(f"{what} {name}: {got:.2f}% (expected {expected}% +- {args.tolerance})")
        if abs(got - float(expected)) > args.tolerance:
            fail(f"{what} share of {name} is {got:.2f}%, expected {expected}%")


def check_speedscope(args):
    with open(args.file, encoding="utf-8") as f:
        doc = json.load(f)
    if args.schema:
        import jsonschema
        with open(args.schema, encoding="utf-8") as f:
            schema = json.load(f)
        try:
            jsonschema.validate(doc, schema)
        except jsonschema.ValidationError as e:
            fail(f"{args.file}: schema: {e.message} at {list(e.absolute_path)}")
    for key in ("$schema", "name", "exporter", "shared", "profiles"):
        if key not in doc:
            fail(f"{args.file}: no {key}")
    nr_frames = len(doc["shared"]["frames"])
    if not doc["profiles"]:
        fail(f"{args.file}: no profiles")
    for profile in doc["profiles"]:
        if profile["type"] == "sampled":
            if len(profile["samples"]) != len(profile["weights"]):
                fail(f"{profile['name']}: samples and weights differ in length")
            for stack in profile["samples"]:
                for index in stack:
                    if not 0 <= index < nr_frames:
                        fail(f"{profile['name']}: frame index {index} out of range")
            if any(w < 0 for w in profile["weights"]):
                fail(f"{profile['name']}: negative weight")
        else:
            at = profile["startValue"]
            depth = []
            for event in profile["events"]:
                if not 0 <= event["frame"] < nr_frames:
                    fail(f"{profile['name']}: frame index out of range")
                if event["at"] < at:
                    fail(f"{profile['name']}: events out of time order")
                at = event["at"]
                if event["type"] == "O":
                    depth.append(event["frame"])
                elif not depth or depth.pop() != event["frame"]:
                    fail(f"{profile['name']}: close without matching open")
            if depth:
                fail(f"{profile['name']}: unclosed frames")
    print(f"{args.file}: valid speedscope, {len(doc['profiles'])} profiles, {nr_frames} frames")


def check_has(args):
    pattern = re.compile(args.regex)
    for frames, count in read_folded(args.file):
        if pattern.search(";".join(frames) + f" {count}"):
            return
    fail(f"{args.file}: no stack matches {args.regex!r}")


def main():
    parser = argparse.ArgumentParser()
    sub = parser.add_subparsers(dest="command", required=True)
    p = sub.add_parser("folded")
    p.add_argument("file")
    p = sub.add_parser("shares")
    p.add_argument("file")
    p.add_argument("--self", action="append", default=[])
    p.add_argument("--total", action="append", default=[])
    p.add_argument("--tolerance", type=float, default=3.0)
    p = sub.add_parser("speedscope")
    p.add_argument("file")
    p.add_argument("--schema")
    p = sub.add_parser("has")
    p.add_argument("file")
    p.add_argument("regex")
    args = parser.parse_args()
    if args.command == "folded":
        stacks = read_folded(args.file)
        print(f"{args.file}: {len(stacks)} valid folded lines")
    elif args.command == "shares":
        check_shares(args)
    elif args.command == "speedscope":
        check_speedscope(args)
    else:
        check_has(args)


if __name__ == "__main__":
    main()
