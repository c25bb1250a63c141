#!/usr/bin/env python3
"""Causal attention forward and backward time across sequence lengths, as
swift-run calls it (SDPA, GQA in the kernel, the backend SDPA picks: cuDNN
on H100/H200), for the attention time model's fit and its held-out checks
(docs/cost-model.md, "Attention time"; issue 31 item 6).

Usage (device): python3 benchmarks/runtime/attention_lengths.py OUT.jsonl [S...]
One JSON row per (model, S): heads, kv heads, head dim, forward ms, backward
ms (one layer, B1), the GPU's name. Long sequences run fewer iterations.
"""
import json
import os
import sys

import torch
import torch.nn.functional as F

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from cuda_timing import bench  # noqa: E402

SHAPES = {"llama3.2-1b": (32, 8, 64), "llama3.1-8b": (32, 8, 128)}
LENGTHS = [4096, 8192, 16384, 32768, 65536, 131072, 262144]


def main():
    out = sys.argv[1]
    lengths = [int(s) for s in sys.argv[2:]] or LENGTHS
    gpu = torch.cuda.get_device_name()
    with open(out, "a") as f:
        for model, (H, KV, D) in SHAPES.items():
            for S in lengths:
                opt = dict(device="cuda", dtype=torch.bfloat16)
                q = torch.randn(1, H, S, D, **opt, requires_grad=True)
                k = torch.randn(1, KV, S, D, **opt, requires_grad=True)
                v = torch.randn(1, KV, S, D, **opt, requires_grad=True)
                dy = torch.randn(1, H, S, D, **opt)
                iters = max(2, min(20, int(20 * (16384 / S) ** 2)))

                def fwd():
                    with torch.no_grad():
                        F.scaled_dot_product_attention(q, k, v, is_causal=True, enable_gqa=True)

                def both():
                    y = F.scaled_dot_product_attention(q, k, v, is_causal=True, enable_gqa=True)
                    y.backward(dy)

                f_ms = bench(fwd, iters=iters, warmup=1)
                fb_ms = bench(both, iters=iters, warmup=1)
                row = dict(model=model, S=S, heads=H, kv_heads=KV, head_dim=D,
                           forward_ms=round(f_ms, 4), backward_ms=round(fb_ms - f_ms, 4),
                           gpu=gpu, measured="attention_lengths.py, torch "
                           + torch.__version__)
                print(json.dumps(row), flush=True)
                f.write(json.dumps(row) + "\n")
                del q, k, v, dy
                torch.cuda.empty_cache()


if __name__ == "__main__":
    main()
