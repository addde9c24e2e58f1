#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0
"""Checks a folded file against the grammar flamegraph.pl reads.

  folded_grammar.py FOLDED [--kernel-from PERF_SCRIPT] [--roots-from FOLDED]
                    [--depths N,N,...]

flamegraph.pl (github.com/brendangregg/FlameGraph) reads each line with
/^(.*)\\s+?(\\d+(?:\\.\\d*)?)$/ -- the stack, then the count after the last
blank -- and splits the stack on ';', root first.  Its --colors=java and
perl palettes read a frame ending in _[k] as a kernel frame, _[i] as an
inlined one, _[j] as JIT code (and llmprof marks Python frames _[p]).  So:
every line is a stack and a positive whole count after its last space; no
frame is empty; a frame that ends as a mark does ends in one of those;
no carriage return is left in a line.

--kernel-from: the frames marked _[k] are symbols that perf script printed
from [kernel.kallsyms], and no unmarked frame is (the kernel's frames, and
only them, are marked).
--roots-from: the stacks' roots are the same as those of a reference
collapser's output (stackcollapse-perf.pl: the command first), so frames
are root first.  --depths: the lines' frame counts, as the input profile's stacks
have them (a ';' or newline inside a name would change them).
Exits 1 with a message on the first rule broken.
"""
import re
import sys

LINE = re.compile(r"^(.*)\s+?(\d+(?:\.\d*)?)$")  # flamegraph.pl's own
MARK = re.compile(r"_\[([a-z])\]")
END_MARK = re.compile(r"_\[([a-z])\]$")  # as flamegraph.pl's palettes match
KINDS = set("kijp")


def fail(path, number, message):
    sys.exit(f"folded_grammar: {path}:{number}: {message}")


def frames_of(path):
    """Yields (line number, frames, count) of each line."""
    with open(path, "rb") as f:
        data = f.read()
    if b"\r" in data:
        fail(path, 0, "a carriage return in the output")
    for number, raw in enumerate(data.decode("utf-8", "replace").split("\n"), 1):
        if not raw:
            continue
        m = LINE.match(raw)
        if not m:
            fail(path, number, f"no count after the last blank: {raw!r}")
        stack, count = m.group(1), m.group(2)
        if not count.isdigit() or int(count) <= 0:
            fail(path, number, f"count {count!r} is not a positive whole number")
        if raw.rsplit(" ", 1)[1] != count:
            fail(path, number, "the count is not after the line's last space")
        yield number, stack.split(";"), int(count)


def check(path):
    lines = []
    for number, frames, count in frames_of(path):
        for frame in frames:
            if not frame:
                fail(path, number, "an empty frame (';;', or ';' at an end)")
            mark = END_MARK.search(frame)
            if mark and mark.group(1) not in KINDS:
                fail(path, number, f"frame {frame!r} ends in an unknown mark")
        lines.append((number, frames, count))
    if not lines:
        fail(path, 0, "no stacks")
    return lines


def strip(frame):
    return MARK.sub("", frame) if frame.endswith("]") else frame


def kernel_symbols(perf_script):
    """Symbols perf script printed from the kernel, offsets dropped."""
    symbols = set()
    frame = re.compile(r"^\s*[0-9a-f]+\s+(.+?)(?:\+0x[0-9a-f]+)?\s+\((.*)\)\s*$")
    with open(perf_script, encoding="utf-8", errors="replace") as f:
        for line in f:
            m = frame.match(line)
            if m and m.group(2) == "[kernel.kallsyms]" and m.group(1) != "[unknown]":
                symbols.add(m.group(1))
    return symbols


def main():
    args = sys.argv[1:]
    if not args:
        sys.exit(__doc__)
    path = args.pop(0)
    lines = check(path)
    while args:
        option = args.pop(0)
        value = args.pop(0) if args else ""
        if option == "--kernel-from":
            # A file of several events is read for one: the symbols
            # are those of all, the frames those of one.
            want = kernel_symbols(value)
            marked = {f[:-4] for _, fs, _ in lines for f in fs if f.endswith("_[k]")}
            plain = {f for _, fs, _ in lines for f in fs if not END_MARK.search(f)}
            if not marked or marked - want or plain & want:
                sys.exit(f"folded_grammar: {path}: marked _[k] but not the kernel's: "
                         f"{sorted(marked - want)[:5]}; the kernel's but not marked: "
                         f"{sorted(plain & want)[:5]}")
        elif option == "--roots-from":
            ours = {strip(fs[0]) for _, fs, _ in lines}
            with open(value, encoding="utf-8", errors="replace") as f:
                theirs = {strip(l.rsplit(" ", 1)[0].split(";")[0]) for l in f if l.strip()}
            if ours != theirs:
                sys.exit(f"folded_grammar: {path}: roots {sorted(ours)[:5]}, the reference's "
                         f"{sorted(theirs)[:5]}")
        elif option == "--depths":
            want = [int(d) for d in value.split(",")]
            got = [len(fs) for _, fs, _ in lines]
            if sorted(got) != sorted(want):
                sys.exit(f"folded_grammar: {path}: frames per line {got}, expected {want}")
        else:
            sys.exit(f"folded_grammar: unknown option {option}")
    print(f"ok {path}: {len(lines)} stacks keep flamegraph.pl's grammar")


main()
