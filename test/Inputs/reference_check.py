"""What the reference comparisons (hf-reference.py, peft-reference.py)
share: the tolerance, the per-step comparison of swift-run's metrics with a
reference's losses and grad norms, and the summary line the lit tests
check."""
import json
import os
import subprocess
import sys

RELATIVE = 1e-5  # float32 on both sides


def fp32_plan(bin_dir, model_dir, s, zero, world, global_batch, out_dir, tag):
    """swift-plan's plan (OUT_DIR/plan-TAG.json) of the reference's training
    in fp32 on the model directory at ZeRO `zero`, world `world`: the
    settings `s` (sequence_length, lr, betas, eps, weight_decay,
    max_grad_norm), no offload or checkpointing."""
    job = os.path.join(out_dir, f"job-{tag}.yaml")
    with open(job, "w") as f:
        f.write(f"""model: {model_dir}
training:
  sequence_length: {s['sequence_length']}
  global_batch_size: {global_batch}
  micro_batch_size: {max(1, global_batch // (2 * world))}
  precision: fp32
  optimizer: {{name: adamw, lr: {s['lr']}, betas: {s['betas']}, eps: {s['eps']}, weight_decay: {s['weight_decay']}}}
  max_grad_norm: {s['max_grad_norm']}
cluster: {{gpu: h100, gpus_per_node: {world}}}
backend: swift-run
strategy: {{zero: {zero}, offload: none, checkpointing: none}}
""")
    out = os.path.join(out_dir, f"plan-{tag}.json")
    subprocess.run([os.path.join(bin_dir, "swift-plan"), job, "--emit", "plan", "-o", out],
                   check=True)
    return out


class Comparison:
    def __init__(self, reference):
        self.reference = reference  # "transformers", "peft"
        self.failures, self.checked = [], 0

    def value(self, tag, got, want):
        self.checked += 1
        if abs(got - want) > RELATIVE * abs(want):
            self.failures.append(f"{tag}: swift-run {got!r}, {self.reference} {want!r}")

    def steps(self, tag, metrics_file, want, steps, compared=None):
        """swift-run's metrics against want["losses"] and want["grad_norms"]
        (the first `compared` steps, all by default)."""
        got = [json.loads(line) for line in open(metrics_file)]
        for key, ref in (("loss", want["losses"]), ("grad_norm", want["grad_norms"])):
            for step, (m, r) in enumerate(zip(got, ref[:compared]), 1):
                self.value(f"{tag} step {step} {key}", m[key], r)
        if len(got) != steps:
            self.failures.append(f"{tag}: {len(got)} steps in the metrics")

    def finish(self):
        for f in self.failures:
            print("MISMATCH", f)
        print(f"{self.checked} values checked, {len(self.failures)} mismatches")
        sys.exit(1 if self.failures else 0)
