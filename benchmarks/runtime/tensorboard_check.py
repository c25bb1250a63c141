#!/usr/bin/env python3
"""Issue 33's check on a machine with tensorboard installed: TensorBoard's
own EventAccumulator reads swift-run's --tensorboard DIR, and every scalar
equals the metrics file's record of the same step (loss, lr, grad norm,
tokens/s, peak memory; eval_loss where the run evaluated).

    python3 tensorboard_check.py TBDIR METRICS.jsonl
Prints the tags and the pairs compared; exits 1 on a mismatch."""
import json
import math
import sys

from tensorboard.backend.event_processing.event_accumulator import EventAccumulator

tb_dir, metrics = sys.argv[1:3]
acc = EventAccumulator(tb_dir, size_guidance={"scalars": 0})
acc.Reload()
tags = acc.Tags()["scalars"]
print("tags:", sorted(tags))
rows = [json.loads(l) for l in open(metrics)]
by_step = {r["step"]: r for r in rows if "step" in r}
pairs = {"train/loss": "loss", "train/learning_rate": "lr", "train/grad_norm": "grad_norm",
         "train/tokens_per_second": "tokens_per_second", "eval/loss": "eval_loss"}
bad = 0
compared = 0
for tag, key in pairs.items():
    if tag not in tags:
        print(f"{tag}: not written")
        bad += tag != "eval/loss"
        continue
    for ev in acc.Scalars(tag):
        r = by_step.get(ev.step)
        if r is None or key not in r:
            continue
        want = float(r[key])
        ok = math.isclose(ev.value, want, rel_tol=1e-5, abs_tol=1e-7)  # float32 in the event
        compared += 1
        if not ok:
            bad += 1
            print(f"MISMATCH {tag} step {ev.step}: tensorboard {ev.value} metrics {want}")
    print(f"{tag}: {[(e.step, round(e.value, 6)) for e in acc.Scalars(tag)]}")
print(f"compared {compared} values, {bad} mismatches")
sys.exit(1 if bad or not compared else 0)
