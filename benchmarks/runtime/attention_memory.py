#!/usr/bin/env python3
"""What causal attention's backward allocates beyond its inputs and saved
tensors, as swift-run calls it (SDPA with GQA in the kernel, and the varlen
flash entry point for packed windows), at long sequences: the cost model's
attention-backward moment is priced from these bytes per token.

Usage (device): python3 benchmarks/runtime/attention_memory.py [S...]
Per S: the backend SDPA picks, the bytes the forward leaves beyond q/k/v
(its output and saved log-sum-exp), and the backward's peak beyond the
forward's leftovers and the output gradient, per token and in units of
H x D (the query width).
"""
import sys

import torch
import torch.nn.functional as F

H, KV, D = 32, 8, 128  # Llama-3.1-8B


def probe(S, gqa_kernel=True):
    torch.cuda.empty_cache()
    dev = "cuda"
    q = torch.randn(1, H, S, D, device=dev, dtype=torch.bfloat16, requires_grad=True)
    k = torch.randn(1, KV, S, D, device=dev, dtype=torch.bfloat16, requires_grad=True)
    v = torch.randn(1, KV, S, D, device=dev, dtype=torch.bfloat16, requires_grad=True)
    torch.cuda.synchronize()
    base = torch.cuda.memory_allocated()
    out = F.scaled_dot_product_attention(q, k, v, is_causal=True, enable_gqa=True)
    torch.cuda.synchronize()
    fwd = torch.cuda.memory_allocated() - base
    g = torch.randn_like(out)
    torch.cuda.synchronize()
    torch.cuda.reset_peak_memory_stats()
    before = torch.cuda.memory_allocated()
    out.backward(g)
    torch.cuda.synchronize()
    peak = torch.cuda.max_memory_allocated() - before
    after = torch.cuda.memory_allocated() - before
    name = out.grad_fn.name() if out.grad_fn else "?"
    qw = S * H * D
    print(f"S {S:7d} {name:42s} forward leaves {fwd / S:8.0f} B/token"
          f" ({fwd / qw:.3f} x S*H*D); backward peak {peak / S:8.0f} B/token"
          f" ({peak / qw:.3f} x S*H*D), leaves {after / S:8.0f} B/token"
          f" ({after / qw:.3f})", flush=True)
    del q, k, v, out, g


for s in [int(a) for a in sys.argv[1:]] or [8192, 32768, 131072]:
    probe(s)
