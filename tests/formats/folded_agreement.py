#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0
"""How far two folded profiles agree: the sum over stacks of the smaller of
the two shares of the total weight (1.0: the same stacks in the same shares).

  folded_agreement.py REFERENCE OURS [MIN]

Prints the agreement in percent; with MIN, exits 1 below it.  Weights may be
fractional (pprof -traces prints seconds).  Frame kind marks that only
annotate a frame (_[k], _[i], _[j], _[p]: stackcollapse-perf.pl --kernel,
--inline and flamegraph.pl's colours) are dropped from both, as are the
spaces in a root frame that stackcollapse-perf.pl writes as '_'.
"""
import gzip
import re
import sys

MARK = re.compile(r"_\[[kijp]\]$")


def read(path):
    opener = gzip.open if path.endswith(".gz") else open
    stacks = {}
    with opener(path, "rt", encoding="utf-8", errors="replace") as f:
        for line in f:
            line = line.rstrip("\r\n")
            if not line or line.startswith("#"):
                continue
            stack, _, weight = line.rpartition(" ")
            frames = [MARK.sub("", frame) for frame in stack.split(";")]
            if frames:
                frames[0] = frames[0].replace(" ", "_")
            key = ";".join(frames)
            stacks[key] = stacks.get(key, 0.0) + float(weight)
    return stacks


def main():
    ref, ours = read(sys.argv[1]), read(sys.argv[2])
    total_ref, total_ours = sum(ref.values()), sum(ours.values())
    if not total_ref or not total_ours:
        agreement = 100.0 if total_ref == total_ours else 0.0
    else:
        agreement = 100.0 * sum(min(w / total_ref, ours.get(k, 0.0) / total_ours)
                                for k, w in ref.items())
    print("%.1f" % agreement)
    if len(sys.argv) > 3 and agreement < float(sys.argv[3]):
        sys.exit(1)


if __name__ == "__main__":
    main()
