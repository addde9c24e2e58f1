# SPDX-License-Identifier: GPL-2.0
"""Training-like PyTorch loops for scripts/gpu-check.sh's overhead and
robustness steps.  Each mode runs for --seconds and prints what it measured:

  launch    many tiny element-wise kernels per step (launch-bound):
            "second EPOCH MEDIAN_US" for every second, then
            "step_us MEDIAN STEPS"
  graph     the same step captured once in a CUDA graph and replayed:
            "graph_replays N" and "step_us MEDIAN STEPS"
  memory    allocations that grow and free (run it with
            PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True):
            "max_reserved BYTES"
  profiler  the launch step with a torch.profiler window in the middle:
            "profiler_kernels N" (kernel events the profiler got)

With --ready it prints "ready" once CUDA is warm, for a profiler to attach.
"""
import argparse
import statistics
import sys
import time

import torch


def launch_step(x):
    for _ in range(50):
        x = x * 1.0001 + 0.0001
    return x


def timed_loop(seconds, step, x):
    times = []
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        torch.cuda.synchronize()
        start = time.perf_counter()
        x = step(x)
        torch.cuda.synchronize()
        times.append((time.perf_counter() - start) * 1e6)
    return times


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("mode", choices=("launch", "graph", "memory", "profiler"))
    parser.add_argument("--seconds", type=float, default=5)
    parser.add_argument("--ready", action="store_true")
    args = parser.parse_args()
    x = torch.ones(1024, device="cuda")
    launch_step(x)
    torch.cuda.synchronize()
    if args.ready:
        print("ready", flush=True)
    if args.mode == "launch":
        times = []
        end = time.monotonic() + args.seconds
        while time.monotonic() < end:
            second = int(time.time())
            window = timed_loop(min(1.0, end - time.monotonic()), launch_step, x)
            if window:
                print(f"second {second} {statistics.median(window):.1f}", flush=True)
            times += window
        print(f"step_us {statistics.median(times):.1f} {len(times)}")
    elif args.mode == "graph":
        static = x.clone()
        stream = torch.cuda.Stream()
        stream.wait_stream(torch.cuda.current_stream())
        with torch.cuda.stream(stream):
            launch_step(static)
        torch.cuda.current_stream().wait_stream(stream)
        graph = torch.cuda.CUDAGraph()
        with torch.cuda.graph(graph):
            out = launch_step(static)
        replays = [0]

        def replay(_):
            graph.replay()
            replays[0] += 1
            return out

        times = timed_loop(args.seconds, replay, x)
        print(f"graph_replays {replays[0]}")
        print(f"step_us {statistics.median(times):.1f} {len(times)}")
    elif args.mode == "memory":
        kept = []
        end = time.monotonic() + args.seconds
        size = 1 << 20
        while time.monotonic() < end:
            kept.append(torch.empty(size, dtype=torch.uint8, device="cuda"))
            size = size * 2 if size < (256 << 20) else 1 << 20
            if len(kept) > 8:
                kept.pop(0)
            torch.cuda.synchronize()
        print(f"max_reserved {torch.cuda.max_memory_reserved()}")
    else:
        third = args.seconds / 3
        timed_loop(third, launch_step, x)
        with torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CUDA]) as prof:
            timed_loop(third, launch_step, x)
        timed_loop(third, launch_step, x)
        kernels = sum(1 for e in prof.events() if e.device_type == torch.autograd.DeviceType.CUDA)
        print(f"profiler_kernels {kernels}")
    sys.stdout.flush()


if __name__ == "__main__":
    main()
