# SPDX-License-Identifier: GPL-2.0
"""What Google's pprof reads from llmprof's pprof output, set against what
llmprof itself says of the same profile.

  pprof_check.py top PPROF PROFILE REPORT_JSON
      every function's flat and cum weight in `pprof -top` equal its self and
      total weight in `llmprof report -f json --top 0`, and so do the totals
  pprof_check.py traces PPROF PROFILE FOLDED
      the stacks and weights of `pprof -traces` (with the process label as
      the root frame) are the lines of FOLDED
  pprof_check.py shares PPROF PROFILE NAME=PERCENT... [--tolerance N]
      flat shares in `pprof -top` within N points of the expected ones
  pprof_check.py tags PPROF PROFILE KEY=VALUE...
      `pprof -tags` lists each label value
  pprof_check.py ratio PPROF PROFILE NAME_A NAME_B RATIO TOLERANCE
      NAME_A's flat weight over NAME_B's is RATIO, within TOLERANCE
"""
import json
import os
import re
import subprocess
import sys

COMMON = ["-unit=ns", "-nodefraction=0", "-edgefraction=0", "-nodecount=1000000"]


# A Python frame whose file is a Python file's (python_frame.h).
PYTHON_FRAME = re.compile(r"(.*) \(([^;]*\.pyw?|<frozen [^;]*>|<string>|<stdin>)\)_\[p\]")
# py-spy's, unmarked: "fn (file.py:LINE)", "fn (file.py)" with --nolineno.
PYSPY_FRAME = re.compile(r"(.*) \(([^;]*\.pyw?|<frozen [^;]*>|<string>|<stdin>)(:[1-9]\d*)?\)")


def pprof_name(name):
    """What pprof shows for a frame llmprof names NAME in folded text: a
    Python frame "fn (file.py)_[p]", or py-spy's "fn (file.py:LINE)", is the
    function "fn" with its file."""
    if name == "[unknown] (python)_[p]":  # code that could not be read
        return "[unknown]"
    match = PYTHON_FRAME.fullmatch(name) or PYSPY_FRAME.fullmatch(name)
    if match:
        return match.group(1)
    # An inlined function is an inline line of its caller's location,
    # which pprof shows by the function's own name.
    return name[:-4] if name.endswith("_[i]") else name


def run_pprof(pprof, *args):
    # PPROF_SAMPLE_INDEX: which sample type (pprof's default is the last).
    if os.environ.get("PPROF_SAMPLE_INDEX"):
        args = (f"-sample_index={os.environ['PPROF_SAMPLE_INDEX']}", *args)
    result = subprocess.run([pprof, *args], capture_output=True, text=True)
    if result.returncode:
        sys.exit(f"pprof {' '.join(args)} failed ({result.returncode}): {result.stderr}")
    return result.stdout


def number(text):
    """A weight as pprof prints it with -unit=ns: 1234, 1234ns, 0."""
    match = re.fullmatch(r"(\d+)(ns)?", text)
    if not match:
        sys.exit(f"pprof printed a weight that is not a whole number: {text!r}")
    return int(match.group(1))


def pprof_top(pprof, profile):
    """{name: (flat, cum)} and the total."""
    out = run_pprof(pprof, "-top", *COMMON, profile)
    total = None
    rows = {}
    header = False
    for line in out.splitlines():
        match = re.search(r"of (\S+) total", line)
        if match:
            total = number(match.group(1))
        if re.match(r"\s*flat\s+flat%", line):
            header = True
            continue
        if not header or not line.strip():
            continue
        fields = line.split(None, 5)
        if len(fields) < 6:
            sys.exit(f"unexpected pprof -top line: {line!r}")
        # pprof marks functions seen inlined; llmprof's names say it ("_[i]").
        name = fields[5].removesuffix(" (inline)")
        if name in rows:
            sys.exit(f"pprof -top lists {name!r} twice")
        rows[name] = (number(fields[0]), number(fields[3]))
    if total is None:
        # An empty profile has no "of ... total" line.
        total = 0
    return rows, total


def check_top(pprof, profile, report_json):
    rows, total = pprof_top(pprof, profile)
    report = json.load(open(report_json))
    expected, ambiguous = {}, set()
    for e in report["top_self"]:
        name = pprof_name(e["name"])
        if name in expected:
            # pprof -top adds up functions of one name (in other files).
            ambiguous.add(name)
        expected[name] = (e["self_weight"], e["total_weight"])
    for name in ambiguous:
        print(f"{name!r}: more than one function of this name, not compared")
        rows.pop(name, None)
        expected.pop(name)
    errors = []
    if total != report["weight"]:
        errors.append(f"total: pprof {total}, llmprof report {report['weight']}")
    for name in sorted(set(rows) | set(expected)):
        got, want = rows.get(name), expected.get(name)
        # report leaves out a frame that is only ever a root above other
        # frames (the process); pprof lists it with no self weight.
        if want is None and got is not None and got[0] == 0:
            continue
        if got != want:
            errors.append(f"{name!r}: pprof flat/cum {got}, llmprof report self/total {want}")
    if errors:
        sys.exit("pprof -top and llmprof report disagree:\n  " + "\n  ".join(errors))
    print(f"pprof -top agrees with llmprof report: {len(rows)} functions, total {total}")


def pprof_traces(pprof, profile):
    """{'root;...;leaf': weight} as pprof -traces shows the samples."""
    out = run_pprof(pprof, "-traces", "-unit=ns", profile)
    stacks = {}
    blocks = out.split("-----------+-------------------------------------------------------")
    for block in blocks[1:]:
        labels, frames, weight = {}, [], None
        for line in block.splitlines():
            if not line.strip():
                continue
            if weight is None:
                match = re.match(r"\s*(\w+):\s+(.*)$", line)
                if match and not re.match(r"\s*\d", line):
                    labels[match.group(1)] = match.group(2).strip()
                    continue
                match = re.match(r"\s*(\d+(?:ns)?)\s+(.*)$", line)
                if not match:
                    sys.exit(f"unexpected pprof -traces line: {line!r}")
                weight = number(match.group(1))
                frames.append(match.group(2).strip().removesuffix(" (inline)"))
            else:
                frames.append(line.strip().removesuffix(" (inline)"))
        if weight is None:
            continue
        frames.reverse()
        if "process" in labels:
            frames.insert(0, labels["process"])
        text = ";".join(frames)
        stacks[text] = stacks.get(text, 0) + weight
    return stacks


def read_folded(path):
    stacks = {}
    for line in open(path, encoding="utf-8", errors="replace"):
        line = line.rstrip("\n")
        if not line:
            continue
        text, _, count = line.rpartition(" ")
        text = ";".join(pprof_name(frame) for frame in text.split(";"))
        stacks[text] = stacks.get(text, 0) + int(count)
    return stacks


def check_traces(pprof, profile, folded):
    got, want = pprof_traces(pprof, profile), read_folded(folded)
    errors = []
    for text in sorted(set(got) | set(want)):
        if got.get(text) != want.get(text):
            errors.append(f"{text!r}: pprof {got.get(text)}, folded {want.get(text)}")
    if errors:
        sys.exit("pprof -traces and the folded stacks disagree:\n  " + "\n  ".join(errors[:20]))
    print(f"pprof -traces agrees with the folded stacks: {len(got)} stacks")


def check_shares(pprof, profile, specs):
    tolerance = 3.0
    if "--tolerance" in specs:
        i = specs.index("--tolerance")
        tolerance = float(specs[i + 1])
        del specs[i : i + 2]
    rows, total = pprof_top(pprof, profile)
    if not total:
        sys.exit("pprof sees an empty profile")
    failed = False
    for spec in specs:
        name, _, percent = spec.partition("=")
        share = 100.0 * rows.get(name, (0, 0))[0] / total
        ok = abs(share - float(percent)) <= tolerance
        failed |= not ok
        print(f"{'ok' if ok else 'FAIL'}: {name} flat {share:.2f}% (expected {percent}%)")
    if failed:
        sys.exit(1)


def check_tags(pprof, profile, specs):
    out = run_pprof(pprof, "-tags", profile)
    values = {}
    key = None
    for line in out.splitlines():
        match = re.match(r"\s*(\w+): Total", line)
        if match:
            key = match.group(1)
            continue
        match = re.match(r"\s*\S+\s+\(\s*[\d.]+%\):\s+(.*)$", line)
        if match and key:
            values.setdefault(key, set()).add(match.group(1).strip())
    failed = False
    for spec in specs:
        k, _, v = spec.partition("=")
        if v not in values.get(k, set()):
            print(f"FAIL: no label {k}={v} in pprof -tags: {sorted(values.get(k, []))}")
            failed = True
    if failed:
        sys.exit(1)
    print(f"pprof -tags has {', '.join(specs)}")


def check_ratio(pprof, profile, a, b, ratio, tolerance):
    rows, _ = pprof_top(pprof, profile)
    if a not in rows or b not in rows:
        sys.exit(f"pprof -top lacks {a!r} or {b!r}: {sorted(rows)[:30]}")
    got = rows[a][0] / rows[b][0]
    print(f"{a} / {b} flat: {got:.3f} (expected {ratio})")
    if abs(got - float(ratio)) > float(tolerance):
        sys.exit(1)


def main():
    if len(sys.argv) < 4:
        sys.exit(__doc__)
    command, pprof, profile, rest = sys.argv[1], sys.argv[2], sys.argv[3], sys.argv[4:]
    if command == "top" and len(rest) == 1:
        check_top(pprof, profile, rest[0])
    elif command == "traces" and len(rest) == 1:
        check_traces(pprof, profile, rest[0])
    elif command == "shares" and rest:
        check_shares(pprof, profile, rest)
    elif command == "tags" and rest:
        check_tags(pprof, profile, rest)
    elif command == "ratio" and len(rest) == 4:
        check_ratio(pprof, profile, *rest)
    else:
        sys.exit(__doc__)


if __name__ == "__main__":
    main()
