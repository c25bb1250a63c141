#!/usr/bin/env python3
"""The multi-GPU table (run.sh): swift-run's ZeRO stages against FSDP2 at the
same world size and global batch, per case of cases.py.

Usage: compare.py OUT

Reads OUT/swift-metrics.jsonl (per-step metrics of each swift-run, tagged
with its plan's name) and OUT/fsdp2.jsonl. Per run: tokens/s (mean of steps
2..), the peak of allocated bytes per rank, both as ratios to FSDP2's; the
plan's predicted step time against the measured one; and the largest loss
difference over the first 3 steps against the world-1 ZeRO-0 run (the same
global batch in 8 micro-steps on one GPU). Writes OUT/results.jsonl.
Targets (issue 7): tokens/s >= 1.1x FSDP2, peak <= FSDP2, losses within the
runtime tests' tolerance of world 1, predicted step time within 10%.
"""
import json
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import cases  # noqa: E402


def rows(path):
    try:
        return [json.loads(l) for l in open(path) if l.strip()]
    except FileNotFoundError:
        return []


def main():
    if len(sys.argv) != 2:
        sys.exit(__doc__)
    out = sys.argv[1]
    swift = {}
    for r in rows(os.path.join(out, "swift-metrics.jsonl")):
        swift.setdefault(r["config"], []).append(r)
    fsdp = {(r["config"], r["world"]): r for r in rows(os.path.join(out, "fsdp2.jsonl"))}
    hdr = (f"{'run':30} {'tok/s':>9} {'vs FSDP2':>8} {'peak GiB':>8} {'vs FSDP2':>8} "
           f"{'plan step err':>13} {'max |dloss| vs w1':>17}")
    print(hdr + "\n" + "-" * len(hdr))
    results = []
    for case, world, zero in cases.plans():
        name = cases.plan_name(case, world, zero)
        steps = swift.get(name)
        if not steps:
            continue
        steady = steps[1:] or steps
        tps = sum(r["tokens"] for r in steady) / sum(r["step_seconds"] for r in steady)
        step_s = sum(r["step_seconds"] for r in steady) / len(steady)
        peak = max(r["peak_memory_bytes"] for r in steady)
        planned = steps[0].get("planned_step_seconds") or 0
        ref = swift.get(cases.plan_name(case, 1, 0), [])
        dloss = (max(abs(a["loss"] - b["loss"]) for a, b in zip(steps[:3], ref[:3]))
                 if ref and world > 1 else None)
        f = fsdp.get((case["name"], world), {})
        res = dict(run=name, config=case["name"], world=world, zero=zero,
                   tokens_per_s=tps, peak_bytes=peak, step_seconds=step_s,
                   planned_step_seconds=planned,
                   planned_step_error=(planned - step_s) / step_s if planned else None,
                   max_abs_loss_diff_vs_world1=dloss,
                   fsdp2_tokens_per_s=f.get("tokens_per_s"),
                   fsdp2_peak_bytes=f.get("peak_alloc_steady"))
        res["tokens_ratio"] = tps / f["tokens_per_s"] if f.get("tokens_per_s") else None
        res["peak_ratio"] = peak / f["peak_alloc_steady"] if f.get("peak_alloc_steady") else None
        results.append(res)
        g = lambda v, fmt: format(v, fmt) if v is not None else "-"
        print(f"{name:30} {tps:9,.0f} {g(res['tokens_ratio'], '8.2f')} {peak / 2**30:8.2f} "
              f"{g(res['peak_ratio'], '8.2f')} "
              f"{g(res['planned_step_error'] and 100 * res['planned_step_error'], '+12.1f')}% "
              f"{g(dloss, '17.2e')}")
    for (config, world), f in sorted(fsdp.items()):
        print(f"{config + '-w' + str(world) + ' FSDP2':30} {f['tokens_per_s']:9,.0f} "
              f"{'':8} {f['peak_alloc_steady'] / 2**30:8.2f}")
    with open(os.path.join(out, "results.jsonl"), "w") as fo:
        for r in results:
            fo.write(json.dumps(r) + "\n")


if __name__ == "__main__":
    main()
