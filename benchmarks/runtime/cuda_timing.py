"""CUDA-event timing shared by the runtime micro-benchmarks."""
import torch


def bench(fn, iters=20, warmup=3):
    """Milliseconds per call of fn, averaged over `iters` calls after
    `warmup` untimed ones, timed with CUDA events on the current stream."""
    for _ in range(warmup):
        fn()
    start = torch.cuda.Event(enable_timing=True)
    end = torch.cuda.Event(enable_timing=True)
    torch.cuda.synchronize()
    start.record()
    for _ in range(iters):
        fn()
    end.record()
    torch.cuda.synchronize()
    return start.elapsed_time(end) / iters
