#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0
"""Compares the stacks of two folded profiles of one workload, unwound two
ways: the share of A's samples whose stack B also has (A's stacks that B
confirms), and the overlap of the two distributions (the sum over stacks of
the smaller share).  Leaf addresses of unnamed code ([unknown+0x...],
[lib+0x...]) are kept: a stack unwound the same way names them the same.

Usage: compare_stacks.py A.folded B.folded [--min PERCENT] [--strip-kernel]
Exit status 1 when the share confirmed is under --min."""
import argparse
import sys


def read(path, strip_kernel):
    stacks = {}
    for line in open(path, encoding="utf-8"):
        stack, _, count = line.rstrip("\n").rpartition(" ")
        if not stack:
            continue
        frames = stack.split(";")
        if strip_kernel:
            frames = [f for f in frames if not f.endswith("_[k]")]
        key = ";".join(frames)
        stacks[key] = stacks.get(key, 0) + int(count)
    return stacks


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("a")
    parser.add_argument("b")
    parser.add_argument("--min", type=float, default=0)
    parser.add_argument("--strip-kernel", action="store_true")
    args = parser.parse_args()
    a, b = read(args.a, args.strip_kernel), read(args.b, args.strip_kernel)
    total_a, total_b = sum(a.values()) or 1, sum(b.values()) or 1
    confirmed = 100.0 * sum(n for s, n in a.items() if s in b) / total_a
    overlap = 100.0 * sum(min(n / total_a, b.get(s, 0) / total_b) for s, n in a.items())
    print("%.1f%% of %s's samples have a stack %s has; distributions overlap %.1f%%"
          % (confirmed, args.a, args.b, overlap))
    missing = sorted(((n, s) for s, n in a.items() if s not in b), reverse=True)[:5]
    for n, s in missing:
        print("  only in %s: %d %s" % (args.a, n, s[-300:]))
    return 0 if confirmed >= args.min else 1


if __name__ == "__main__":
    sys.exit(main())
