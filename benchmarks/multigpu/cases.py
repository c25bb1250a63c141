"""The multi-GPU comparison's configurations, shared by its scripts.

Every world size trains the same global batch: a fixed per-rank micro-batch
B and gradient accumulation 8 / world, so world 1 (the single-GPU reference
the losses are checked against) runs the same samples in 8 micro-steps.

  cases.py jobs DIR    write a swift-plan job per (case, world, ZeRO stage)
                       (make_plans.sh turns them into plans/ on the build
                       machine: the GPU machine has no MLIR)
"""
import os
import sys

CASES = [
    dict(name="llama3.2-1b-S2048", preset="llama3.2-1b", hf="llama3.2-1b", B=4, S=2048),
    dict(name="llama3.2-3b-S4096", preset="llama3.2-3b", hf="llama3.2-3b", B=2, S=4096),
]
WORLDS = [1, 2, 4, 8]
STAGES = [0, 1, 2, 3]
MICRO_STEPS_AT_WORLD_1 = 8


def global_batch(case):
    return case["B"] * MICRO_STEPS_AT_WORLD_1


def plan_name(case, world, zero):
    return f"{case['name']}-w{world}-z{zero}"


def plans():
    """(case, world, zero) of every plan: world 1 is the ZeRO-0 reference."""
    for case in CASES:
        for world in WORLDS:
            for zero in STAGES if world > 1 else [0]:
                yield case, world, zero


def write_jobs(d):
    os.makedirs(d, exist_ok=True)
    for case, world, zero in plans():
        path = os.path.join(d, plan_name(case, world, zero) + ".yaml")
        with open(path, "w") as f:
            f.write(f"# benchmarks/multigpu/cases.py: {plan_name(case, world, zero)}\n"
                    f"model: {case['preset']}\n"
                    f"training: {{sequence_length: {case['S']}, "
                    f"global_batch_size: {global_batch(case)}, "
                    f"micro_batch_size: {case['B']}, precision: bf16-mixed}}\n"
                    f"cluster: {{gpu: h200, gpus_per_node: {world}}}\n"
                    f"backend: swift-run\n"
                    f"strategy: {{zero: {zero}, offload: none, checkpointing: none}}\n")
        print(path)


if __name__ == "__main__":
    if len(sys.argv) != 3 or sys.argv[1] != "jobs":
        sys.exit(__doc__)
    write_jobs(sys.argv[2])
