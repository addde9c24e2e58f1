# SPDX-License-Identifier: GPL-2.0
"""A small character-level GPT trained with DistributedDataParallel over
gloo on the CPU, two ranks, each fed by a DataLoader with two worker
processes whose __getitem__ tokenises text in Python.

ddp_job.py [--launch spawn|env] [--data slow|fast] [--straggler RANK]
           [--extra-steps N] [--steps N] [--truth FILE]

  --launch spawn  torch.multiprocessing.spawn starts the ranks (no RANK in
                  their environment; the rank is spawn's process index);
  --launch env    the ranks read RANK, WORLD_SIZE, MASTER_ADDR/PORT from
                  their environment, as torchrun sets them (env_launch.sh).
  --data slow     tokenising is slow: the loop waits for its batches;
  --data fast     the workers keep ahead: the loop hardly waits.
  --straggler R   rank R does a second step's worth of compute every step;
  --extra-steps N  or N more steps' worth (1).
  --rounds N      how many times slow tokenising goes over each sample.
  --loader-start fork  the DataLoader forks its workers even in a spawned
                  rank (which otherwise spawns them, as it inherits spawn).
  --workers N     DataLoader workers per rank (0: the loop loads its own
                  batches, inline).
  --persistent    persistent_workers=True, the loader iterated over two
                  epochs of steps/2 batches each (its workers live on).

Each rank measures its own loop, after the first batch (first_batch) and
a barrier, to its last step, and writes one JSON line (to --truth FILE, appended, and to stdout):
  rank, pid, steps, loop_s (the loop's wall time),
  data_s (in next(batches)), compute_s (forward, backward, optimizer,
  without the all-reduces), extra_s (the planted work), comm_s (in DDP's
  gradient all-reduce and in the all-reduce of the loss that every step
  logs: where a rank waits for the others), and each as a share of loop_s;
  step_median_s, the median step's wall time (a burst of other work on the
  machine moves it less than loop_s); comm_blocked_s, the part of comm_s
  the rank's thread spent blocked, neither running nor runnable
  (/proc/thread-self/schedstat): what a profiler counts as waiting, where
  comm_s also holds the reduction's own work and, on a machine with more
  threads than cores, the time the thread waited for a CPU.
"""
import argparse
import os
import statistics
import sys
import time

import torch
import torch.distributed as dist
import torch.nn as nn
from torch.nn.parallel import DistributedDataParallel
from torch.utils.data import DataLoader, Dataset

from job_truth import write_truth

TEXT = ("the quick brown fox jumps over the lazy dog while the profiler counts "
        "every step of the training loop and every batch it waits for. ") * 40
CONTEXT = 32
BATCH = 8


def tokenise(text, start, rounds):
    """Characters to ids through a Python dictionary, rounds times over:
    the slow, pure Python work of a tokeniser."""
    vocab = {c: i for i, c in enumerate(sorted(set(TEXT)))}
    ids = []
    for _ in range(rounds):
        ids = [vocab[c] for c in text[start:start + CONTEXT + 1]]
        acc = 0
        for i in ids:
            acc = (acc * 31 + i) & 0xFFFF
    return ids


class Characters(Dataset):
    def __init__(self, rounds):
        self.rounds = rounds

    def __len__(self):
        return 1 << 20

    def __getitem__(self, index):
        start = (index * 7) % (len(TEXT) - CONTEXT - 1)
        ids = tokenise(TEXT, start, self.rounds)
        x = torch.tensor(ids[:-1])
        return x, torch.tensor(ids[1:])


class Block(nn.Module):
    def __init__(self, width, heads):
        super().__init__()
        self.norm1 = nn.LayerNorm(width)
        self.attention = nn.MultiheadAttention(width, heads, batch_first=True)
        self.norm2 = nn.LayerNorm(width)
        self.mlp = nn.Sequential(nn.Linear(width, 4 * width), nn.GELU(),
                                 nn.Linear(4 * width, width))

    def forward(self, x, mask):
        h = self.norm1(x)
        x = x + self.attention(h, h, h, attn_mask=mask, need_weights=False)[0]
        return x + self.mlp(self.norm2(x))


class TinyGPT(nn.Module):
    def __init__(self, vocab, width=32, heads=4, layers=2):
        super().__init__()
        self.embed = nn.Embedding(vocab, width)
        self.position = nn.Parameter(torch.zeros(CONTEXT, width))
        self.blocks = nn.ModuleList(Block(width, heads) for _ in range(layers))
        self.head = nn.Linear(width, vocab)
        self.register_buffer("mask", torch.triu(torch.full((CONTEXT, CONTEXT), float("-inf")), 1))

    def forward(self, x):
        h = self.embed(x) + self.position
        for block in self.blocks:
            h = block(h, self.mask)
        return self.head(h)


def blocked_clock():
    """Seconds this thread has spent blocked (neither on a CPU nor in a
    run queue), plus a constant: wall time less its CPU time and its run
    queue delay."""
    with open("/proc/thread-self/schedstat") as stat:
        running_ns, queued_ns = stat.read().split()[:2]
    return time.monotonic() - (int(running_ns) + int(queued_ns)) / 1e9


class CommTimer:
    """DDP's gradient all-reduce, made synchronous by a communication hook
    so the time in it is measured (on the CPU nothing overlaps it anyway)."""

    def __init__(self, world):
        self.world = world
        self.seconds = 0.0
        self.blocked = 0.0

    def take(self):
        seconds, self.seconds = self.seconds, 0.0
        return seconds

    def hook(self, bucket):
        buffer = bucket.buffer()
        start, blocked = time.monotonic(), blocked_clock()
        dist.all_reduce(buffer)
        self.seconds += time.monotonic() - start
        self.blocked += blocked_clock() - blocked
        done = torch.futures.Future()
        done.set_result(buffer / self.world)
        return done


def extra_work(model, x, y):
    """The straggler's planted work: another forward and backward outside
    DDP (its gradients thrown away), a second step's worth of compute."""
    loss = nn.functional.cross_entropy(model(x).flatten(0, 1), y.flatten())
    loss.backward()
    model.zero_grad(set_to_none=True)


def first_batch(batches):
    """The workers' start-up (a fresh interpreter each under spawn, whose
    start method a spawned rank inherits) is waited for here, before the
    measured loop."""
    return next(batches)


def train(rank, world, args):
    torch.set_num_threads(1)
    torch.manual_seed(0)
    dist.init_process_group("gloo", rank=rank, world_size=world)
    vocab = len(set(TEXT))
    plain = TinyGPT(vocab)
    # The causal mask is a constant buffer: without broadcast_buffers=False
    # every forward would broadcast it, a collective the job would not time.
    model = DistributedDataParallel(plain, broadcast_buffers=False)
    timer = CommTimer(world)
    model.register_comm_hook(timer, CommTimer.hook)
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-3)
    rounds = args.rounds if args.data == "slow" else 1
    # A rank that spawn started inherits its start method: its workers are
    # spawned too (a fresh interpreter each) unless --loader-start fork.
    context = "fork" if args.loader_start == "fork" else None
    epoch = args.steps // 2 + 1 if args.persistent else 1 << 20
    loader = DataLoader(Characters(rounds), batch_size=BATCH, num_workers=args.workers,
                        sampler=range(rank, epoch * BATCH * world, world),
                        multiprocessing_context=context if args.workers else None,
                        persistent_workers=args.persistent)
    batches = iter(loader)
    first_batch(batches)
    data = compute = extra = comm = comm_blocked = 0.0
    timer.blocked = 0.0
    step_times = []
    dist.barrier()
    start = time.monotonic()
    for _ in range(args.steps):
        t0 = time.monotonic()
        try:
            x, y = next(batches)
        except StopIteration:
            # The next epoch: new workers, unless they persist.
            batches = iter(loader)
            x, y = next(batches)
        t1 = time.monotonic()
        logits = model(x)
        loss = nn.functional.cross_entropy(logits.flatten(0, 1), y.flatten())
        optimizer.zero_grad(set_to_none=True)
        loss.backward()
        optimizer.step()
        t2 = time.monotonic()
        if rank == args.straggler:
            for _ in range(args.extra_steps):
                extra_work(plain, x, y)
        t3 = time.monotonic()
        logged = loss.detach().clone()
        blocked = blocked_clock()
        dist.all_reduce(logged)
        t4 = time.monotonic()
        comm_blocked += blocked_clock() - blocked
        data += t1 - t0
        gradients = timer.take()
        compute += t2 - t1 - gradients
        extra += t3 - t2
        comm += t4 - t3 + gradients
        step_times.append(t4 - t0)
    loop = time.monotonic() - start
    truth = {
        "rank": rank, "pid": os.getpid(), "launch": args.launch, "data": args.data,
        "straggler": args.straggler, "steps": args.steps, "loop_s": round(loop, 4),
        "workers": args.workers, "persistent": args.persistent,
        "data_s": round(data, 4), "compute_s": round(compute, 4),
        "extra_s": round(extra, 4), "comm_s": round(comm, 4),
        "data_share": round(data / loop, 4), "compute_share": round(compute / loop, 4),
        "extra_share": round(extra / loop, 4), "comm_share": round(comm / loop, 4),
        "step_median_s": round(statistics.median(step_times), 5),
        "comm_blocked_s": round(comm_blocked + timer.blocked, 4),
    }
    write_truth(truth, args.truth)
    del batches, loader
    dist.barrier()
    dist.destroy_process_group()


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--launch", choices=("spawn", "env"), default="env")
    parser.add_argument("--data", choices=("slow", "fast"), default="fast")
    parser.add_argument("--straggler", type=int, default=-1)
    parser.add_argument("--extra-steps", type=int, default=1)
    parser.add_argument("--steps", type=int, default=60)
    parser.add_argument("--rounds", type=int, default=400)
    parser.add_argument("--loader-start", choices=("inherit", "fork"), default="inherit")
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--persistent", action="store_true")
    parser.add_argument("--truth")
    args = parser.parse_args()
    if args.launch == "env":
        train(int(os.environ["RANK"]), int(os.environ["WORLD_SIZE"]), args)
        return
    os.environ.setdefault("MASTER_ADDR", "127.0.0.1")
    os.environ.setdefault("MASTER_PORT", str(29500 + os.getpid() % 2000))
    torch.multiprocessing.spawn(train, args=(2, args), nprocs=2)


if __name__ == "__main__":
    main()
