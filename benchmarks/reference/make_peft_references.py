#!/usr/bin/env python3
"""What HF transformers + peft compute for LoRA on the tiny models.

Runs on the GPU machine (transformers, peft),
on its CPU in fp32. Reads the committed tiny models and batch of
make_hf_references.py (IN, default test/data/hf) and writes under OUT
(default test/data/peft):
  <model>/adapter_config.json + adapter_model.safetensors
        the initial adapters (peft save_pretrained), rank 4, alpha 8, all
        linear layers of the decoder, A and B both random
        (init_lora_weights=False) so the first step trains A too
  expected.json
        per model: loss and grad norm (over the adapters) of each of 3
        AdamW steps on IN/batch.jsonl, the loss of the model merged after
        them (merge_and_unload) on the first 4 samples, and the settings
(nf4.json, bitsandbytes' NF4 of a fixed tensor, comes from
make_nf4_reference.py.)
CI (test/peft-reference.test) runs swift-run on the same inputs.
"""
import json
import os
import sys

import torch
from transformers import AutoModelForCausalLM

IN = sys.argv[1] if len(sys.argv) > 1 else "test/data/hf"
OUT = sys.argv[2] if len(sys.argv) > 2 else "test/data/peft"
RANK, ALPHA, STEPS = 4, 8.0, 3
LR, BETAS, EPS, WD, MAX_NORM = 1e-3, (0.9, 0.95), 1e-8, 0.1, 1.0
TARGETS = ["q_proj", "k_proj", "v_proj", "o_proj", "gate_proj", "up_proj",
           "down_proj"]


def main():
    from peft import LoraConfig, get_peft_model
    os.makedirs(OUT, exist_ok=True)
    samples = [json.loads(l)["input_ids"] for l in open(os.path.join(IN, "batch.jsonl"))]
    batch = len(samples) // STEPS
    expected = {"settings": dict(rank=RANK, alpha=ALPHA, dropout=0.0, targets=TARGETS,
                                 steps=STEPS, lr=LR, betas=list(BETAS), eps=EPS,
                                 weight_decay=WD, max_grad_norm=MAX_NORM,
                                 global_batch_size=batch,
                                 sequence_length=len(samples[0]),
                                 transformers=__import__("transformers").__version__,
                                 peft=__import__("peft").__version__,
                                 torch=torch.__version__),
                "models": {}}
    for name in ["llama", "qwen2"]:
        torch.manual_seed(1)
        base = AutoModelForCausalLM.from_pretrained(os.path.join(IN, name),
                                                    dtype=torch.float32,
                                                    attn_implementation="eager")
        cfg = LoraConfig(r=RANK, lora_alpha=ALPHA, lora_dropout=0.0,
                         target_modules=TARGETS, init_lora_weights=False,
                         task_type="CAUSAL_LM")
        model = get_peft_model(base, cfg)
        model.eval()
        model.save_pretrained(os.path.join(OUT, name))
        params = [p for p in model.parameters() if p.requires_grad]
        opt = torch.optim.AdamW(params, lr=LR, betas=BETAS, eps=EPS, weight_decay=WD)
        losses, norms = [], []
        for step in range(STEPS):
            ids = torch.tensor(samples[step * batch:(step + 1) * batch])
            loss = model(input_ids=ids, labels=ids).loss
            loss.backward()
            norms.append(torch.nn.utils.clip_grad_norm_(params, MAX_NORM).item())
            opt.step()
            opt.zero_grad(set_to_none=True)
            losses.append(loss.item())
        merged = model.merge_and_unload()
        with torch.no_grad():
            ids = torch.tensor(samples[:batch])
            merged_loss = merged(input_ids=ids, labels=ids).loss.item()
        expected["models"][name] = dict(losses=losses, grad_norms=norms,
                                        merged_loss=merged_loss)
        print(name, losses, norms, merged_loss)
    with open(os.path.join(OUT, "expected.json"), "w") as f:
        json.dump(expected, f, indent=1)
        f.write("\n")


if __name__ == "__main__":
    main()
