# SPDX-License-Identifier: GPL-2.0
"""Compares what llmprof says of a recorded serve_job.py run (a healthy
inference server: a batcher and a thread pool well below their capacity)
with what the server measured itself.

check_serve.py LLMPROF PROFILE TRUTH

No finding holds but one the job's numbers support: CPU oversubscription
where the job's own threads waited for a CPU (the scheduler's run delay)
8% of llmprof's wall time or more, and llmprof's runnable seconds within
30% of the job's.  The model's time (stacks under forward) is compared
with the job's forward passes.  Prints one line of figures: job vs llmprof.
"""
import json
import subprocess
import sys


def run(*args):
    return subprocess.run(args, check=True, capture_output=True, text=True).stdout


def main():
    llmprof, profile, truth_path = sys.argv[1:4]
    truth = json.loads(open(truth_path).read())
    print("job:", json.dumps(truth, sort_keys=True), file=sys.stderr)
    findings = json.loads(run(llmprof, "report", "--findings", "-v", "-f", "json", profile))
    by_process = json.loads(run(llmprof, "report", "--by-process", "-f", "json", profile))
    found = {f["rule"]: f for f in findings["findings"]}
    notes = {r["rule"]: r.get("note", "") for r in findings["rules"]}
    process = by_process["processes"][0]
    assert process["unit"] == "ns", process
    wall = process["weight"] / 1e9
    model = 0
    for line in run(llmprof, "convert", "-f", "folded", profile).splitlines():
        stack, weight = line.rsplit(" ", 1)
        if "forward (serve_job.py)" in stack:
            model += int(weight)
    model /= 1e9
    job_model = truth["model_busy"] * truth["seconds"]
    figures = [f"job latency {1000 * truth['latency_s']:.2f} ms (queue "
               f"{truth['queue_share']:.2f}, batching {truth['batching_share']:.2f}, "
               f"pool {truth['pool_share']:.2f}, model {truth['model_share']:.2f})",
               f"job model {job_model:.2f} s, llmprof under forward {model:.2f} s"]
    # The forward passes: what the job timed (sampled at 99 Hz; forward's
    # own Python around the model adds a little).
    assert abs(model - job_model) <= max(0.3 * job_model, 0.3), (model, truth)
    over = found.pop("cpu-oversubscription", None)
    delay = truth["run_delay_s"]
    if over:
        runnable = over["cost"] * wall
        figures.append(f"job run delay {delay:.2f} s, llmprof preempted {runnable:.2f} s "
                       f"({over['cost']:.3f} of {wall:.1f} s)")
        # The machine's other load, not the job's threads, keeps them
        # waiting: the claim holds where the job measured that wait.
        assert delay >= 0.08 * wall and abs(runnable - delay) <= 0.3 * delay, (over, truth)
    else:
        figures.append(f"job run delay {delay:.2f} s, llmprof cpu-oversubscription "
                       f"({notes['cpu-oversubscription'].split(' runnable')[0]})")
    assert not found, f"findings on a healthy server: {found}"
    print("serve: " + ", ".join(figures))


if __name__ == "__main__":
    main()
