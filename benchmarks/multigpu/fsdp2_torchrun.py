#!/usr/bin/env python3
"""PyTorch FSDP2 with the HF model under torchrun: the multi-GPU baseline
swift-run's ZeRO stages are compared with (run.sh).

Usage: torchrun --nproc-per-node N fsdp2_torchrun.py OUT.jsonl [STEPS]

Per case of cases.py: HF transformers' Llama (benchmarks/calibration/
hf_baseline.py's build_model: fully_shard per decoder layer and the root,
bf16 parameters with fp32 gradient reduction, AdamW foreach, sdpa), the same
global batch as swift-run (per-rank micro-batch B, 8 / world micro-steps with
gradient sync on the last one only), synthetic tokens. Rank 0 appends one
JSON line per case: median step time over steps 2.., tokens/s of all ranks,
and the largest per-rank peak of allocated bytes in a steady step.
"""
import json
import os
import sys
import time

import torch
import torch.distributed as dist

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(HERE, "..", "calibration"))
import cases  # noqa: E402


def run(hf_baseline, case, world, rank, steps):
    c = dict(model=case["hf"], mode="fsdp", B=case["B"], S=case["S"], ckpt=False,
             reshard=True)
    torch.cuda.reset_peak_memory_stats()
    model, opt, cfg, _ = hf_baseline.build_model(c)
    micro = cases.MICRO_STEPS_AT_WORLD_1 // world
    gen = torch.Generator(device="cuda")
    times, peaks, loss = [], [], 0.0
    for step in range(steps):
        torch.cuda.synchronize()
        torch.cuda.reset_peak_memory_stats()
        t0 = time.time()
        total = torch.zeros((), device="cuda")
        for k in range(micro):
            gen.manual_seed(1000003 * step + 1009 * rank + k)
            ids = torch.randint(0, cfg.vocab_size, (case["B"], case["S"]), device="cuda",
                                generator=gen)
            model.set_requires_gradient_sync(k == micro - 1)
            out = model(input_ids=ids, labels=ids)
            (out.loss / micro).backward()
            total += out.loss.detach() / micro
        opt.step()
        opt.zero_grad(set_to_none=True)
        torch.cuda.synchronize()
        times.append(time.time() - t0)
        peaks.append(torch.cuda.max_memory_allocated())
        dist.all_reduce(total)
        loss = total.item() / world
    stats = torch.tensor([max(peaks[1:] or peaks), max(times[1:] or times)], device="cuda",
                         dtype=torch.float64)
    dist.all_reduce(stats, op=dist.ReduceOp.MAX)
    steady = sorted(times[1:] or times)
    step_s = steady[len(steady) // 2]
    del model, opt
    torch.cuda.empty_cache()
    tokens = cases.global_batch(case) * case["S"]
    return dict(config=case["name"], world=world, backend="fsdp2", step_s_median=step_s,
                tokens_per_s=tokens / step_s, peak_alloc_steady=int(stats[0].item()),
                loss=loss, micro_batch=case["B"], gradient_accumulation=micro)


def main():
    if len(sys.argv) not in (2, 3):
        sys.exit(__doc__)
    steps = int(sys.argv[2]) if len(sys.argv) == 3 else 5
    dist.init_process_group("nccl")
    rank, world = dist.get_rank(), dist.get_world_size()
    torch.cuda.set_device(int(os.environ.get("LOCAL_RANK", "0")))
    argv = sys.argv
    sys.argv = ["hf_baseline.py", str(world), os.devnull]  # read at its import
    import hf_baseline
    sys.argv = argv
    for case in cases.CASES:
        if cases.MICRO_STEPS_AT_WORLD_1 % world:
            sys.exit(f"fsdp2_torchrun: world {world} does not divide "
                     f"{cases.MICRO_STEPS_AT_WORLD_1} micro-steps")
        r = run(hf_baseline, case, world, rank, steps)
        if rank == 0:
            print(json.dumps(r), flush=True)
            with open(sys.argv[1], "a") as f:
                f.write(json.dumps(r) + "\n")
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
