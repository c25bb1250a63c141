"""Measures a hardware profile for swift-plan on the GPU it runs on and
prints it as YAML (the keys of cluster.profile; see docs/cost-model.md).

Usage on the GPU machine:  python3 measure_profile.py GPU_PRESET > profile.yaml
Multi-GPU bus bandwidth is measured only when torchrun starts it with
WORLD_SIZE > 1 (all-reduce of 256 MiB over NCCL); otherwise those keys are
left out and swift-plan keeps the datasheet links.
"""
import os, sys, time, datetime
import torch
import torch.nn.functional as F

def timed(fn, iters=20, warmup=3):
    for _ in range(warmup):
        fn()
    torch.cuda.synchronize()
    start = torch.cuda.Event(enable_timing=True); end = torch.cuda.Event(enable_timing=True)
    start.record()
    for _ in range(iters):
        fn()
    end.record(); torch.cuda.synchronize()
    return start.elapsed_time(end) / 1e3 / iters

def main():
    gpu = sys.argv[1] if len(sys.argv) > 1 else "unknown"
    dev = torch.device("cuda")
    bf = torch.bfloat16
    # GEMMs of decoder-layer shapes (tokens x hidden x ffn), fwd-sized.
    rates = []
    for m, k, n in [(8192, 4096, 14336), (8192, 14336, 4096), (8192, 2048, 8192), (16384, 4096, 4096)]:
        a = torch.randn(m, k, device=dev, dtype=bf); b = torch.randn(k, n, device=dev, dtype=bf)
        rates.append(2 * m * k * n / timed(lambda: a @ b))
    matmul = sorted(rates)[len(rates) // 2]
    # Causal SDPA forward + backward (B=2, 32 heads, S=4096, d=128), useful FLOPs.
    q, k, v = (torch.randn(2, 32, 4096, 128, device=dev, dtype=bf, requires_grad=True) for _ in range(3))
    def attn():
        o = F.scaled_dot_product_attention(q, k, v, is_causal=True)
        o.backward(torch.ones_like(o))
    flops = 3.5 * 4 * 2 * 32 * 4096 * 4096 * 128 / 2
    attention = flops / timed(attn, iters=10)
    # Elementwise bandwidth of eager kernels (read + write of a 1 GiB bf16 tensor).
    x = torch.randn(1 << 29, device=dev, dtype=bf)
    elementwise = 2 * x.numel() * 2 / timed(lambda: torch.mul(x, 1.0001))
    # Pinned host -> device copies.
    host = torch.empty(1 << 30, dtype=torch.uint8).pin_memory()
    devbuf = torch.empty(1 << 30, dtype=torch.uint8, device=dev)
    h2d = host.numel() / timed(lambda: devbuf.copy_(host, non_blocking=True), iters=10)
    # CPU AdamW (torch, foreach) on 64M fp32 parameters.
    n = 1 << 26
    p = torch.zeros(n, requires_grad=True); p.grad = torch.randn(n)
    opt = torch.optim.AdamW([p], lr=1e-4, foreach=True)
    t0 = time.time(); [opt.step() for _ in range(3)]; cpu_adam = (time.time() - t0) / 3 / n

    print(f"# measured by benchmarks/hardware/measure_profile.py on {torch.cuda.get_device_name(0)},")
    print(f"# torch {torch.__version__}, {datetime.date.today()}")
    print(f"gpu: {gpu}")
    print(f"matmul_tflops: {matmul / 1e12:.1f}")
    print(f"attention_tflops: {attention / 1e12:.1f}")
    print(f"elementwise_gbps: {elementwise / 1e9:.0f}")
    print(f"host_link_gbps: {h2d / 1e9:.1f}")
    print(f"cpu_adam_ns_per_param: {cpu_adam * 1e9:.2f}")
    if int(os.environ.get("WORLD_SIZE", "1")) > 1:
        import torch.distributed as dist
        dist.init_process_group("nccl")
        torch.cuda.set_device(int(os.environ["LOCAL_RANK"]))
        world = dist.get_world_size()
        buf = torch.empty(1 << 27, device="cuda", dtype=bf)  # 256 MiB
        t = timed(lambda: dist.all_reduce(buf), iters=10)
        busbw = buf.numel() * 2 * 2 * (world - 1) / world / t
        small = torch.empty(256, device="cuda", dtype=bf)
        lat = timed(lambda: dist.all_reduce(small), iters=50) / (2 * (world - 1))
        if dist.get_rank() == 0:
            print(f"intra_node_bus_gbps: {busbw / 1e9:.0f}")
            print(f"collective_latency_us: {lat * 1e6:.1f}")

if __name__ == "__main__":
    main()
