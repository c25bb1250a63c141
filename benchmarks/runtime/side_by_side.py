"""swift-run vs HF transformers (eager, and torch.compile), side by side
(driven by side_by_side.sh).

  side_by_side.py jobs DIR          write one swift-plan job file per configuration
                                    (make_plans.sh turns them into the committed
                                    plans/, which carry swift-plan's predictions)
  side_by_side.py plans DIR         write one swift plan per configuration to DIR:
                                    the committed plans/NAME.json when present
                                    (FP8 and planner-choice configurations have
                                    no other: skipped, with a message, until
                                    make_plans.sh wrote theirs)
  side_by_side.py names             the configurations SBS_ONLY selects, in run
                                    order (an FP8 configuration brings its twin)
  side_by_side.py hf OUTFILE        run the HF baseline cases (hf_baseline.py's
                                    run_case) of the selected configurations,
                                    eager (unless SBS_SKIP_EAGER) then
                                    torch.compile (unless SBS_SKIP_COMPILE),
                                    each mode in a child process that is
                                    restarted after a crash or a case over its
                                    time; appends one JSON line per case
  side_by_side.py table OUT         join swift-metrics.jsonl and hf.jsonl in OUT:
                                    print the table, write results.jsonl

SBS_ONLY=SUB[,SUB...]: the configurations whose name holds one of the
substrings (all when unset). HF_STEPS (default 5): eager steps, the first
excluded; HF_COMPILE_WARMUP (3) + HF_COMPILE_STEPS (5): compiled steps, the
warm-up ones (compilation) excluded. SBS_DEADLINE (epoch seconds): the hf
command stops starting cases and kills a running one there;
SBS_HF_CASE_TIMEOUT / SBS_HF_COMPILE_CASE_TIMEOUT (150 / 360 s): one case's
limit.

Both sides count MFU the same way: 6 * N (non-embedding parameters, lm_head
counted) + 6 * L * C * S FLOPs per token (attention), against 989 TFLOP/s.
Peak memory: the caching allocator's peak of allocated bytes in a steady step
(model states included) on both sides.
"""
import json, os, re, subprocess, sys, time

PEAK_FLOPS = 989e12
HERE = os.path.dirname(os.path.abspath(__file__))
TEMPLATE = os.path.join(HERE, "..", "..", "examples", "plans", "llama3.2-1b-h200.json")
sys.path.insert(0, os.path.join(HERE, ".."))
import models  # noqa: E402

# The optimizer of the two 8B configurations fp8_loss_curve.sh trains for 300
# steps on real text (a pretraining-like lr: warmup 30, cosine to 10%). The
# side-by-side runs of the same plans take 6 steps: their speed does not
# depend on the lr.
LOSS_CURVE_TRAINING = ("optimizer: {name: adamw, lr: 3.0e-4, betas: [0.9, 0.95], eps: 1.0e-8, "
                       "weight_decay: 0.0}, lr_schedule: {warmup_steps: 30, decay: cosine, "
                       "min_lr_ratio: 0.1}, max_grad_norm: 1.0")


def C(name, model, precision, B, S, ckpt, hf=None, hf_of=None, twin=None, training=None):
    """One configuration. hf: hf_baseline.py's mode of the HF baseline
    (ddp_mp = fp32 weights + bf16 autocast, bf16 = pure bf16), same model, B,
    S and checkpointing; None: swift-run only. hf_of: compare with the HF runs
    of that configuration instead (the planner-choice rows). twin: the
    bf16 configuration an FP8 one is compared with. ckpt "auto": the job
    leaves checkpointing to swift-plan. training: extra job keys."""
    return dict(name=name, model=model, precision=precision, B=B, S=S, ckpt=ckpt, hf=hf,
                hf_of=hf_of or (name if hf else None), twin=twin, training=training)


CONFIGS = [
    # The first session's four (issue 6).
    C("llama3.2-1b-B4-S2048", "llama3.2-1b", "bf16-mixed", 4, 2048, "none", hf="ddp_mp"),
    C("llama3.2-3b-B2-S4096-full", "llama3.2-3b", "bf16-mixed", 2, 4096, "full", hf="ddp_mp"),
    C("qwen2.5-0.5b-B4-S2048", "qwen2.5-0.5b", "bf16-mixed", 4, 2048, "none", hf="ddp_mp"),
    C("llama3.1-8b-bf16-B1-S4096-full", "llama3-8b", "bf16", 1, 4096, "full", hf="bf16"),
    # More shapes. HF eager peaks (reference_model.py, 0.2% on the measured
    # rows): Qwen2.5-1.5B B8 S1024 62.3 GiB; the 1B at S16384 76.4 GiB without
    # checkpointing; the 1B at B16 S2048 137 GiB without (no room on 139 GiB),
    # 73.7 with full checkpointing; 3B B2 S4096 92.2 GiB without; 8B pure bf16
    # B1 S4096 76.4 GiB without.
    C("qwen2.5-1.5b-B8-S1024", "qwen2.5-1.5b", "bf16-mixed", 8, 1024, "none", hf="ddp_mp"),
    C("llama3.2-1b-B1-S16384", "llama3.2-1b", "bf16-mixed", 1, 16384, "none", hf="ddp_mp"),
    C("llama3.2-1b-B16-S2048-full", "llama3.2-1b", "bf16-mixed", 16, 2048, "full", hf="ddp_mp"),
    C("llama3.2-3b-B2-S4096-none", "llama3.2-3b", "bf16-mixed", 2, 4096, "none", hf="ddp_mp"),
    C("llama3.1-8b-bf16-B1-S4096-none", "llama3-8b", "bf16", 1, 4096, "none", hf="bf16",
      training=LOSS_CURVE_TRAINING),
    # The same jobs with checkpointing left to swift-plan ("auto": the job sets
    # no strategy.checkpointing), against the HF runs of the checkpointed
    # configuration (the user's checkpointed baseline): what swift does when it
    # chooses.
    C("llama3.2-3b-B2-S4096-planned", "llama3.2-3b", "bf16-mixed", 2, 4096, "auto",
      hf_of="llama3.2-3b-B2-S4096-full"),
    C("llama3.1-8b-bf16-B1-S4096-planned", "llama3-8b", "bf16", 1, 4096, "auto",
      hf_of="llama3.1-8b-bf16-B1-S4096-full"),
    C("llama3.2-1b-B16-S2048-planned", "llama3.2-1b", "bf16-mixed", 16, 2048, "auto",
      hf_of="llama3.2-1b-B16-S2048-full"),
    # bf16-mixed 8B on one H200 without offload (swift-run only): 16 B per
    # parameter of model states since the master lives in the compute copy
    # (plan::masterInComputeCopy), checkpointing as swift-plan chooses.
    C("llama3.1-8b-mixed-B1-S4096-planned", "llama3-8b", "bf16-mixed", 1, 4096, "auto"),
    # Selective checkpointing (swift-run only): the attention output and the
    # SwiGLU product are recomputed, not saved, against the same job without.
    C("llama3.2-3b-B2-S4096-selective", "llama3.2-3b", "bf16-mixed", 2, 4096, "selective"),
    # FP8 GEMMs in the decoder linears (swift-run only), against their bf16 twin.
    # Their plans come from make_plans.sh once swift-plan knows the precisions.
    C("llama3.2-1b-fp8-B4-S2048", "llama3.2-1b", "fp8-mixed", 4, 2048, "none",
      twin="llama3.2-1b-B4-S2048"),
    C("llama3.2-3b-fp8-B2-S4096-none", "llama3.2-3b", "fp8-mixed", 2, 4096, "none",
      twin="llama3.2-3b-B2-S4096-none"),
    C("llama3.1-8b-fp8-B1-S4096-none", "llama3-8b", "fp8-bf16", 1, 4096, "none",
      twin="llama3.1-8b-bf16-B1-S4096-none", training=LOSS_CURVE_TRAINING),
]
BY_NAME = {c["name"]: c for c in CONFIGS}


def is_fp8(c):
    return c["precision"].startswith("fp8")


def selected():
    """The configurations SBS_ONLY selects (comma-separated substrings), in
    CONFIGS order; an FP8 configuration brings its bf16 twin."""
    only = [s for s in os.environ.get("SBS_ONLY", "").split(",") if s]
    names = {c["name"] for c in CONFIGS if not only or any(s in c["name"] for s in only)}
    names |= {c["twin"] for c in CONFIGS if c["name"] in names and c["twin"]}
    return [c for c in CONFIGS if c["name"] in names]


def hf_case(c):
    """hf_baseline.run_case's case of a configuration with an HF side; a
    configuration whose job clips gradients clips on the HF side too (as HF
    Trainer does with max_grad_norm: clip_grad_norm_ before the step)."""
    case = dict(model=c["model"], mode=c["hf"], B=c["B"], S=c["S"], ckpt=c["ckpt"] == "full")
    clip = re.search(r"max_grad_norm: *([0-9.eE+-]+)", c.get("training") or "")
    if clip and float(clip.group(1)) > 0:
        case["max_grad_norm"] = float(clip.group(1))
    return case


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
    for c in CONFIGS:
        name, B, S, ckpt = c["name"], c["B"], c["S"], c["ckpt"]
        extra = f", {c['training']}" if c["training"] else ""
        path = os.path.join(d, name + ".yaml")
        with open(path, "w") as f:
            f.write(f"# side_by_side.py: {name}\n"
                    f"model: {models.preset(c['model'])}\n"
                    f"training: {{sequence_length: {S}, global_batch_size: {B}, "
                    f"micro_batch_size: {B}, precision: {c['precision']}{extra}}}\n"
                    f"cluster: {{gpu: h200, gpus_per_node: 1}}\n"
                    f"backend: swift-run\n"
                    f"strategy: {{zero: 0, offload: none"
                    + (f", checkpointing: {ckpt}" if ckpt != "auto" else "") + "}\n")
        print(path)


def write_plans(d):
    os.makedirs(d, exist_ok=True)
    base = json.load(open(TEMPLATE))
    for c in CONFIGS:
        name, B, S, ckpt = c["name"], c["B"], c["S"], c["ckpt"]
        out = os.path.join(d, name + ".json")
        planned = os.path.join(PLANNED, name + ".json")
        if os.path.exists(planned):  # swift-plan's plan, with its predictions
            with open(planned) as src, open(out, "w") as dst:
                dst.write(src.read())
            print(out)
            continue
        if ckpt == "auto" or is_fp8(c) or c["training"]:
            # swift-plan chooses (auto), or knows what the template cannot say
            print(f"{name}: no plans/{name}.json (make_plans.sh writes it): skipped",
                  file=sys.stderr)
            continue
        p = json.loads(json.dumps(base))
        p["comment"] = f"side_by_side.py: {name}"
        # the plan schema's model: the table's fields but model_type
        p["model"].update({k: v for k, v in models.model(c["model"]).items() if k != "model_type"})
        p["training"].update(sequence_length=S, global_batch_size=B, micro_batch_size=B,
                             gradient_accumulation=1, precision=c["precision"])
        p["strategy"].update(zero=0, offload="none", checkpointing=ckpt, checkpoint_layers=-1)
        json.dump(p, open(out, "w"), indent=1)
        print(out)


# ---------------------------------------------------------------- HF side
MODES = ("eager", "compile")


def hf_row_mode(r):
    return r.get("hf_mode") or ("compile" if r.get("compile") else "eager")


def hf_child(outfile, mode, progress, names):
    """Runs the HF cases of `names` in this process, one after the other;
    appends each row to outfile and a `start NAME` line to progress first."""
    os.environ.setdefault("BUDGET_S", "100000")  # hf_baseline's own deadline: the parent's
    sys.path.insert(0, os.path.join(HERE, "..", "calibration"))
    sys.argv = ["hf_baseline.py", "1", outfile]
    import hf_baseline, torch, traceback, gc
    import gpu_clocks
    torch.cuda.set_device(0)
    phases = os.environ.get("SBS_PHASES")  # gpu_clocks.py's phase file
    for name in names:
        c = dict(hf_case(BY_NAME[name]))
        if mode == "compile":
            warm = int(os.environ.get("HF_COMPILE_WARMUP", "3"))
            c.update(compile=True, warmup=warm,
                     steps=warm + int(os.environ.get("HF_COMPILE_STEPS", "5")))
        else:
            c["steps"] = int(os.environ.get("HF_STEPS", "5"))
        with open(progress, "a") as f:
            f.write(f"start {name} {time.time()}\n")
        if phases:
            gpu_clocks.mark(phases, f"hf-{mode} {name}", "start")
        err = None
        try:
            r = hf_baseline.run_case(c)
        except Exception as e:  # an OOM, a compile error, a missing package: a row, not a crash
            traceback.print_exc()
            err = repr(e)[:500]
        if err is not None:  # out of the except clause: the traceback (and the model) are gone
            r = dict(c, error=err)
            gc.collect()
            if mode == "compile":
                torch._dynamo.reset()
            torch.cuda.empty_cache()
        if phases:
            gpu_clocks.mark(phases, f"hf-{mode} {name}", "end")
        r.update(config=name, hf_mode=mode)
        print(json.dumps({k: r.get(k) for k in ("config", "hf_mode", "tokens_per_s",
                                                "peak_alloc_steady", "step_s_median",
                                                "compile_s", "loss", "error")}), flush=True)
        with open(outfile, "a") as f:
            f.write(json.dumps(r) + "\n")


def run_hf(outfile):
    """The HF cases of the selected configurations, eager then compiled, each
    mode in child processes: a case that crashes the process or runs past its
    limit (or the deadline) becomes an error row and the next case runs in a
    fresh child."""
    deadline = float(os.environ.get("SBS_DEADLINE", "inf"))
    cases = [c["name"] for c in selected() if c["hf"]]
    # SBS_HF_ONLY=SUB[,SUB...]: the HF side of only these (e.g. the ones an
    # earlier call has not measured yet), the swift side of all selected.
    hf_only = [s for s in os.environ.get("SBS_HF_ONLY", "").split(",") if s]
    if hf_only:
        cases = [n for n in cases if any(s in n for s in hf_only)]
    modes = [m for m in MODES if not os.environ.get(f"SBS_SKIP_{m.upper()}")]
    progress = f"/tmp/sbs-hf-progress-{os.getpid()}"
    import signal
    current = []  # the running child: killed with this process (timeout's SIGTERM)

    def on_term(signum, frame):
        for child in current:
            _kill(child)
        sys.exit(128 + signum)
    signal.signal(signal.SIGTERM, on_term)
    signal.signal(signal.SIGINT, on_term)
    for mode in modes:
        limit = float(os.environ.get("SBS_HF_COMPILE_CASE_TIMEOUT" if mode == "compile"
                                     else "SBS_HF_CASE_TIMEOUT",
                                     "360" if mode == "compile" else "150"))
        todo = list(cases)
        while todo:
            if time.time() > deadline - 10:
                for name in todo:
                    _error_row(outfile, name, mode, "not run: deadline")
                break
            open(progress, "w").close()
            child = subprocess.Popen([sys.executable, os.path.abspath(__file__), "hf-child",
                                      outfile, mode, progress] + todo, start_new_session=True)
            current[:] = [child]
            why = None
            while child.poll() is None:
                time.sleep(0.5)
                started = _started(progress)
                if started and time.time() - started[-1][1] > limit:
                    why = f"killed: over {limit:.0f} s"
                elif time.time() > deadline:
                    why = "killed: deadline"
                if why:
                    _kill(child)
                    break
            done = _rows_of(outfile, mode)
            started = [n for n, _ in _started(progress)]
            for name in started:
                if name not in done:  # the case the child was in
                    _error_row(outfile, name, mode, why or f"child exited {child.returncode}")
            todo = [n for n in todo if n not in started]
            if not started and todo:  # the child died before its first case
                for name in todo:
                    _error_row(outfile, name, mode, f"child exited {child.returncode} "
                               "before its first case")
                break


def _started(progress):
    try:
        return [(l.split()[1], float(l.split()[2])) for l in open(progress) if l.startswith("start ")]
    except FileNotFoundError:
        return []


def _rows_of(outfile, mode):
    try:
        return {r.get("config") for r in map(json.loads, filter(str.strip, open(outfile)))
                if hf_row_mode(r) == mode}
    except FileNotFoundError:
        return set()


def _kill(child):
    import signal
    try:
        os.killpg(child.pid, signal.SIGKILL)
    except ProcessLookupError:
        pass
    child.wait()


def _error_row(outfile, name, mode, why):
    r = dict(hf_case(BY_NAME[name]), config=name, hf_mode=mode, error=why)
    print(json.dumps({k: r.get(k) for k in ("config", "hf_mode", "error")}), flush=True)
    with open(outfile, "a") as f:
        f.write(json.dumps(r) + "\n")


# ---------------------------------------------------------------- the table
def table(out):
    def rows(path):
        try:
            return [json.loads(l) for l in open(path) if l.strip()]
        except FileNotFoundError:
            return []
    swift = {}
    for r in rows(os.path.join(out, "swift-metrics.jsonl")):
        swift.setdefault(r["config"], []).append(r)
    hf = {}  # (config, mode) -> the last row
    for r in rows(os.path.join(out, "hf.jsonl")):
        hf[(r["config"], hf_row_mode(r))] = r
    def f(v, fmt):  # "-" for a missing value, right-aligned in the field
        width = int("".join(ch for ch in fmt.split(".")[0].split(",")[0] if ch.isdigit()) or 0)
        return format(v, fmt) if v is not None else "-".rjust(width)
    gib = lambda b: b / 2**30 if b else None
    pct = lambda v, width, sign="": (format(100 * v, f"{sign}{width - 1}.1f") + "%"
                                     if v is not None else "-".rjust(width))
    hdr = (f"{'configuration':34} {'swift tok/s':>11} {'HF tok/s':>9} {'HFc tok/s':>9} "
           f"{'s/HF':>5} {'s/HFc':>5} {'swift GiB':>9} {'HF GiB':>7} {'HFc GiB':>7} "
           f"{'s/HF':>5} {'s/HFc':>5} {'swift MFU':>9} {'HF MFU':>6} {'HFc MFU':>7} "
           f"{'plan GiB err':>12} {'plan tok/s err':>14}")
    lines = ["tokens/s, peak GiB and MFU: swift-run, HF eager (HF), HF + torch.compile (HFc); "
             "s/HF, s/HFc: swift's over theirs", hdr, "-" * len(hdr)]
    results = []
    names = [c["name"] for c in CONFIGS]
    names += sorted(k for k in swift if k not in names)
    for name in names:
        steps = swift.get(name, [])
        cfg = next((c for c in CONFIGS if name == c["name"] or name.startswith(c["name"] + "/")),
                   None)
        if cfg is None or not steps:
            continue
        fpt = flops_per_token(models.model(cfg["model"]), cfg["S"])
        steady = steps[1:] or steps  # the first step warms up
        s_tps = sum(r["tokens"] for r in steady) / sum(r["step_seconds"] for r in steady)
        s_peak = max(r["peak_memory_bytes"] for r in steady)
        main = name == cfg["name"]
        base = cfg["hf_of"]
        h = hf.get((base, "eager"), {}) if main and base else {}
        hc = hf.get((base, "compile"), {}) if main and base else {}
        ckpt = cfg["ckpt"]
        if ckpt == "auto":  # what swift-plan chose: the committed plan says
            try:
                with open(os.path.join(PLANNED, cfg["name"] + ".json")) as fp:
                    ckpt = json.load(fp)["strategy"]["checkpointing"]
            except (OSError, KeyError, ValueError):
                pass
        res = dict(config=name, model=cfg["model"], precision=cfg["precision"],
                   micro_batch=cfg["B"], seq=cfg["S"], checkpointing=ckpt, hf_baseline=base,
                   flops_per_token=fpt, swift_tokens_per_s=s_tps, swift_peak_bytes=s_peak,
                   swift_peak_reserved_bytes=max(r.get("peak_reserved_bytes", 0)
                                                 for r in steady),
                   swift_mfu=s_tps * fpt / PEAK_FLOPS,
                   swift_losses=[r["loss"] for r in steps],
                   swift_planned_peak_bytes=steps[0].get("planned_peak_memory_bytes"),
                   swift_planned_tokens_per_s=steps[0].get("planned_tokens_per_second"))
        for key, row in (("hf", h), ("hfc", hc)):
            tps, peak = row.get("tokens_per_s"), row.get("peak_alloc_steady")
            res.update({f"{key}_tokens_per_s": tps, f"{key}_peak_bytes": peak,
                        f"{key}_mfu": tps * fpt / PEAK_FLOPS if tps else None,
                        f"{key}_loss": row.get("loss"), f"{key}_error": row.get("error")})
        res["hfc_compile_s"] = hc.get("compile_s")
        res["tokens_ratio"] = s_tps / res["hf_tokens_per_s"] if res["hf_tokens_per_s"] else None
        res["memory_ratio"] = s_peak / res["hf_peak_bytes"] if res["hf_peak_bytes"] else None
        res["compile_tokens_ratio"] = (s_tps / res["hfc_tokens_per_s"]
                                       if res["hfc_tokens_per_s"] else None)
        res["compile_memory_ratio"] = s_peak / res["hfc_peak_bytes"] if res["hfc_peak_bytes"] else None
        # swift-plan's predictions for swift-run (plans/ made by make_plans.sh).
        p_peak, p_tps = res["swift_planned_peak_bytes"], res["swift_planned_tokens_per_s"]
        res["planned_peak_error"] = (p_peak - s_peak) / s_peak if p_peak else None
        res["planned_tokens_error"] = (p_tps - s_tps) / s_tps if p_tps else None
        results.append(res)
        lines.append(
            f"{name:34} {s_tps:11,.0f} {f(res['hf_tokens_per_s'], '9,.0f')} "
            f"{f(res['hfc_tokens_per_s'], '9,.0f')} {f(res['tokens_ratio'], '5.2f')} "
            f"{f(res['compile_tokens_ratio'], '5.2f')} {s_peak / 2**30:9.2f} "
            f"{f(gib(res['hf_peak_bytes']), '7.2f')} {f(gib(res['hfc_peak_bytes']), '7.2f')} "
            f"{f(res['memory_ratio'], '5.2f')} {f(res['compile_memory_ratio'], '5.2f')} "
            f"{pct(res['swift_mfu'], 9)} {pct(res['hf_mfu'], 6)} {pct(res['hfc_mfu'], 7)} "
            f"{pct(res['planned_peak_error'], 12, '+')} {pct(res['planned_tokens_error'], 14, '+')}")
    by = {r["config"]: r for r in results}
    # HF runs that failed (OOM, compile errors): the reason, not just a "-".
    for r in results:
        for key, what in (("hf_error", "HF eager"), ("hfc_error", "HF + compile")):
            if r.get(key):
                lines.append(f"{r['config']}: {what} failed: {r[key][:160]}")
    # Fused vs unfused runs of one configuration start from the same weights
    # and data: their losses must agree to bf16 rounding.
    for r in results:
        base = by.get(r["config"].split("/")[0])
        if base is not None and base is not r:
            d = max(abs(a - b) for a, b in zip(base["swift_losses"][:3], r["swift_losses"][:3]))
            r["max_abs_loss_diff_vs_main_first3"] = d
            lines.append(f"{r['config']}: max |loss - main loss| over 3 steps {d:.2e} "
                         f"(losses {', '.join(f'{x:.4f}' for x in r['swift_losses'][:3])})")
    # FP8 against its bf16 twin (same model, batch, checkpointing; same call).
    fp8 = [r for r in results if r["config"] in BY_NAME and BY_NAME[r["config"]]["twin"]]
    if fp8:
        lines += ["", f"{'FP8 configuration':34} {'tok/s':>9} {'twin tok/s':>10} "
                      f"{'fp8 / bf16 twin':>15} {'GiB':>7} {'twin GiB':>8} {'ratio':>6}  "
                      f"losses (first 3) fp8 | twin"]
    for r in fp8:
        t = by.get(BY_NAME[r["config"]]["twin"])
        r["twin"] = BY_NAME[r["config"]]["twin"]
        if t is None:
            lines.append(f"{r['config']:34} {r['swift_tokens_per_s']:9,.0f} (twin {r['twin']} "
                         "not run in this call)")
            continue
        r["twin_tokens_ratio"] = r["swift_tokens_per_s"] / t["swift_tokens_per_s"]
        r["twin_memory_ratio"] = r["swift_peak_bytes"] / t["swift_peak_bytes"]
        lines.append(f"{r['config']:34} {r['swift_tokens_per_s']:9,.0f} "
                     f"{t['swift_tokens_per_s']:10,.0f} {r['twin_tokens_ratio']:15.2f} "
                     f"{r['swift_peak_bytes'] / 2**30:7.2f} {t['swift_peak_bytes'] / 2**30:8.2f} "
                     f"{r['twin_memory_ratio']:6.2f}  "
                     + ", ".join(f"{x:.4f}" for x in r["swift_losses"][:3]) + " | "
                     + ", ".join(f"{x:.4f}" for x in t["swift_losses"][:3]))
    # The target against HF + torch.compile: >= 1.3x its tokens/s at no more
    # than its peak (reported, not asserted).
    vs = [r for r in results if r.get("compile_tokens_ratio")]
    if vs:
        met = [r for r in vs if r["compile_tokens_ratio"] >= 1.3 and r["compile_memory_ratio"] <= 1.0]
        lines += ["", f"target vs HF + compile (>= 1.30x tokens/s, peak <= 1.00x): "
                      f"{len(met)} of {len(vs)} met"]
        for r in vs:
            ok = r in met
            lines.append(f"  {r['config']:34} {r['compile_tokens_ratio']:5.2f}x tokens/s, "
                         f"{r['compile_memory_ratio']:5.2f}x peak  {'met' if ok else 'NOT met'}")
    with open(os.path.join(out, "results.jsonl"), "w") as fo:
        for r in results:
            fo.write(json.dumps(r) + "\n")
    print("\n".join(lines))


if __name__ == "__main__":
    cmd = sys.argv[1]
    if cmd == "names":
        print("\n".join(c["name"] for c in selected()))
    elif cmd == "hf-child":
        hf_child(sys.argv[2], sys.argv[3], sys.argv[4], sys.argv[5:])
    else:
        {"jobs": write_jobs, "plans": write_plans, "hf": run_hf, "table": table}[cmd](sys.argv[2])
