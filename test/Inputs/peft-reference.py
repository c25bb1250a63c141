"""swift-run against transformers + peft: LoRA (rank 4, alpha 8, all seven
decoder linears) on the committed tiny HF models (test/data/hf), adapters
started from the peft adapter directories peft wrote (test/data/peft, made
by benchmarks/reference/make_peft_references.py on the GPU machine),
trained 3 AdamW steps on the committed batch at world 1 ZeRO-0 and world 2
ZeRO-3: every loss and grad norm within 1e-5 (relative) of peft's; then the
merged model (--export-hf --merge) evaluated by a full-fine-tuning plan on
the first batch: its loss is peft's merge_and_unload() model's.
Usage: peft-reference.py SWIFT_BIN_DIR HF_DIR PEFT_DIR TMP"""
import json
import os
import subprocess
import sys

from reference_check import Comparison, fp32_plan

BIN, HF, PEFT, TMP = sys.argv[1:5]
expected = json.load(open(os.path.join(PEFT, "expected.json")))
s = expected["settings"]
c = Comparison("peft")


def plan(name, work, zero, world, method, steps_batch):
    """swift-plan's plan of the full job, made a LoRA plan (plan.json's
    training.method and training.lora) when `method` is lora."""
    out = fp32_plan(BIN, os.path.join(HF, name), s, zero, world, steps_batch, work,
                    method)
    if method == "lora":
        p = json.load(open(out))
        p["training"]["method"] = "lora"
        p["training"]["lora"] = dict(rank=s["rank"], alpha=s["alpha"],
                                     dropout=s["dropout"], targets=s["targets"])
        json.dump(p, open(out, "w"), indent=1)
    return out


def run(args, tag):
    r = subprocess.run([os.path.join(BIN, "swift-run"), *args, "--device", "cpu"],
                       capture_output=True, text=True)
    if r.returncode != 0:
        c.failures.append(f"{tag}: swift-run exited {r.returncode}: {r.stdout[-2000:]}{r.stderr[-2000:]}")
    return r.returncode == 0


for name, want in sorted(expected["models"].items()):
    for zero, world in [(0, 1), (3, 2)]:
        tag = f"{name} zero {zero} world {world}"
        work = os.path.join(TMP, f"{name}-z{zero}-w{world}")
        os.makedirs(work, exist_ok=True)
        p = plan(name, work, zero, world, "lora", s["global_batch_size"])
        metrics = os.path.join(work, "metrics.jsonl")
        if not run([p, "--nproc-per-node", str(world), "--steps", str(s["steps"]),
                    "--data", os.path.join(HF, "batch.jsonl"), "--adapter",
                    os.path.join(PEFT, name), "--metrics", metrics, "--export-hf",
                    os.path.join(work, "merged"), "--merge", "--export-dtype", "fp32"], tag):
            continue
        c.steps(tag, metrics, want, s["steps"])
        # The merged model, evaluated: one step of a full plan reports the
        # loss of its first batch before updating.
        full = plan(name, work, 0, 1, "full", s["global_batch_size"])
        em = os.path.join(work, "merged.jsonl")
        if run([full, "--steps", "1", "--data", os.path.join(HF, "batch.jsonl"),
                "--weights", os.path.join(work, "merged"), "--metrics", em], tag + " merged"):
            c.value(f"{tag} merged loss", json.loads(open(em).readline())["loss"],
                    want["merged_loss"])
c.finish()
