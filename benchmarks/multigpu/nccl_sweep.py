#!/usr/bin/env python3
"""NCCL bus bandwidth of all-gather, reduce-scatter and all-reduce from 1 MiB
to 1 GiB (bf16), the numbers swift-plan's communication model needs.

Usage: torchrun --nproc-per-node N nccl_sweep.py OUT.jsonl

Bus bandwidth as nccl-tests defines it (what each link carries, comparable
across world sizes): all-reduce algbw * 2(n-1)/n, all-gather and
reduce-scatter algbw * (n-1)/n, where algbw = bytes / time and bytes is the
full (gathered / reduced) buffer. Rank 0 prints a table and appends one JSON
line per (op, size) to OUT.jsonl; the last line suggests the hardware-profile
keys (intra_node_bus_gbps: median bus bandwidth of the >= 64 MiB all-reduces;
collective_latency_us: the 1 MiB all-reduce's time per ring step).
At world 1 NCCL copies locally: the bus bandwidth is 0 by definition.
"""
import json
import os
import statistics
import sys

import torch
import torch.distributed as dist

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "runtime"))
from cuda_timing import bench  # noqa: E402


def time_op(fn, iters):
    """Seconds per call of the collective fn on the slowest rank."""
    dist.barrier()
    t = torch.tensor([bench(fn, iters=iters) / 1e3], device="cuda")
    dist.all_reduce(t, op=dist.ReduceOp.MAX)
    return t.item()


def main():
    if len(sys.argv) != 2:
        sys.exit(__doc__)
    dist.init_process_group("nccl")
    rank, n = dist.get_rank(), dist.get_world_size()
    torch.cuda.set_device(int(os.environ.get("LOCAL_RANK", "0")))
    rows = []
    size = 1 << 20
    while size <= 1 << 30:
        elems = size // 2  # bf16
        full = torch.empty(elems, device="cuda", dtype=torch.bfloat16)
        shard = torch.empty(elems // n, device="cuda", dtype=torch.bfloat16)
        iters = max(5, min(50, (1 << 33) // (size * 8)))
        ops = {
            "all_reduce": (lambda: dist.all_reduce(full), 2.0 * (n - 1) / n),
            "all_gather": (lambda: dist.all_gather_into_tensor(full, shard), (n - 1) / n),
            "reduce_scatter": (lambda: dist.reduce_scatter_tensor(shard, full), (n - 1) / n),
        }
        for op, (fn, factor) in ops.items():
            t = time_op(fn, iters)
            algbw = size / t
            rows.append(dict(op=op, bytes=size, world=n, seconds=t,
                             algbw_gbps=algbw / 1e9, busbw_gbps=algbw * factor / 1e9))
        del full, shard
        size *= 4
    if rank == 0:
        print(f"{'op':15} {'bytes':>12} {'time us':>10} {'algbw GB/s':>11} {'busbw GB/s':>11}")
        for r in rows:
            print(f"{r['op']:15} {r['bytes']:12,} {r['seconds'] * 1e6:10.1f} "
                  f"{r['algbw_gbps']:11.1f} {r['busbw_gbps']:11.1f}")
        big = [r["busbw_gbps"] for r in rows if r["op"] == "all_reduce" and r["bytes"] >= 1 << 26]
        small = next(r for r in rows if r["op"] == "all_reduce" and r["bytes"] == 1 << 20)
        profile = dict(intra_node_bus_gbps=round(statistics.median(big), 1),
                       collective_latency_us=round(small["seconds"] * 1e6 / max(1, 2 * (n - 1)), 1))
        print("profile keys:", json.dumps(profile))
        with open(sys.argv[1], "a") as f:
            for r in rows:
                f.write(json.dumps(r) + "\n")
            f.write(json.dumps(dict(profile=profile, world=n,
                                    gpu=torch.cuda.get_device_name(0))) + "\n")
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
