# SPDX-License-Identifier: GPL-2.0
"""Known GPU memory from known functions, for scripts/gpu-check.sh.

load_weights() keeps 256 MiB; forward() allocates three 64 MiB activations
and frees them; the caching allocator keeps what it reserved.  At the end
the script prints "reserved_peak BYTES" (torch.cuda.max_memory_reserved())
and "allocated_peak BYTES" (torch.cuda.max_memory_allocated()).
"""
import sys

import torch

MIB = 1 << 20


def load_weights():
    return torch.empty(256 * MIB // 4, dtype=torch.float32, device="cuda")


def forward(weights):
    activations = [torch.empty(64 * MIB // 4, dtype=torch.float32, device="cuda")
                   for _ in range(3)]
    total = sum(float(a.numel()) for a in activations)
    del activations
    return total + weights.numel()


def main():
    if not torch.cuda.is_available():
        print("torch_memory: no CUDA device", file=sys.stderr)
        return 1
    weights = load_weights()
    forward(weights)
    torch.cuda.synchronize()
    print(f"reserved_peak {torch.cuda.max_memory_reserved()}")
    print(f"allocated_peak {torch.cuda.max_memory_allocated()}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
