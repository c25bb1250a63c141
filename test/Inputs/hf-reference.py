"""swift-run against transformers: the committed tiny HF model directories
(test/data/hf, made by benchmarks/reference/make_hf_references.py on the GPU
machine) trained 3 AdamW steps on the committed batch, at world 1 and 2 and
ZeRO 0-3: every loss and grad norm within 1e-5 (relative) of what
HF Trainer computed (its AdamW parameter groups: no weight decay on biases and
norm weights). Usage: hf-reference.py SWIFT_BIN_DIR DATA_DIR TMP"""
import json
import os
import subprocess
import sys

from reference_check import Comparison, fp32_plan

BIN, DATA, TMP = sys.argv[1:4]
expected = json.load(open(os.path.join(DATA, "expected.json")))
s = expected["settings"]
c = Comparison("transformers")
if s.get("trainer") != "transformers.Trainer":
    sys.exit(f"{DATA}/expected.json was not made by HF Trainer (settings.trainer): "
             "regenerate it with benchmarks/reference/make_hf_references.py")
compared = s["steps"]
for name, want in sorted(expected["models"].items()):
    for zero, world in [(0, 1), (3, 2)] if name == "llama" else [(0, 1), (2, 2)]:
        tag = f"{name} zero {zero} world {world}"
        work = os.path.join(TMP, f"{name}-z{zero}-w{world}")
        os.makedirs(work, exist_ok=True)
        plan = fp32_plan(BIN, os.path.join(DATA, name), s, zero, world,
                         s["global_batch_size"], work, "full")
        metrics = os.path.join(work, "metrics.jsonl")
        run = subprocess.run([os.path.join(BIN, "swift-run"), plan, "--device",
                              "cpu", "--nproc-per-node", str(world), "--steps",
                              str(s["steps"]), "--data",
                              os.path.join(DATA, "batch.jsonl"), "--metrics",
                              metrics], capture_output=True, text=True)
        if run.returncode != 0:
            c.failures.append(f"{tag}: swift-run exited {run.returncode}: {run.stdout[-2000:]}{run.stderr[-2000:]}")
            continue
        c.steps(tag, metrics, want, s["steps"], compared)
c.finish()
