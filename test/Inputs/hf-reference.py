"""swift-run against transformers: the committed tiny HF model directories
(test/data/hf, made by benchmarks/reference/make_hf_references.py on the GPU
machine) trained 3 AdamW steps on the committed batch, at world 1 and 2 and
ZeRO 0-3: every loss and grad norm within 1e-5 (relative) of what
transformers computed. Usage: hf-reference.py SWIFT_BIN_DIR DATA_DIR TMP"""
import json
import os
import subprocess
import sys

BIN, DATA, TMP = sys.argv[1:4]
expected = json.load(open(os.path.join(DATA, "expected.json")))
s = expected["settings"]
failures, checked = [], 0
for name, want in sorted(expected["models"].items()):
    for zero, world in [(0, 1), (3, 2)] if name == "llama" else [(0, 1), (2, 2)]:
        tag = f"{name} zero {zero} world {world}"
        work = os.path.join(TMP, f"{name}-z{zero}-w{world}")
        os.makedirs(work, exist_ok=True)
        job = os.path.join(work, "job.yaml")
        with open(job, "w") as f:
            f.write(f"""model: {os.path.join(DATA, name)}
training:
  sequence_length: {s['sequence_length']}
  global_batch_size: {s['global_batch_size']}
  micro_batch_size: {s['global_batch_size'] // (2 * world)}
  precision: fp32
  optimizer: {{name: adamw, lr: {s['lr']}, betas: {s['betas']}, eps: {s['eps']}, weight_decay: {s['weight_decay']}}}
  max_grad_norm: {s['max_grad_norm']}
cluster: {{gpu: h100, gpus_per_node: {world}}}
backend: swift-run
strategy: {{zero: {zero}, offload: none, checkpointing: none}}
""")
        plan = os.path.join(work, "plan.json")
        subprocess.run([os.path.join(BIN, "swift-plan"), job, "--emit", "plan",
                        "-o", plan], check=True)
        metrics = os.path.join(work, "metrics.jsonl")
        run = subprocess.run([os.path.join(BIN, "swift-run"), plan, "--device",
                              "cpu", "--nproc-per-node", str(world), "--steps",
                              str(s["steps"]), "--data",
                              os.path.join(DATA, "batch.jsonl"), "--metrics",
                              metrics], capture_output=True, text=True)
        if run.returncode != 0:
            failures.append(f"{tag}: swift-run exited {run.returncode}: {run.stdout[-2000:]}{run.stderr[-2000:]}")
            continue
        got = [json.loads(line) for line in open(metrics)]
        for key, ref in (("loss", want["losses"]), ("grad_norm", want["grad_norms"])):
            for step, (m, r) in enumerate(zip(got, ref), 1):
                checked += 1
                if abs(m[key] - r) > 1e-5 * abs(r):
                    failures.append(f"{tag} step {step} {key}: swift-run {m[key]!r}, transformers {r!r}")
        if len(got) != s["steps"]:
            failures.append(f"{tag}: {len(got)} steps in the metrics")
for f in failures:
    print("MISMATCH", f)
print(f"{checked} values checked, {len(failures)} mismatches")
sys.exit(1 if failures else 0)
