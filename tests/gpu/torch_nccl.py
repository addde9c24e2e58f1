# SPDX-License-Identifier: GPL-2.0
"""NCCL collectives of known sizes through torch.distributed, for
scripts/gpu-check.sh: one rank (world size 1, nccl backend), which a single
GPU can run.

For one rank NCCL launches a kernel only where it must compute: all_reduce
with ReduceOp.AVG (NCCL's PreMulSum), while all_gather_into_tensor is a
device-to-device copy.  reduce_step() and gather_step() make ITERATIONS
calls of 256 MiB each, after one untimed warm-up call of 1 MiB each (a
size bucket of its own: communicator set-up stays out of the timed ones).

Each timed call sits between two CUDA events on the current stream, with a
sleep kernel before the first so the GPU is busy while the CPU queues the
call: the events then time the GPU work and not the launch.  At the end the
script prints, per operation, "collective OPERATION BYTES_PER_CALL CALLS
TOTAL_US", and "nccl_library PATH" for the libnccl it mapped (none: NCCL is
linked into PyTorch statically, and llmprof's probes cannot see it).
"""
import os
import sys

import torch
import torch.distributed as dist

MIB = 1 << 20
SIZE = 256 * MIB
ITERATIONS = int(os.environ.get("ITERATIONS", "20"))
SLEEP_CYCLES = 2_000_000  # about a millisecond


def timed(call):
    start = torch.cuda.Event(enable_timing=True)
    end = torch.cuda.Event(enable_timing=True)
    torch.cuda._sleep(SLEEP_CYCLES)
    start.record()
    call()
    end.record()
    return start, end


def reduce_step(tensor):
    return timed(lambda: dist.all_reduce(tensor, op=dist.ReduceOp.AVG))


def gather_step(output, tensor):
    return timed(lambda: dist.all_gather_into_tensor(output, tensor))


def nccl_library():
    with open("/proc/self/maps") as maps:
        for line in maps:
            path = line.split()[-1]
            if os.path.basename(path).startswith("libnccl.so"):
                return path
    return "none"


def main():
    if not torch.cuda.is_available() or not dist.is_nccl_available():
        print("torch_nccl: no CUDA device or no NCCL in torch.distributed", file=sys.stderr)
        return 1
    torch.cuda.set_device(0)
    options = dict(backend="nccl", init_method="tcp://127.0.0.1:%s" % os.environ.get("PORT", "29517"),
                   rank=0, world_size=1)
    try:
        dist.init_process_group(device_id=torch.device("cuda", 0), **options)
    except TypeError:  # torch before 2.3: the communicator comes at the first call
        dist.init_process_group(**options)
    small = torch.ones(MIB // 4, dtype=torch.float32, device="cuda")
    dist.all_reduce(small, op=dist.ReduceOp.AVG)
    dist.all_gather_into_tensor(torch.empty_like(small), small)
    torch.cuda.synchronize()

    tensor = torch.ones(SIZE // 4, dtype=torch.float32, device="cuda")
    output = torch.empty_like(tensor)
    timings = {"AllReduce": [], "AllGather": []}
    for _ in range(ITERATIONS):
        timings["AllReduce"].append(reduce_step(tensor))
    for _ in range(ITERATIONS):
        timings["AllGather"].append(gather_step(output, tensor))
    torch.cuda.synchronize()
    for name, pairs in timings.items():
        total_us = sum(start.elapsed_time(end) for start, end in pairs) * 1000
        print(f"collective {name} {SIZE} {len(pairs)} {total_us:.1f}")
    print(f"nccl_library {nccl_library()}")
    dist.destroy_process_group()
    return 0


if __name__ == "__main__":
    sys.exit(main())
