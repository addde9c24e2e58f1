#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0
"""Every unnamed frame "[FILE+0xOFFSET]" of a mapped library in folded
profiles names the start of its function's FDE, as binutils' readelf lists
them: OFFSET, a file offset, is moved to an ELF address by the file's LOAD
segments.  Usage: check_fde_frames.py MAPS FOLDED... (MAPS: a copy of the
target's /proc/PID/maps).  Fails where no unnamed frame was found at all."""
import re
import subprocess
import sys


def load_segments(path):
    out = subprocess.run(["readelf", "-lW", path], capture_output=True, text=True).stdout
    segments = []
    for line in out.splitlines():
        fields = line.split()
        if fields and fields[0] == "LOAD":
            segments.append((int(fields[1], 16), int(fields[2], 16), int(fields[4], 16)))
    return segments


def fde_starts(path):
    out = subprocess.run(["readelf", "--debug-dump=frames", path], capture_output=True,
                         text=True).stdout
    return {int(m.group(1), 16) for m in re.finditer(r" FDE .*pc=([0-9a-f]+)\.\.", out)}


def main():
    files = {}
    for line in open(sys.argv[1]):
        fields = line.split()
        if len(fields) >= 6 and fields[5].startswith("/"):
            files.setdefault(fields[5].rsplit("/", 1)[1], fields[5])
    frames = set()
    for path in sys.argv[2:]:
        for line in open(path):
            frames.update(re.findall(r"\[([^\]+;]+)\+0x([0-9a-f]+)\]", line))
    checked = wrong = 0
    cache = {}
    for name, offset in sorted(frames):
        if name not in files:
            continue
        path = files[name]
        if path not in cache:
            cache[path] = (load_segments(path), fde_starts(path))
        segments, starts = cache[path]
        offset = int(offset, 16)
        vaddrs = [vaddr + offset - file_offset for file_offset, vaddr, size in segments
                  if file_offset <= offset < file_offset + size]
        checked += 1
        if not vaddrs or vaddrs[0] not in starts:
            wrong += 1
            print(f"[{name}+0x{offset:x}] is no FDE start")
    print(f"{checked} unnamed frames in mapped files, {wrong} not at an FDE start")
    sys.exit(1 if wrong or not checked else 0)


main()
