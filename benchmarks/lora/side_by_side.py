#!/usr/bin/env python3
"""LoRA / QLoRA side by side on one GPU (device machine): swift-run on a
plan swift-plan wrote (benchmarks/lora/plans, with its predictions) against
HF transformers + peft on the same shape, in the same call.

  python3 benchmarks/lora/side_by_side.py OUTDIR PLAN.json [--no-hf]

The HF side mirrors the plan: its model (Llama architecture), batch,
sequence, adapters (rank, alpha, targets) and checkpointing (full: HF's
gradient checkpointing, non-reentrant); bf16 model, peft's fp32 adapters
under autocast, fused AdamW over the adapters. QLoRA plans run swift-run
only (HF's QLoRA needs bitsandbytes, which the GPU machine lacks), as does
--no-hf. Random weights on both sides (speed and memory do not depend on
them). 8 steps, the first two excluded. Prints tokens/s, peak memory, the
planner's predictions and the ratios; writes OUTDIR/<plan>.json.
"""
import json
import os
import subprocess
import sys
import time

OUT, PLAN = sys.argv[1], sys.argv[2]
WITH_HF = "--no-hf" not in sys.argv[3:]
STEPS = 8
NAME = os.path.splitext(os.path.basename(PLAN))[0]
plan = json.load(open(PLAN))
m, t, st = plan["model"], plan["training"], plan["strategy"]
B, S, CKPT = t["micro_batch_size"], t["sequence_length"], st["checkpointing"]
METHOD, LORA = t["method"], t["lora"]
os.makedirs(OUT, exist_ok=True)


def swift():
    metrics = os.path.join(OUT, f"{NAME}-swift.jsonl")
    r = subprocess.run(["build-gpu/bin/swift-run", PLAN, "--device", "cuda", "--steps",
                        str(STEPS), "--metrics", metrics], capture_output=True, text=True)
    print(r.stdout[-1500:], r.stderr[-1500:])
    if r.returncode != 0:
        sys.exit(f"swift-run exited {r.returncode}")
    rows = [json.loads(l) for l in open(metrics)]
    steady = rows[2:]
    step = sum(x["step_seconds"] for x in steady) / len(steady)
    return dict(tokens_per_second=B * S / step, step_seconds=step,
                peak_gib=max(x["peak_memory_bytes"] for x in rows) / 2**30,
                losses=[x["loss"] for x in rows])


def hf():
    import torch
    from peft import LoraConfig, get_peft_model
    from transformers import LlamaConfig, LlamaForCausalLM
    assert not m["qk_norm"] and not m["attention_qkv_bias"], "HF side: Llama only"
    cfg = LlamaConfig(hidden_size=m["hidden_size"], intermediate_size=m["intermediate_size"],
                      num_hidden_layers=m["num_hidden_layers"],
                      num_attention_heads=m["num_attention_heads"],
                      num_key_value_heads=m["num_key_value_heads"], head_dim=m["head_dim"],
                      vocab_size=m["vocab_size"], tie_word_embeddings=m["tie_word_embeddings"],
                      rms_norm_eps=m["rms_norm_eps"], rope_theta=m["rope_theta"],
                      max_position_embeddings=max(S, 8192), attn_implementation="sdpa")
    torch.manual_seed(0)
    with torch.device("cuda"):
        model = LlamaForCausalLM(cfg).to(torch.bfloat16)
    if CKPT == "full":
        model.gradient_checkpointing_enable(gradient_checkpointing_kwargs={"use_reentrant": False})
        model.enable_input_require_grads()
    model = get_peft_model(model, LoraConfig(r=LORA["rank"], lora_alpha=LORA["alpha"],
                                             lora_dropout=LORA["dropout"],
                                             target_modules=LORA["targets"],
                                             task_type="CAUSAL_LM"))
    params = [p for p in model.parameters() if p.requires_grad]
    opt = torch.optim.AdamW(params, lr=1e-4, betas=(0.9, 0.95), eps=1e-8, weight_decay=0.0,
                            fused=True)
    torch.cuda.reset_peak_memory_stats()
    times = []
    for step in range(STEPS):
        ids = torch.randint(0, m["vocab_size"], (B, S), device="cuda")
        torch.cuda.synchronize()
        start = time.time()
        with torch.autocast("cuda", dtype=torch.bfloat16):
            loss = model(input_ids=ids, labels=ids).loss
        loss.backward()
        opt.step()
        opt.zero_grad(set_to_none=True)
        torch.cuda.synchronize()
        times.append(time.time() - start)
    steady = times[2:]
    result = dict(tokens_per_second=B * S / (sum(steady) / len(steady)),
                  peak_gib=torch.cuda.max_memory_allocated() / 2**30)
    del model, opt, params
    torch.cuda.empty_cache()
    return result


s = swift()
pred = plan["predicted"]
res = dict(plan=NAME, method=METHOD, batch=B, seq=S, checkpointing=CKPT, rank=LORA["rank"],
           swift=s, predicted=dict(peak_gib=pred["peak_memory_bytes"] / 2**30,
                                   step_seconds=pred["step_seconds"],
                                   tokens_per_second=pred["tokens_per_second"]))
line = (f"{NAME}: swift-run {s['tokens_per_second']:,.0f} tok/s ({s['step_seconds']:.3f} s) "
        f"peak {s['peak_gib']:.2f} GiB | planned {pred['tokens_per_second']:,.0f} tok/s "
        f"({100 * (pred['step_seconds'] / s['step_seconds'] - 1):+.1f}% step) "
        f"peak {res['predicted']['peak_gib']:.2f} GiB "
        f"({100 * (res['predicted']['peak_gib'] / s['peak_gib'] - 1):+.1f}%)")
if WITH_HF and METHOD == "lora":
    h = hf()
    res.update(hf_peft=h, speed_ratio=s["tokens_per_second"] / h["tokens_per_second"],
               peak_ratio=s["peak_gib"] / h["peak_gib"])
    line += (f" | HF+peft {h['tokens_per_second']:,.0f} tok/s peak {h['peak_gib']:.2f} GiB"
             f" | speed x{res['speed_ratio']:.2f}, peak x{res['peak_ratio']:.2f}")
json.dump(res, open(os.path.join(OUT, f"{NAME}.json"), "w"), indent=1)
print(line)
