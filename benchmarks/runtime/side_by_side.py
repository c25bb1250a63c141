"""swift-run vs HF transformers eager, side by side (driven by side_by_side.sh).

  side_by_side.py jobs DIR          write one swift-plan job file per configuration
                                    (make_plans.sh turns them into the committed
                                    plans/, which carry swift-plan's predictions)
  side_by_side.py plans DIR         write one swift plan per configuration to DIR:
                                    the committed plans/NAME.json when present
  side_by_side.py hf OUTFILE        run the HF baseline cases (hf_baseline.py's
                                    run_case) and append their JSON lines
  side_by_side.py table OUT         join swift-metrics.jsonl and hf.jsonl in OUT:
                                    print the table, write results.jsonl

Both sides count MFU the same way: 6 * N (non-embedding parameters, lm_head
counted) + 6 * L * C * S FLOPs per token (attention), against 989 TFLOP/s.
Peak memory: the caching allocator's peak of allocated bytes in a steady step
(model states included) on both sides.
"""
import json, os, sys

PEAK_FLOPS = 989e12
HERE = os.path.dirname(os.path.abspath(__file__))
TEMPLATE = os.path.join(HERE, "..", "..", "examples", "plans", "llama3.2-1b-h200.json")
sys.path.insert(0, os.path.join(HERE, ".."))
import models  # noqa: E402

# name, model, swift precision, B, S, checkpointing, the HF baseline's case
CONFIGS = [
    ("llama3.2-1b-B4-S2048", "llama3.2-1b", "bf16-mixed", 4, 2048, "none",
     dict(model="llama3.2-1b", mode="ddp_mp", B=4, S=2048, ckpt=False)),
    ("llama3.2-3b-B2-S4096-full", "llama3.2-3b", "bf16-mixed", 2, 4096, "full",
     dict(model="llama3.2-3b", mode="ddp_mp", B=2, S=4096, ckpt=True)),
    ("qwen2.5-0.5b-B4-S2048", "qwen2.5-0.5b", "bf16-mixed", 4, 2048, "none",
     dict(model="qwen2.5-0.5b", mode="ddp_mp", B=4, S=2048, ckpt=False)),
    ("llama3.1-8b-bf16-B1-S4096-full", "llama3-8b", "bf16", 1, 4096, "full",
     dict(model="llama3-8b", mode="bf16", B=1, S=4096, ckpt=True)),
]
# The same jobs with checkpointing left to swift-plan ("auto": the job sets
# no strategy.checkpointing), against the HF run of the configuration named
# last (the user's checkpointed baseline): what swift does when it chooses.
PLANNER_CHOICE = [
    ("llama3.2-3b-B2-S4096-planned", "llama3.2-3b", "bf16-mixed", 2, 4096, "auto", None,
     "llama3.2-3b-B2-S4096-full"),
    ("llama3.1-8b-bf16-B1-S4096-planned", "llama3-8b", "bf16", 1, 4096, "auto", None,
     "llama3.1-8b-bf16-B1-S4096-full"),
]


def flops_per_token(m, S):
    C, I, L, V = m["hidden_size"], m["intermediate_size"], m["num_hidden_layers"], m["vocab_size"]
    Q, KV = m["num_attention_heads"] * m["head_dim"], m["num_key_value_heads"] * m["head_dim"]
    layer = 2 * C + Q * C + 2 * KV * C + C * Q + 3 * I * C
    if m.get("attention_qkv_bias"):
        layer += Q + 2 * KV
    n = L * layer + C + V * C  # final norm + lm_head (the tied table counts once, as lm_head)
    return 6.0 * n + 6.0 * L * C * S


PLANNED = os.path.join(HERE, "plans")


def write_jobs(d):
    os.makedirs(d, exist_ok=True)
    for name, model, prec, B, S, ckpt, *_ in CONFIGS + PLANNER_CHOICE:
        path = os.path.join(d, name + ".yaml")
        with open(path, "w") as f:
            f.write(f"# side_by_side.py: {name}\n"
                    f"model: {models.preset(model)}\n"
                    f"training: {{sequence_length: {S}, global_batch_size: {B}, "
                    f"micro_batch_size: {B}, precision: {prec}}}\n"
                    f"cluster: {{gpu: h200, gpus_per_node: 1}}\n"
                    f"backend: swift-run\n"
                    f"strategy: {{zero: 0, offload: none"
                    + (f", checkpointing: {ckpt}" if ckpt != "auto" else "") + "}\n")
        print(path)


def write_plans(d):
    os.makedirs(d, exist_ok=True)
    base = json.load(open(TEMPLATE))
    for name, model, prec, B, S, ckpt, *_ in CONFIGS + PLANNER_CHOICE:
        planned = os.path.join(PLANNED, name + ".json")
        if os.path.exists(planned):  # swift-plan's plan, with its predictions
            with open(planned) as src, open(os.path.join(d, name + ".json"), "w") as dst:
                dst.write(src.read())
            print(os.path.join(d, name + ".json"))
            continue
        p = json.loads(json.dumps(base))
        p["comment"] = f"side_by_side.py: {name}"
        # the plan schema's model: the table's fields but model_type
        p["model"].update({k: v for k, v in models.model(model).items() if k != "model_type"})
        p["training"].update(sequence_length=S, global_batch_size=B, micro_batch_size=B,
                             gradient_accumulation=1, precision=prec)
        assert ckpt != "auto", f"{name}: run make_plans.sh (swift-plan chooses checkpointing)"
        p["strategy"].update(zero=0, offload="none", checkpointing=ckpt, checkpoint_layers=-1)
        json.dump(p, open(os.path.join(d, name + ".json"), "w"), indent=1)
        print(os.path.join(d, name + ".json"))


def run_hf(outfile):
    sys.path.insert(0, os.path.join(HERE, "..", "calibration"))
    sys.argv = ["hf_baseline.py", "1", outfile]
    import hf_baseline, torch, traceback, gc
    import gpu_clocks
    torch.cuda.set_device(0)
    only = os.environ.get("SBS_ONLY", "")
    for name, *_, case in CONFIGS:
        if only and only not in name:
            continue
        c = dict(case, steps=int(os.environ.get("HF_STEPS", "5")))
        phases = os.environ.get("SBS_PHASES")  # gpu_clocks.py's phase file
        if phases:
            gpu_clocks.mark(phases, f"hf {name}", "start")
        try:
            r = hf_baseline.run_case(c)
        except Exception as e:  # an OOM or a missing package is a row, not a crash
            traceback.print_exc()
            r = dict(c, error=repr(e)[:300])
            gc.collect(); torch.cuda.empty_cache()
        if phases:
            gpu_clocks.mark(phases, f"hf {name}", "end")
        r["config"] = name
        print(json.dumps({k: r.get(k) for k in ("config", "tokens_per_s", "peak_alloc_steady",
                                                "step_s_median", "loss", "error")}), flush=True)
        with open(outfile, "a") as f:
            f.write(json.dumps(r) + "\n")


def table(out):
    def rows(path):
        try:
            return [json.loads(l) for l in open(path) if l.strip()]
        except FileNotFoundError:
            return []
    swift = {}
    for r in rows(os.path.join(out, "swift-metrics.jsonl")):
        swift.setdefault(r["config"], []).append(r)
    hf = {r["config"]: r for r in rows(os.path.join(out, "hf.jsonl"))}
    lines, results = [], []
    hdr = (f"{'configuration':34} {'swift tok/s':>11} {'HF tok/s':>9} {'ratio':>6} "
           f"{'swift GiB':>9} {'HF GiB':>7} {'ratio':>6} {'swift MFU':>9} {'HF MFU':>7} "
           f"{'plan GiB':>8} {'err':>6} {'plan tok/s':>10} {'err':>6}")
    lines += [hdr, "-" * len(hdr)]
    all_cfgs = CONFIGS + PLANNER_CHOICE
    main_names = [c[0] for c in all_cfgs]
    names = main_names + sorted(k for k in swift if k not in main_names)
    for name in names:
        steps = swift.get(name, [])
        cfg = next((c for c in all_cfgs if name == c[0] or name.startswith(c[0] + "/")), None)
        if cfg is None or not steps:
            continue
        fpt = flops_per_token(models.model(cfg[1]), cfg[4])
        steady = steps[1:] or steps  # the first step warms up
        s_tps = sum(r["tokens"] for r in steady) / sum(r["step_seconds"] for r in steady)
        s_peak = max(r["peak_memory_bytes"] for r in steady)
        baseline = cfg[7] if len(cfg) > 7 else cfg[0]
        h = hf.get(baseline, {}) if name == cfg[0] else {}
        h_tps, h_peak = h.get("tokens_per_s"), h.get("peak_alloc_steady")
        ckpt = cfg[5]
        if ckpt == "auto":  # what swift-plan chose: the committed plan says
            with open(os.path.join(PLANNED, cfg[0] + ".json")) as f:
                ckpt = json.load(f)["strategy"]["checkpointing"]
        res = dict(config=name, model=cfg[1], precision=cfg[2], micro_batch=cfg[3], seq=cfg[4],
                   checkpointing=ckpt, hf_baseline=baseline, flops_per_token=fpt,
                   swift_tokens_per_s=s_tps, swift_peak_bytes=s_peak,
                   swift_mfu=s_tps * fpt / PEAK_FLOPS,
                   swift_losses=[r["loss"] for r in steps],
                   swift_planned_peak_bytes=steps[0].get("planned_peak_memory_bytes"),
                   swift_planned_tokens_per_s=steps[0].get("planned_tokens_per_second"),
                   hf_tokens_per_s=h_tps, hf_peak_bytes=h_peak,
                   hf_mfu=h_tps * fpt / PEAK_FLOPS if h_tps else None,
                   hf_loss=h.get("loss"), hf_error=h.get("error"))
        res["tokens_ratio"] = s_tps / h_tps if h_tps else None
        res["memory_ratio"] = s_peak / h_peak if h_peak else None
        # swift-plan's predictions for swift-run (plans/ made by make_plans.sh).
        p_peak, p_tps = res["swift_planned_peak_bytes"], res["swift_planned_tokens_per_s"]
        res["planned_peak_error"] = (p_peak - s_peak) / s_peak if p_peak else None
        res["planned_tokens_error"] = (p_tps - s_tps) / s_tps if p_tps else None
        results.append(res)
        f = lambda v, fmt: format(v, fmt) if v is not None else "-"
        lines.append(f"{name:34} {s_tps:11,.0f} {f(h_tps, '9,.0f')} {f(res['tokens_ratio'], '6.2f')} "
                     f"{s_peak / 2**30:9.2f} {f(h_peak and h_peak / 2**30, '7.2f')} "
                     f"{f(res['memory_ratio'], '6.2f')} {100 * res['swift_mfu']:8.1f}% "
                     f"{f(res['hf_mfu'] and 100 * res['hf_mfu'], '6.1f')}% "
                     f"{f(p_peak and p_peak / 2**30, '8.2f')} "
                     f"{f(res['planned_peak_error'] and 100 * res['planned_peak_error'], '+5.1f')}% "
                     f"{f(p_tps, '10,.0f')} "
                     f"{f(res['planned_tokens_error'] and 100 * res['planned_tokens_error'], '+5.1f')}%")
    # Fused vs unfused runs of one configuration start from the same weights
    # and data: their losses must agree to bf16 rounding.
    main = {r["config"]: r for r in results}
    for r in results:
        base = main.get(r["config"].split("/")[0])
        if base is not None and base is not r:
            d = max(abs(a - b) for a, b in zip(base["swift_losses"][:3], r["swift_losses"][:3]))
            r["max_abs_loss_diff_vs_main_first3"] = d
            lines.append(f"{r['config']}: max |loss - main loss| over 3 steps {d:.2e} "
                         f"(losses {', '.join(f'{x:.4f}' for x in r['swift_losses'][:3])})")
    with open(os.path.join(out, "results.jsonl"), "w") as fo:
        for r in results:
            fo.write(json.dumps(r) + "\n")
    print("\n".join(lines))


if __name__ == "__main__":
    {"jobs": write_jobs, "plans": write_plans, "hf": run_hf, "table": table}[sys.argv[1]](sys.argv[2])
