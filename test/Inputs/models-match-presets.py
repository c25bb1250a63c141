"""models-match-presets.py BENCHMARKS_DIR OUT_DIR: every model of the
benchmarks' table (BENCHMARKS_DIR/models.py) that is a swift-plan preset
against what swift-plan makes of that preset: the plan's model section
(--emit plan) and model_type (--json). Fails, naming model and field, when
they differ: the benchmarks would build or describe another model than the
one swift-plan predicts for."""
import json
import os
import subprocess
import sys

benchmarks, out = sys.argv[1], sys.argv[2]
sys.path.insert(0, benchmarks)
import models  # noqa: E402


def swift_plan(job, *args):
    return subprocess.run(["swift-plan", job, *args], capture_output=True, text=True)


mismatches, matched = [], 0
for name, fields in models.MODELS.items():
    job = os.path.join(out, name + ".yaml")
    with open(job, "w") as f:  # the smallest plan: pure bf16 fits the 8B on one H200
        f.write(f"model: {name}\n"
                "training: {sequence_length: 512, global_batch_size: 1, micro_batch_size: 1, "
                "precision: bf16}\n"
                "cluster: {gpu: h200, gpus_per_node: 1}\n"
                "backend: swift-run\n"
                "strategy: {zero: 0, offload: none, checkpointing: none}\n")
    plan = os.path.join(out, name + ".json")
    run = swift_plan(job, "--emit", "plan", "-o", plan)
    if f"unknown model preset '{name}'" in run.stderr:
        print(f"{name}: not a swift-plan preset, not compared")
        continue
    if run.returncode != 0:
        sys.exit(f"swift-plan {job} --emit plan failed:\n{run.stderr}")
    report = swift_plan(job, "--json")
    if report.returncode != 0:
        sys.exit(f"swift-plan {job} --json failed:\n{report.stderr}")
    # The plan schema's model holds every field of the table but model_type,
    # which only the report names.
    preset = dict(json.load(open(plan))["model"],
                  model_type=json.loads(report.stdout)["model"]["model_type"])
    for key in sorted(fields.keys() | preset.keys()):
        if fields.get(key) != preset.get(key):
            mismatches.append(f"{name}: {key}: benchmarks/models.py {fields.get(key)!r} "
                              f"!= swift-plan's preset {preset.get(key)!r}")
    matched += 1
if mismatches:
    sys.exit("benchmarks/models.py differs from swift-plan's presets:\n  "
             + "\n  ".join(mismatches))
print(f"{matched} models match their swift-plan presets")
