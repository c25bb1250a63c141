#!/usr/bin/env python3
"""Where one swift-run step's GPU time goes, from `swift-run --trace FILE`.

Usage: trace_summary.py TRACE.json [--top N] [--gaps N]

Prints the GPU's busy time (union of kernel/copy intervals) against the
step's span, then time by kind of kernel (GEMM, attention, swift's fused
kernels, ATen elementwise/reductions, copies, NCCL) and the top kernels by
total time; --gaps N: the N longest idle gaps, with the kernels on either
side and the gap's position in the step. Standard library only.
"""
import argparse
import json
import re
import sys
from collections import defaultdict

KINDS = [  # first match wins; patterns on the lower-cased kernel name
    ("attention", r"flash|fmha|attention|sdpa|cudnn"),
    ("gemm", r"gemm|cutlass|nvjet|xmma|cublas|matmul|sm90_|sm100_"),
    ("swift fused", r"rmsnorm|swiglu|rope|crossentropyrows|adamw"),
    ("nccl", r"nccl"),
    ("reduction", r"reduce"),
    ("elementwise", r"elementwise|vectorized|unrolled|fill|copy|cat|index"),
]
GPU_CATS = {"kernel", "gpu_memcpy", "gpu_memset", "Kernel", "Memcpy", "Memset"}


def kind_of(name, cat):
    if "memcpy" in cat.lower():
        return "memcpy"
    if "memset" in cat.lower():
        return "memset"
    low = name.lower()
    for kind, pattern in KINDS:
        if re.search(pattern, low):
            return kind
    return "other"


def union_length(intervals):
    total, end = 0.0, float("-inf")
    for s, e in sorted(intervals):
        if s > end:
            total += e - s
            end = e
        elif e > end:
            total += e - end
            end = e
    return total


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("trace")
    ap.add_argument("--top", type=int, default=25)
    ap.add_argument("--gaps", type=int, default=0)
    a = ap.parse_args()
    try:
        with open(a.trace) as f:
            events = json.load(f)
    except (OSError, ValueError) as e:
        sys.exit(f"trace_summary: {a.trace}: {e}")
    events = events.get("traceEvents", events) if isinstance(events, dict) else events
    gpu = [e for e in events
           if e.get("ph") == "X" and e.get("cat", "") in GPU_CATS and "dur" in e]
    if not gpu:
        sys.exit(f"trace_summary: {a.trace}: no GPU events (a CPU run?)")
    spans = [(float(e["ts"]), float(e["ts"]) + float(e["dur"])) for e in gpu]
    span = max(e for _, e in spans) - min(s for s, _ in spans)
    busy = union_length(spans)
    by_kind, by_name = defaultdict(float), defaultdict(lambda: [0.0, 0])
    for e in gpu:
        d = float(e["dur"])
        by_kind[kind_of(e["name"], e["cat"])] += d
        by_name[e["name"]][0] += d
        by_name[e["name"]][1] += 1
    total = sum(by_kind.values())
    print(f"GPU span {span / 1e3:.1f} ms, busy {busy / 1e3:.1f} ms "
          f"({100 * busy / span:.1f}%), idle {(span - busy) / 1e3:.1f} ms, "
          f"{len(gpu)} kernels/copies")
    for kind, t in sorted(by_kind.items(), key=lambda kv: -kv[1]):
        print(f"  {kind:<12} {t / 1e3:9.2f} ms  {100 * t / total:5.1f}%")
    print(f"top {a.top} by total time:")
    for name, (t, n) in sorted(by_name.items(), key=lambda kv: -kv[1][0])[:a.top]:
        short = name if len(name) <= 100 else name[:97] + "..."
        print(f"  {t / 1e3:8.2f} ms {n:5d}x  {kind_of(name, ''):<11} {short}")
    if a.gaps:
        short = lambda n: n if len(n) <= 60 else n[:57] + "..."
        ordered = sorted(gpu, key=lambda e: float(e["ts"]))
        start, gaps, end, last = float(ordered[0]["ts"]), [], float("-inf"), None
        for e in ordered:
            s0, e0 = float(e["ts"]), float(e["ts"]) + float(e["dur"])
            if last is not None and s0 > end:
                gaps.append((s0 - end, end - start, last["name"], e["name"]))
            if e0 > end:
                end, last = e0, e
        print(f"{a.gaps} longest idle gaps (of {len(gaps)}, "
              f"{sum(g[0] for g in gaps) / 1e3:.2f} ms):")
        for d, at, before, after in sorted(gaps, reverse=True)[:a.gaps]:
            print(f"  {d:8.1f} us at {at / 1e3:7.2f} ms  after {short(before)}  "
                  f"before {short(after)}")


if __name__ == "__main__":
    main()
