# SPDX-License-Identifier: GPL-2.0
"""torch.matmul in a loop, for scripts/gpu-check.sh.

Each matmul is timed with CUDA events; at the end the script prints
"event matmul TOTAL_US COUNT" (all iterations) and "event_mean matmul US"
and a checksum.  With --ready it prints "ready" once CUDA is warm, for a
profiler to attach.
"""
import argparse
import sys
import time

import torch


def step(a, b, timings):
    start = torch.cuda.Event(enable_timing=True)
    stop = torch.cuda.Event(enable_timing=True)
    start.record()
    c = torch.matmul(a, b)
    stop.record()
    timings.append((start, stop))
    return c


def train_loop(seconds, size):
    torch.manual_seed(0)
    a = torch.randn(size, size, device="cuda")
    b = torch.randn(size, size, device="cuda")
    c = None
    timings = []
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        c = step(a, b, timings)
        if len(timings) % 64 == 0:
            torch.cuda.synchronize()
    torch.cuda.synchronize()
    return c, timings


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--seconds", type=float, default=10)
    parser.add_argument("--size", type=int, default=4096)
    parser.add_argument("--ready", action="store_true")
    args = parser.parse_args()
    if not torch.cuda.is_available():
        print("torch_matmul: no CUDA device", file=sys.stderr)
        return 1
    # Warm up: cuBLAS handles and kernels loaded before anyone attaches.
    w = torch.randn(256, 256, device="cuda")
    torch.matmul(w, w)
    torch.cuda.synchronize()
    if args.ready:
        print("ready", flush=True)
    c, timings = train_loop(args.seconds, args.size)
    total_ms = sum(s.elapsed_time(e) for s, e in timings)
    print(f"event matmul {total_ms * 1000:.1f} {len(timings)}")
    print(f"event_mean matmul {total_ms * 1000 / max(len(timings), 1):.1f}")
    # Deterministic: the same inputs give the same product every iteration.
    print(f"checksum {float(c[0, :16].sum()):.3f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
