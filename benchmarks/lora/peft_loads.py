#!/usr/bin/env python3
"""Does peft load what swift-run exports? (device machine: peft there.)

  python3 benchmarks/lora/peft_loads.py OUTDIR [SWIFT_RUN]

swift-run trains the committed tiny llama's adapters (test/data/peft/llama,
plan benchmarks/lora/plans/tiny-llama-lora-fp32.json, fp32, CPU) 3 steps
and exports them (--export-hf); then
  - peft: PeftModel.from_pretrained(transformers' model of test/data/hf/llama,
    the export) must report no missing or unexpected adapter keys, hold
    exactly the exported tensors, and compute the first batch's loss;
  - swift-run, started from the export (--adapter), reports the first
    batch's loss before its first update;
the two losses agree within 1e-5 (relative).
"""
import json
import os
import subprocess
import sys

import torch
from peft import PeftModel
from safetensors.torch import load_file
from transformers import AutoModelForCausalLM

OUT = sys.argv[1]
RUN = sys.argv[2] if len(sys.argv) > 2 else "build-gpu/bin/swift-run"
PLAN = "benchmarks/lora/plans/tiny-llama-lora-fp32.json"
HF, BATCH = "test/data/hf/llama", "test/data/hf/batch.jsonl"
os.makedirs(OUT, exist_ok=True)
adapter = os.path.join(OUT, "adapter")


def swift_run(*args):
    r = subprocess.run([RUN, PLAN, "--device", "cpu", "--weights", HF, "--data", BATCH, *args],
                       capture_output=True, text=True)
    if r.returncode != 0:
        sys.exit(f"swift-run {args} exited {r.returncode}:\n{r.stdout[-2000:]}{r.stderr[-2000:]}")


swift_run("--adapter", "test/data/peft/llama", "--steps", "3", "--export-hf", adapter)
metrics = os.path.join(OUT, "reloaded.jsonl")
swift_run("--adapter", adapter, "--steps", "1", "--metrics", metrics)
swift_loss = json.loads(open(metrics).readline())["loss"]

base = AutoModelForCausalLM.from_pretrained(HF, dtype=torch.float32, attn_implementation="eager")
model = PeftModel.from_pretrained(base, adapter)
model.eval()
saved = load_file(os.path.join(adapter, "adapter_model.safetensors"))
loaded = {k: v for k, v in model.state_dict().items() if "lora_" in k}
# peft names the loaded tensors with the adapter name ("default") inserted.
plain = {k.replace(".default", ""): v for k, v in loaded.items()}
problems = []
if set(plain) != set(saved):
    problems.append(f"keys: missing {sorted(set(saved) - set(plain))[:4]}, "
                    f"unexpected {sorted(set(plain) - set(saved))[:4]}")
else:
    for k, v in saved.items():
        if not torch.equal(plain[k].float(), v.float()):
            problems.append(f"{k} differs after loading")
cfg = json.load(open(os.path.join(adapter, "adapter_config.json")))
samples = [json.loads(l)["input_ids"] for l in open(BATCH)]
per_step = json.load(open(PLAN))["training"]["global_batch_size"]
with torch.no_grad():
    ids = torch.tensor(samples[:per_step])
    peft_loss = model(input_ids=ids, labels=ids).loss.item()
rel = abs(peft_loss - swift_loss) / abs(peft_loss)
if rel > 1e-5:
    problems.append(f"loss: peft {peft_loss!r}, swift-run {swift_loss!r} (rel {rel:.2e})")
print(json.dumps(dict(tensors=len(saved), r=cfg["r"], lora_alpha=cfg["lora_alpha"],
                      target_modules=cfg["target_modules"], peft_loss=peft_loss,
                      swift_loss=swift_loss, relative=rel, problems=problems)))
print("PEFT LOADS SWIFT-RUN'S ADAPTER" if not problems else "PROBLEMS")
sys.exit(1 if problems else 0)
