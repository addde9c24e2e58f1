# SPDX-License-Identifier: GPL-2.0
"""A small recommender-like model (a large embedding table with sparse
gradients, a small MLP) trained on the CPU in one process, that every K
steps saves a checkpoint (model and optimizer state) with torch.save to a
file on disk and fsyncs it, as a job that must not lose its progress does:
its steps are cheap, its checkpoint large.

checkpoint_job.py --dir DIR [--every K] [--steps N] [--rows R] [--truth FILE]

  --dir DIR    where the checkpoints go (a disk, not a tmpfs: fsync must
               reach the device);
  --every K    save after every K-th step (1: every step);
  --rows R     the embedding table's rows: the checkpoint is about
               R * 64 * 4 bytes.

The job measures its own loop, from its first step to its last, and
writes one JSON line (to --truth FILE and to stdout): pid, steps, saves,
loop_s (the loop's wall time), save_s (in save(): torch.save, flush and
fsync), fsync_s (the fsync alone), compute_s (forward, backward,
optimizer), and each as a share of loop_s.
"""
import argparse
import os
import time

import torch
import torch.nn as nn

from job_truth import write_truth


def save(state, path):
    """torch.save into a file, then flush and fsync it: the checkpoint is
    on the disk when this returns.  The fsync's own time is returned."""
    with open(path, "wb") as out:
        torch.save(state, out)
        out.flush()
        start = time.monotonic()
        os.fsync(out.fileno())
        return time.monotonic() - start


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--dir", required=True)
    parser.add_argument("--every", type=int, default=2)
    parser.add_argument("--steps", type=int, default=40)
    parser.add_argument("--rows", type=int, default=1 << 18)
    parser.add_argument("--truth")
    args = parser.parse_args()
    torch.set_num_threads(1)
    torch.manual_seed(0)
    model = nn.Sequential(nn.EmbeddingBag(args.rows, 64, mode="mean", sparse=True),
                          nn.Linear(64, 256), nn.ReLU(), nn.Linear(256, 256), nn.ReLU(),
                          nn.Linear(256, 1))
    optimizer = torch.optim.SGD(model.parameters(), lr=1e-2, momentum=0.0)
    x = torch.randint(0, args.rows, (256, 16))
    y = torch.randn(256, 1)
    path = os.path.join(args.dir, "checkpoint.pt")
    compute = saving = syncing = 0.0
    saves = 0
    start = time.monotonic()
    for step in range(1, args.steps + 1):
        t0 = time.monotonic()
        loss = nn.functional.mse_loss(model(x), y)
        optimizer.zero_grad(set_to_none=True)
        loss.backward()
        optimizer.step()
        t1 = time.monotonic()
        if step % args.every == 0:
            syncing += save({"step": step, "model": model.state_dict(),
                             "optimizer": optimizer.state_dict()}, path)
            saves += 1
        t2 = time.monotonic()
        compute += t1 - t0
        saving += t2 - t1
    loop = time.monotonic() - start
    os.unlink(path)
    truth = {
        "pid": os.getpid(), "steps": args.steps, "every": args.every, "saves": saves,
        "loop_s": round(loop, 4), "save_s": round(saving, 4), "fsync_s": round(syncing, 4),
        "compute_s": round(compute, 4), "save_share": round(saving / loop, 4),
        "fsync_share": round(syncing / loop, 4), "compute_share": round(compute / loop, 4),
    }
    write_truth(truth, args.truth)


if __name__ == "__main__":
    main()
