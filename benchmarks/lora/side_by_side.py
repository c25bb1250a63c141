#!/usr/bin/env python3
"""LoRA side by side on one GPU (device machine): swift-run against HF
transformers + peft on the same shape, in the same call.

  python3 benchmarks/lora/side_by_side.py OUTDIR [MODEL] [B] [S] [CKPT]

MODEL is a benchmarks/models.py name (default llama3.1-8b); rank 16,
alpha 32, all seven decoder linears, bf16-mixed (swift-run: bf16 base,
fp32 adapter masters; HF: bf16 model, peft's fp32 adapters), AdamW.
CKPT (none|full) is both sides' activation checkpointing. Random weights
on both sides (speed and memory do not depend on them). Prints tokens/s,
peak memory and the ratios; writes OUTDIR/lora-side-by-side.json.
"""
import json
import os
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, ".."))
import models  # noqa: E402

OUT = sys.argv[1]
NAME = sys.argv[2] if len(sys.argv) > 2 else "llama3.1-8b"
B = int(sys.argv[3]) if len(sys.argv) > 3 else 4
S = int(sys.argv[4]) if len(sys.argv) > 4 else 2048
CKPT = sys.argv[5] if len(sys.argv) > 5 else "none"
STEPS, RANK, ALPHA = 8, 16, 32.0
TARGETS = ["q_proj", "k_proj", "v_proj", "o_proj", "gate_proj", "up_proj", "down_proj"]
os.makedirs(OUT, exist_ok=True)
m = models.model(NAME)


def swift():
    plan = {"schema": "swift.plan", "version": 1,
            "model": {k: v for k, v in m.items() if k != "model_type"},
            "training": {"sequence_length": S, "global_batch_size": B, "micro_batch_size": B,
                         "gradient_accumulation": 1, "precision": "bf16-mixed",
                         "optimizer": {"lr": 1e-4, "betas": [0.9, 0.95], "eps": 1e-8,
                                       "weight_decay": 0.0},
                         "method": "lora",
                         "lora": {"rank": RANK, "alpha": ALPHA, "dropout": 0.0,
                                  "targets": TARGETS}},
            "world": {"size": 1, "gpus_per_node": 1},
            "strategy": {"zero": 0, "offload": "none", "checkpointing": CKPT}}
    path = os.path.join(OUT, "lora-plan.json")
    json.dump(plan, open(path, "w"), indent=1)
    metrics = os.path.join(OUT, "lora-swift.jsonl")
    r = subprocess.run(["build-gpu/bin/swift-run", path, "--device", "cuda", "--steps",
                        str(STEPS), "--metrics", metrics], capture_output=True, text=True)
    print(r.stdout[-1500:], r.stderr[-1500:])
    rows = [json.loads(l) for l in open(metrics)]
    steady = rows[2:]
    return dict(tokens_per_second=sum(x["tokens_per_second"] for x in steady) / len(steady),
                peak_gib=max(x["peak_memory_bytes"] for x in rows) / 2**30,
                losses=[x["loss"] for x in rows])


def hf():
    import torch
    from peft import LoraConfig, get_peft_model
    from transformers import LlamaConfig, LlamaForCausalLM
    cfg = LlamaConfig(hidden_size=m["hidden_size"], intermediate_size=m["intermediate_size"],
                      num_hidden_layers=m["num_hidden_layers"],
                      num_attention_heads=m["num_attention_heads"],
                      num_key_value_heads=m["num_key_value_heads"], head_dim=m["head_dim"],
                      vocab_size=m["vocab_size"], tie_word_embeddings=m["tie_word_embeddings"],
                      max_position_embeddings=max(S, 8192), attn_implementation="sdpa")
    torch.manual_seed(0)
    with torch.device("cuda"):
        model = LlamaForCausalLM(cfg).to(torch.bfloat16)
    if CKPT == "full":
        model.gradient_checkpointing_enable(gradient_checkpointing_kwargs={"use_reentrant": False})
        model.enable_input_require_grads()
    model = get_peft_model(model, LoraConfig(r=RANK, lora_alpha=ALPHA, lora_dropout=0.0,
                                             target_modules=TARGETS, task_type="CAUSAL_LM"))
    params = [p for p in model.parameters() if p.requires_grad]
    opt = torch.optim.AdamW(params, lr=1e-4, betas=(0.9, 0.95), eps=1e-8, weight_decay=0.0,
                            fused=True)
    torch.cuda.reset_peak_memory_stats()
    times = []
    for step in range(STEPS):
        ids = torch.randint(0, m["vocab_size"], (B, S), device="cuda")
        torch.cuda.synchronize()
        t = time.time()
        with torch.autocast("cuda", dtype=torch.bfloat16):
            loss = model(input_ids=ids, labels=ids).loss
        loss.backward()
        opt.step()
        opt.zero_grad(set_to_none=True)
        torch.cuda.synchronize()
        times.append(time.time() - t)
    steady = times[2:]
    return dict(tokens_per_second=B * S / (sum(steady) / len(steady)),
                peak_gib=torch.cuda.max_memory_allocated() / 2**30)


s = swift()
h = hf()
res = dict(model=NAME, batch=B, seq=S, checkpointing=CKPT, rank=RANK, swift=s, hf_peft=h,
           speed_ratio=s["tokens_per_second"] / h["tokens_per_second"],
           peak_ratio=s["peak_gib"] / h["peak_gib"])
json.dump(res, open(os.path.join(OUT, "lora-side-by-side.json"), "w"), indent=1)
print(f"{NAME} LoRA r{RANK} B{B} S{S} ckpt {CKPT}: swift-run {s['tokens_per_second']:,.0f} tok/s "
      f"peak {s['peak_gib']:.2f} GiB | HF+peft {h['tokens_per_second']:,.0f} tok/s "
      f"peak {h['peak_gib']:.2f} GiB | speed x{res['speed_ratio']:.2f}, peak x{res['peak_ratio']:.2f}")
