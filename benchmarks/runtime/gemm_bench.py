#!/usr/bin/env python3
"""bf16 GEMM rates of the decoder's linears in each direction, on the
side-by-side shapes: forward Y = X W^T, input gradient dX = dY W, weight
gradient dW = dY^T X (what swift-run and autograd run).

Usage (device): python3 benchmarks/runtime/gemm_bench.py
"""
import os
import sys

import torch

from cuda_timing import bench

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
import models  # noqa: E402


def shape(model, B, S):
    """tokens, hidden, qkv width, intermediate"""
    m = models.MODELS[model]
    qkv = (m["num_attention_heads"] + 2 * m["num_key_value_heads"]) * m["head_dim"]
    return B * S, m["hidden_size"], qkv, m["intermediate_size"]


SHAPES = {f"{model} B{B} S{S}": shape(model, B, S)
          for model, B, S in (("llama3.2-1b", 4, 2048), ("llama3.2-3b", 2, 4096),
                              ("llama3.1-8b", 1, 4096))}


def main():
    opt = dict(device="cuda", dtype=torch.bfloat16)
    for name, (T, C, QKV, I) in SHAPES.items():
        for lin, (n, k) in {"qkv": (QKV, C), "o": (C, C), "gate_up": (2 * I, C),
                            "down": (C, I)}.items():
            x = torch.randn(T, k, **opt)
            w = torch.randn(n, k, **opt)
            dy = torch.randn(T, n, **opt)
            dw32 = torch.zeros(n, k, device="cuda", dtype=torch.float32)
            flops = 2.0 * T * n * k
            row = []
            for what, fn in (("fwd", lambda: x @ w.t()), ("dX", lambda: dy @ w),
                             ("dW", lambda: dy.t() @ x),
                             ("dW^T", lambda: x.t() @ dy),
                             ("dW+=fp32", lambda: dw32.add_(dy.t() @ x))):
                ms = bench(fn)
                row.append(f"{what} {flops / ms / 1e9:4.0f}")
            print(f"{name:22} {lin:8} T{T} N{n} K{k}: " + "  ".join(row) + " TFLOP/s",
                  flush=True)


if __name__ == "__main__":
    main()
