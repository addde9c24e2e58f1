# SPDX-License-Identifier: GPL-2.0
"""Compares what llmprof says of a recorded checkpoint_job.py run with what
the job measured itself.

check_checkpoint.py LLMPROF PROFILE TRUTH EXPECT

EXPECT is "io" (file-io fires within 0.15 of the job's share of its loop
in save(), located at save (checkpoint_job.py), its evidence naming the
fsync and the writes) or "quiet" (no file-io finding, unless the job
itself measured saving near the rule's 10%).  Prints one line of
figures: job vs llmprof.
"""
import json
import subprocess
import sys


def main():
    llmprof, profile, truth_path, expect = sys.argv[1:5]
    truth = json.loads(open(truth_path).read())
    print("job:", json.dumps(truth, sort_keys=True), file=sys.stderr)
    findings = json.loads(subprocess.run([llmprof, "report", "--findings", "-v", "-f", "json",
                                          profile], check=True, capture_output=True,
                                         text=True).stdout)
    found = {f["rule"]: f for f in findings["findings"]}
    notes = {r["rule"]: r.get("note", "") for r in findings["rules"]}
    io = found.get("file-io")
    job = truth["save_share"]
    figures = [f"job save {job:.3f} ({truth['save_s']:.2f} s in {truth['saves']} saves, "
               f"fsync {truth['fsync_s']:.2f} s)",
               f"llmprof file-io {io['cost']:.3f}" if io
               else f"llmprof file-io ({notes['file-io'].split(' of')[0]})"]
    if io:
        figures.append("; ".join(e.strip() for e in io["evidence"][:5]))
    if expect == "io":
        assert io, f"file-io did not fire: {notes['file-io']}"
        # Six saves on a loaded 2-core machine, job vs llmprof: 0.519 vs
        # 0.426, 0.498 vs 0.377, 0.566 vs 0.446, 0.529 vs 0.551 (llmprof's
        # fsync 0.42 s where the job timed 0.25 s in the last; its waits
        # end as the thread runs again).  Within 0.15 until the spread is
        # understood.
        assert abs(io["cost"] - job) <= 0.15, (io, truth)
        assert io["location"] == "save (checkpoint_job.py)", io["location"]
        assert any("fsync" in e for e in io["evidence"]), io["evidence"]
        assert any("writing" in e for e in io["evidence"]), io["evidence"]
    elif io:
        # A loaded 2-core machine slows the saves: a claim holds where the
        # job itself measured saving near the rule's 10%.
        assert job >= 0.08 and abs(io["cost"] - job) <= 0.10, (io, truth)
    for rule in ("data-loading", "straggler", "communication", "gil-contention", "host-sync"):
        assert rule not in found, found[rule]
    print(f"{expect}: " + ", ".join(figures))


if __name__ == "__main__":
    main()
