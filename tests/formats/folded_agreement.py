#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0
"""How far two folded profiles agree: the sum over stacks of the smaller of
the two shares of the total weight (1.0: the same stacks in the same shares).

  folded_agreement.py [--tidy] REFERENCE OURS [MIN]

Prints the agreement in percent; with MIN, exits 1 below it.  Weights may be
fractional (pprof -traces prints seconds).  Frame kind marks that only
annotate a frame (_[k], _[i], _[j], _[p]: stackcollapse-perf.pl --kernel,
--inline and flamegraph.pl's colours) are dropped from both, as are the
spaces in a root frame that stackcollapse-perf.pl writes as '_'.  --tidy
names both sides' frames as stackcollapse-perf.pl does (argument lists and
quotes dropped), for a reference that keeps them, such as perf's own
`perf script report stackcollapse`.
"""
import gzip
import re
import sys

MARK = re.compile(r"_\[[kijp]\]$")
TIDY = False


def tidy(frame):
    if not TIDY:
        return frame
    if not re.search(r"\.\(.*\)\.", frame):
        frame = re.sub(r"\((?!anonymous namespace\)).*", "", frame)
    return frame.replace('"', "").replace("'", "")


def read(path):
    opener = gzip.open if path.endswith(".gz") else open
    stacks = {}
    with opener(path, "rt", encoding="utf-8", errors="replace") as f:
        for line in f:
            line = line.rstrip("\r\n")
            if not line or line.startswith("#"):
                continue
            stack, _, weight = line.rpartition(" ")
            frames = [tidy(MARK.sub("", frame)) for frame in stack.split(";")]
            if frames:
                frames[0] = frames[0].replace(" ", "_")
            key = ";".join(frames)
            stacks[key] = stacks.get(key, 0.0) + float(weight)
    return stacks


def main():
    global TIDY
    args = sys.argv[1:]
    if args and args[0] == "--tidy":
        TIDY = True
        args = args[1:]
    ref, ours = read(args[0]), read(args[1])
    total_ref, total_ours = sum(ref.values()), sum(ours.values())
    if not total_ref or not total_ours:
        agreement = 100.0 if total_ref == total_ours else 0.0
    else:
        agreement = 100.0 * sum(min(w / total_ref, ours.get(k, 0.0) / total_ours)
                                for k, w in ref.items())
    print("%.1f" % agreement)
    if len(args) > 2 and agreement < float(args[2]):
        sys.exit(1)


if __name__ == "__main__":
    main()
