#!/usr/bin/env python3
"""Causal attention forward+backward on the side-by-side shapes, per SDPA
backend (flash, cuDNN, memory-efficient), GQA in the kernel or expanded.

Usage (device): python3 benchmarks/runtime/attention_bench.py
Prints ms per forward+backward and TFLOP/s counted as the MFU formula counts
attention (6 * S * C per token per layer: causal half of 4*S*D*H forward,
times 3 with backward).
"""
import os
import sys

import torch
import torch.nn.functional as F
from torch.nn.attention import SDPBackend, sdpa_kernel

from cuda_timing import bench

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
import models  # noqa: E402


def shape(model, B, S):
    """B, H, KV, S, D"""
    m = models.MODELS[model]
    return B, m["num_attention_heads"], m["num_key_value_heads"], S, m["head_dim"]


SHAPES = {f"{model} B{B} S{S}": shape(model, B, S)
          for model, B, S in (("llama3.2-1b", 4, 2048), ("llama3.2-3b", 2, 4096),
                              ("qwen2.5-0.5b", 4, 2048), ("llama3.1-8b", 1, 4096))}
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
