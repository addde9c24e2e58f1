# SPDX-License-Identifier: GPL-2.0
"""A small inference server in one process: a client thread sends requests
at a fixed rate, a batcher groups them (up to --max-batch, waiting at most
--max-wait-ms for more after the first), and a ThreadPoolExecutor runs
each batch's forward pass under torch.no_grad().

serve_job.py [--rate R] [--seconds S] [--max-batch B] [--max-wait-ms W]
             [--pool N] [--width W] [--truth FILE]

The server measures each request's latency and splits it:
  queue_s     from the client's send to the batcher taking it;
  batching_s  from then to its batch going to the pool (waiting for more);
  pool_s      from then to a pool thread starting the batch;
  model_s     the batch's forward pass;
and writes one JSON line (to --truth FILE and to stdout): pid, requests,
batches, rate, seconds (the serving span: first send to last reply),
the mean latency and of each part (seconds), each part's share of the
latency, model_busy (the forward passes' time over the span: how
much of one thread the model keeps busy), and run_delay_s: the time its
threads (main, client, pool; the client's read as it ends) were runnable
but waited for a CPU, as the scheduler counts it (/proc schedstat), from
the process's start.
"""
import argparse
import concurrent.futures
import os
import queue
import threading
import time

import torch
import torch.nn as nn

from job_truth import write_truth


class Request:
    __slots__ = ("x", "sent", "taken", "batched", "started", "done")

    def __init__(self, x):
        self.x = x
        self.sent = time.monotonic()
        self.taken = self.batched = self.started = self.done = 0.0


def run_delay(path):
    """Seconds runnable, waiting for a CPU (schedstat's second field)."""
    with open(path) as f:
        return int(f.read().split()[1]) / 1e9


def client(requests, rate, seconds, width, delays):
    """Open loop: a request every 1/rate seconds, whatever the replies."""
    start = time.monotonic()
    sent = 0
    while True:
        due = start + sent / rate
        if due - start >= seconds:
            break
        delay = due - time.monotonic()
        if delay > 0:
            time.sleep(delay)
        requests.put(Request(torch.randn(width)))
        sent += 1
    delays[threading.get_native_id()] = run_delay("/proc/thread-self/schedstat")
    requests.put(None)
    return sent


def forward(model, batch):
    started = time.monotonic()
    with torch.no_grad():
        model(torch.stack([r.x for r in batch]))
    done = time.monotonic()
    for r in batch:
        r.started, r.done = started, done
    return batch


def batcher(requests, pool, model, max_batch, max_wait):
    """The first request opens a batch; more join it until it is full or
    max_wait has passed since the first was taken."""
    futures = []
    while True:
        first = requests.get()
        if first is None:
            return futures
        first.taken = time.monotonic()
        batch, closing, last = [first], first.taken + max_wait, False
        while len(batch) < max_batch:
            timeout = closing - time.monotonic()
            if timeout <= 0:
                break
            try:
                r = requests.get(timeout=timeout)
            except queue.Empty:
                break
            if r is None:
                last = True
                break
            r.taken = time.monotonic()
            batch.append(r)
        batched = time.monotonic()
        for r in batch:
            r.batched = batched
        futures.append(pool.submit(forward, model, batch))
        if last:
            return futures


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--rate", type=float, default=100)
    parser.add_argument("--seconds", type=float, default=8)
    parser.add_argument("--max-batch", type=int, default=8)
    parser.add_argument("--max-wait-ms", type=float, default=5)
    parser.add_argument("--pool", type=int, default=2)
    parser.add_argument("--width", type=int, default=256)
    parser.add_argument("--truth")
    args = parser.parse_args()
    torch.set_num_threads(1)
    torch.manual_seed(0)
    width = args.width
    model = nn.Sequential(nn.Linear(width, 4 * width), nn.GELU(), nn.Linear(4 * width, width),
                          nn.LayerNorm(width), nn.Linear(width, width)).eval()
    with torch.no_grad():
        model(torch.randn(args.max_batch, width))
    requests = queue.Queue()
    delays = {}
    with concurrent.futures.ThreadPoolExecutor(args.pool, thread_name_prefix="serve") as pool:
        sender = threading.Thread(target=client, args=(requests, args.rate, args.seconds, width, delays),
                                  name="client")
        sender.start()
        futures = batcher(requests, pool, model, args.max_batch, args.max_wait_ms / 1000)
        batches = [f.result() for f in futures]
        sender.join()
        for task in os.listdir("/proc/self/task"):
            if int(task) not in delays:
                delays[int(task)] = run_delay(f"/proc/self/task/{task}/schedstat")
    served = [r for b in batches for r in b]
    n = len(served)
    span = max(r.done for r in served) - min(r.sent for r in served)
    parts = {
        "queue_s": sum(r.taken - r.sent for r in served) / n,
        "batching_s": sum(r.batched - r.taken for r in served) / n,
        "pool_s": sum(r.started - r.batched for r in served) / n,
        "model_s": sum(r.done - r.started for r in served) / n,
    }
    latency = sum(r.done - r.sent for r in served) / n
    truth = {"pid": os.getpid(), "requests": n, "batches": len(batches), "rate": args.rate,
             "seconds": round(span, 4), "latency_s": round(latency, 6),
             "model_busy": round(sum(b[0].done - b[0].started for b in batches) / span, 4),
             "threads": len(delays), "run_delay_s": round(sum(delays.values()), 4)}
    for name, value in parts.items():
        truth[name] = round(value, 6)
        truth[name.replace("_s", "_share")] = round(value / latency, 4)
    write_truth(truth, args.truth)


if __name__ == "__main__":
    main()
