#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0
"""Share of samples whose user stack reaches the thread's start.

  check_roots.py FILE [--min PCT] [--max PCT] [--per-thread]

A stack reaches the start when its root-most user frame (the first frame
after the process frame, and after the thread frame with --per-thread) is
the start code of a thread: the executable's _start, libc's
__libc_start_main or __libc_start_call_main (a main thread whose _start was
not unwound still reached libc's start code), or, for other threads, libc's
clone3, __clone3, clone, __clone or start_thread.  Symbol versions
("@@GLIBC_2.34") are ignored.  Frames that libc has no symbol for
("[libc.so.6+0x...]": install libc6-dbg) do not count.
"""
import argparse
import re
import sys

START = {"_start", "__libc_start_main", "__libc_start_call_main", "clone3", "__clone3",
         "clone", "__clone", "start_thread"}
LINE = re.compile(r"^(.*) (\d+)$")


def root_name(frames, per_thread):
    user = frames[2 if per_thread else 1:]
    if not user or user[0].endswith("_[k]"):
        return None
    return re.sub(r"_\[[ij]\]$", "", user[0]).split("@")[0]


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("file")
    parser.add_argument("--min", type=float)
    parser.add_argument("--max", type=float)
    parser.add_argument("--per-thread", action="store_true")
    args = parser.parse_args()
    total = reached = 0
    roots = {}
    with open(args.file, encoding="utf-8") as f:
        for line in f:
            m = LINE.match(line.rstrip("\n"))
            if not m:
                print(f"FAIL: not a folded line: {line!r}", file=sys.stderr)
                sys.exit(1)
            frames, count = m.group(1).split(";"), int(m.group(2))
            total += count
            name = root_name(frames, args.per_thread)
            if name in START:
                reached += count
            else:
                roots[name] = roots.get(name, 0) + count
    share = 100.0 * reached / total if total else 0.0
    print(f"{args.file}: {share:.1f}% of {total} samples reach the thread's start")
    for name, count in sorted(roots.items(), key=lambda kv: -kv[1])[:5]:
        print(f"  root {name}: {count}")
    if not total:
        print("FAIL: no samples", file=sys.stderr)
        sys.exit(1)
    if args.min is not None and share < args.min:
        print(f"FAIL: {share:.1f}% reach the start, expected at least {args.min}%",
              file=sys.stderr)
        sys.exit(1)
    if args.max is not None and share > args.max:
        print(f"FAIL: {share:.1f}% reach the start, expected at most {args.max}%",
              file=sys.stderr)
        sys.exit(1)


if __name__ == "__main__":
    main()
