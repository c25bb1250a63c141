"""reference-model-vs-swift-plan.py SRC_DIR OUT_DIR: the peak memory that
benchmarks/calibration/reference_model.py predicts for every measured row of
test/data/calibration/h200_hf_*.jsonl against swift-plan's (backend hf) for
the same job, built as test/Cost/CalibrationTest.cpp builds it. The two
implement the same formulas (docs/cost-model-hf.md); a difference beyond
TOLERANCE_BYTES means one of them changed without the other. Fails listing
every row that differs."""
import glob
import json
import os
import subprocess
import sys

src, out = sys.argv[1], sys.argv[2]
sys.path[:0] = [os.path.join(src, "benchmarks"), os.path.join(src, "benchmarks", "calibration")]
import models  # noqa: E402
import reference_model  # noqa: E402

# Same formulas, so only rounding may differ: the Python floors a few
# per-layer and per-rank quotients that the C++ keeps fractional (and rounds
# once at the end), less than a byte each, times at most the layer count.
# Any real term is larger: the smallest, one layer's bias vectors or a fp32
# value per token, is kilobytes.
TOLERANCE_BYTES = 1024


def job_settings(r):
    """test/Cost/CalibrationTest.cpp's jobSettings, as --set arguments."""
    name = models.preset(r["model"])
    sets = [f"model={name}"]
    # hf_baseline.py builds HF Llama; its attention_bias stands for Qwen2's biases.
    if models.MODELS[name]["model_type"] == "qwen2":
        sets += ["model.model_type=llama", "model.attention_bias=true"]
    B, world = r["B"], r["world"]
    sets += ["backend=hf", "cluster.gpu=h200", f"cluster.gpus_per_node={world}",
             f"training.sequence_length={r['S']}", f"training.global_batch_size={B * world}",
             f"training.micro_batch_size={B}",
             "strategy.checkpointing=" + ("full" if r["ckpt"] else "none"),
             "strategy.offload=none", "strategy.zero=0", "training.precision=bf16-mixed"]
    if r["mode"] == "bf16":
        sets.append("training.precision=bf16")
    if r["mode"] == "lora":
        sets += ["training.method=lora", "training.lora.rank=16"]
    if r["mode"] == "fsdp":
        sets.append("strategy.zero=" + ("3" if r.get("reshard", True) else "2"))
        if r.get("offload"):
            sets.append("strategy.offload=optimizer+params")
    return sets


base = os.path.join(out, "base.yaml")
with open(base, "w") as f:  # CalibrationTest's kBaseJob
    f.write("model: llama3.2-1b\n"
            "training: {sequence_length: 2048, global_batch_size: 8}\n"
            "cluster: {gpu: h100, gpus_per_node: 8}\n")

rows = []
for path in sorted(glob.glob(os.path.join(src, "test", "data", "calibration", "h200_hf_*.jsonl"))):
    rows += [r for r in map(json.loads, open(path)) if "peak_alloc_steady" in r and "error" not in r]

differ, largest = [], 0
for r in rows:
    args = ["swift-plan", base, "--json"]
    for s in job_settings(r):
        args += ["--set", s]
    run = subprocess.run(args, capture_output=True, text=True)
    if run.returncode != 0:
        sys.exit(f"{' '.join(args)} failed:\n{run.stderr}")
    cpp = json.loads(run.stdout)["memory"]["peak_bytes"]
    python, where = reference_model.predict_peak(r)
    largest = max(largest, abs(python - cpp))
    if abs(python - cpp) > TOLERANCE_BYTES:
        label = " ".join(f"{k}={r[k]}" for k in ("model", "mode", "B", "S", "ckpt", "world",
                                                   "reshard", "offload") if k in r)
        differ.append(f"{label}: reference_model.py {python / 2**30:.4f} GiB ({where}), "
                      f"swift-plan {cpp / 2**30:.4f} GiB, {(python - cpp) / 2**20:+.1f} MiB")
if differ:
    sys.exit(f"{len(differ)} of {len(rows)} rows differ by more than {TOLERANCE_BYTES} B:\n  "
             + "\n  ".join(differ))
print(f"{len(rows)} rows agree within {TOLERANCE_BYTES} B (largest difference {largest} B)")
