#!/usr/bin/env python3
"""Causal attention forward+backward on the side-by-side shapes, per SDPA
backend (flash, cuDNN, memory-efficient), GQA in the kernel or expanded.

Usage (device): python3 benchmarks/runtime/attention_bench.py
Prints ms per forward+backward and TFLOP/s counted as the MFU formula counts
attention (6 * S * C per token per layer: causal half of 4*S*D*H forward,
times 3 with backward).
"""
import torch
import torch.nn.functional as F
from torch.nn.attention import SDPBackend, sdpa_kernel

from cuda_timing import bench

SHAPES = {  # name: B, H, KV, S, D
    "llama3.2-1b B4 S2048": (4, 32, 8, 2048, 64),
    "llama3.2-3b B2 S4096": (2, 24, 8, 4096, 128),
    "qwen2.5-0.5b B4 S2048": (4, 14, 2, 2048, 64),
    "llama3.1-8b B1 S4096": (1, 32, 8, 4096, 128),
}
BACKENDS = {"flash": SDPBackend.FLASH_ATTENTION, "cudnn": SDPBackend.CUDNN_ATTENTION,
            "efficient": SDPBackend.EFFICIENT_ATTENTION}


def main():
    for name, (B, H, KV, S, D) in SHAPES.items():
        opt = dict(device="cuda", dtype=torch.bfloat16)
        q = torch.randn(B, H, S, D, **opt, requires_grad=True)
        k = torch.randn(B, KV, S, D, **opt, requires_grad=True)
        v = torch.randn(B, KV, S, D, **opt, requires_grad=True)
        dy = torch.randn(B, H, S, D, **opt)
        flops = 6.0 * S * H * D * B * S  # per layer, the MFU convention
        for bname, backend in BACKENDS.items():
            for gqa in (True, False):
                def step():
                    kk, vv = (k, v) if gqa else (k.repeat_interleave(H // KV, 1),
                                                 v.repeat_interleave(H // KV, 1))
                    y = F.scaled_dot_product_attention(q, kk, vv, is_causal=True,
                                                       enable_gqa=gqa)
                    y.backward(dy)
                try:
                    with sdpa_kernel([backend]):
                        ms = bench(step)
                    print(f"{name:24} {bname:9} gqa={'kernel' if gqa else 'expand'}"
                          f" {ms:7.3f} ms  {flops / ms / 1e9:6.1f} TFLOP/s", flush=True)
                except RuntimeError as e:
                    print(f"{name:24} {bname:9} gqa={'kernel' if gqa else 'expand'}"
                          f"  n/a ({str(e).splitlines()[0][:80]})", flush=True)


if __name__ == "__main__":
    main()
