"""Memory instrumentation of one HF-transformers Llama training step.

For each traced configuration it runs 2 plain steps (optimizer state allocated,
steady state reached, previous step's `out` kept alive exactly as in
hf_baseline.py), then one instrumented step that records:

  * saved-for-backward tensors (torch.autograd.graph.saved_tensors_hooks),
    deduplicated by storage, attributed to (module path, torch function),
    classified as activation / param / weight-cast (an autocast bf16 copy or an
    FSDP unsharded view: same shape as a parameter, not a parameter storage);
  * forward: allocated bytes before / peak inside / after every top-level
    torch function call (TorchFunctionMode), tagged with the module path;
  * backward: allocated bytes before / peak inside / after every autograd node
    (Node.register_prehook / register_hook), tagged with the forward op that
    created the node;
  * phase marks: start, after forward, after backward, after optimizer step.

Output (JSON lines):
  OUT_DIR/h200_hf_trace.jsonl        one summary row per config + one row per
                                      (config, scope, op) of saved bytes
  OUT_DIR/h200_hf_trace_events.jsonl memory events (only those where memory
                                      changed), for locating the peak

Usage: python3 hf_memory_trace.py OUT_DIR [filter]
World > 1 configs use the fake process group (world from the config).
"""
import os, sys, json, time, gc, traceback, re
import torch
import torch.distributed as dist
from torch.overrides import TorchFunctionMode

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
OUT_DIR = sys.argv[1]
FILT = sys.argv[2] if len(sys.argv) > 2 else ""
DEADLINE = time.time() + float(os.environ.get("BUDGET_S", "200"))

# hf_baseline reads argv at import: give it what it wants
_argv = sys.argv
sys.argv = ["hf_baseline.py", "2", "/dev/null"]
import hf_baseline as hb  # noqa: E402
sys.argv = _argv

MiB = 1 << 20
D = dict
CONFIGS = [
    D(model="llama3.2-1b", mode="ddp_mp", B=2, S=2048, ckpt=False),
    D(model="llama3.2-1b", mode="bf16", B=2, S=2048, ckpt=False),
    D(model="llama3.2-1b", mode="lora", B=2, S=2048, ckpt=False),
    D(model="llama3.2-1b", mode="ddp_mp", B=2, S=2048, ckpt=True),
    D(model="llama3.2-1b", mode="bf16", B=2, S=2048, ckpt=True),
    D(model="llama3.2-1b", mode="lora", B=2, S=2048, ckpt=True),
    D(model="qwen2.5-0.5b", mode="ddp_mp", B=2, S=2048, ckpt=False),
    D(model="llama3.2-1b", mode="fsdp", B=2, S=2048, ckpt=False, reshard=True, world=2),
    D(model="llama3.2-1b", mode="fsdp", B=2, S=2048, ckpt=False, reshard=False, world=2),
    D(model="llama3.2-1b", mode="fsdp", B=2, S=2048, ckpt=True, reshard=True, world=2),
]


class St:
    phase = "init"
    modstack = []
    events = []
    saved = {}        # storage ptr -> record
    param_ptrs = set()
    param_shapes = set()
    node_label = {}   # autograd Node -> label
    base = 0
    active = False


def scope():
    return St.modstack[-1] if St.modstack else "<root>"


def mark(tag):
    """Record allocated now and the peak since the previous mark, then reset the peak."""
    cur = torch.cuda.memory_allocated() - St.base
    pk = torch.cuda.max_memory_allocated() - St.base
    St.events.append([St.phase, tag, cur, pk])
    torch.cuda.reset_peak_memory_stats()


class FnMode(TorchFunctionMode):
    def __torch_function__(self, func, types, args=(), kwargs=None):
        kwargs = kwargs or {}
        if not St.active:
            return func(*args, **kwargs)
        name = getattr(func, "__name__", None) or str(func)
        b = torch.cuda.memory_allocated(); pkb = torch.cuda.max_memory_allocated()
        torch.cuda.reset_peak_memory_stats()
        St.cur_op = name
        out = func(*args, **kwargs)
        a = torch.cuda.memory_allocated(); pk = torch.cuda.max_memory_allocated()
        lab = f"{scope()}:{name}"
        if pk != b or a != b:
            # event: allocated before, peak inside, after (all relative to base)
            St.events.append([St.phase, "fn:" + lab, b - St.base, max(pk, pkb) - St.base, a - St.base,
                              pk - b])
        torch.cuda.reset_peak_memory_stats()
        outs = out if isinstance(out, (tuple, list)) else (out,)
        for o in outs:
            if isinstance(o, torch.Tensor) and o.grad_fn is not None and o.grad_fn not in St.node_label:
                St.node_label[o.grad_fn] = lab
        return out


def pack(t):
    if not St.active or St.phase != "fwd":
        return t
    try:
        st = t.untyped_storage(); ptr = st.data_ptr(); nb = st.nbytes()
    except Exception:
        return t
    if ptr in St.saved:
        St.saved[ptr]["uses"] += 1
        return t
    if ptr in St.param_ptrs:
        kind = "param"
    elif tuple(t.shape) in St.param_shapes and t.dtype == torch.bfloat16:
        kind = "weight_copy"
    else:
        kind = "act"
    St.saved[ptr] = dict(scope=scope(), op=getattr(St, "cur_op", "?"), shape=list(t.shape),
                         dtype=str(t.dtype).replace("torch.", ""), nbytes=nb, kind=kind, uses=1)
    return t


def unpack(t):
    return t


def hook_modules(model):
    hs = []
    for name, mod in model.named_modules():
        def pre(m, a, name=name):
            St.modstack.append(name)
        def post(m, a, o, name=name):
            if St.modstack and St.modstack[-1] == name:
                St.modstack.pop()
        hs.append(mod.register_forward_pre_hook(pre))
        hs.append(mod.register_forward_hook(post))
    return hs


def short(label):
    # base_model.model.model.layers.3.self_attn.q_proj.lora_A.default -> L3.self_attn.q_proj.lora_A
    s = label.replace("base_model.model.", "").replace("model.layers.", "L").replace(".default", "")
    s = s.replace("_fsdp_wrapped_module.", "")
    return s


def hook_graph(root):
    seen = set(); stack = [root]; hs = []
    while stack:
        n = stack.pop()
        if n is None or n in seen:
            continue
        seen.add(n)
        lab = St.node_label.get(n, "")
        tag = f"{n.name()}@{short(lab)}" if lab else n.name()
        try:
            hs.append(n.register_prehook(lambda go, tag=tag: mark("pre:" + tag)))
            hs.append(n.register_hook(lambda gi, go, tag=tag: mark("post:" + tag)))
        except Exception:
            pass
        for nx, _ in n.next_functions:
            if nx is not None:
                stack.append(nx)
    return hs


def trace_case(c, fout, fev):
    world = c.get("world", 1)
    gc.collect(); torch.cuda.empty_cache(); torch.cuda.reset_peak_memory_stats()
    St.base = torch.cuda.memory_allocated()
    model, opt, cfg, autocast = hb.build_model(c)
    B, S = c["B"], c["S"]
    ids = torch.randint(0, cfg.vocab_size, (B, S), device="cuda")
    out = None
    for _ in range(2):
        with torch.autocast("cuda", dtype=torch.bfloat16, enabled=autocast):
            out = model(input_ids=ids, labels=ids)
        out.loss.backward(); opt.step(); opt.zero_grad(set_to_none=True)
    torch.cuda.synchronize()
    # what the previous step's `out` holds between steps
    held = {}
    for k, v in out.items():
        if isinstance(v, torch.Tensor):
            held[k] = [list(v.shape), str(v.dtype), v.untyped_storage().nbytes()]
        elif v is not None:
            try:
                tot = 0; n = 0; dts = set()
                for lay in getattr(v, "layers", []):
                    for nm in ("keys", "values"):
                        t = getattr(lay, nm, None)
                        if isinstance(t, torch.Tensor):
                            tot += t.untyped_storage().nbytes(); n += 1; dts.add(f"{nm}:{t.dtype}")
                held[k] = [type(v).__name__, n, tot, sorted(dts)]
            except Exception as e:
                held[k] = [type(v).__name__, repr(e)[:100]]
    # drop the loop variables above: they referenced the old DynamicCache and kept it (and the
    # last value tensor) alive through the instrumented step in the 2026-12-02 traces (+256 MiB
    # of fp32 cache and ~66 MiB in the first config's absolute levels; differences unaffected)
    v = lay = t = None
    St.param_ptrs = set(); St.param_shapes = set()
    for p in model.parameters():
        t = p.to_local() if hasattr(p, "to_local") else p
        St.param_ptrs.add(t.untyped_storage().data_ptr())
        full = tuple(p.shape)
        St.param_shapes.add(full)
    St.events = []; St.saved = {}; St.node_label = {}; St.modstack = []
    hs = hook_modules(model)
    mode = FnMode()
    torch.cuda.synchronize(); torch.cuda.reset_peak_memory_stats()
    St.phase = "start"; mark("start")
    St.active = True; St.phase = "fwd"
    with mode, torch.autograd.graph.saved_tensors_hooks(pack, unpack):
        with torch.autocast("cuda", dtype=torch.bfloat16, enabled=autocast):
            out = model(input_ids=ids, labels=ids)
    St.phase = "fwd_end"; mark("after_fwd(old out freed)")
    gh = hook_graph(out.loss.grad_fn)
    St.phase = "bwd"
    out.loss.backward()
    torch.cuda.synchronize()
    St.phase = "bwd_end"; mark("after_bwd")
    St.phase = "opt"
    opt.step(); mark("after_opt.step")
    opt.zero_grad(set_to_none=True); mark("after_zero_grad")
    torch.cuda.synchronize()
    St.active = False
    for h in hs + gh:
        h.remove()
    key = dict(c, world=world)
    # peaks by phase with location
    summ = dict(key, kind="summary", held_by_out=held)
    evs = St.events
    for ph in ("fwd", "bwd", "opt"):
        best = None
        for e in evs:
            if e[0] == ph and (best is None or e[3] > best[3]):
                best = e
        if best:
            summ[f"peak_{ph}"] = best[3]; summ[f"peak_{ph}_at"] = best[1]
    for e in evs:
        if e[1].startswith("after_fwd"):
            summ["alloc_after_fwd"] = e[2]
            summ["peak_fwd_tail"] = e[3]   # peak between last fn event and end of forward
        if e[1] == "after_bwd":
            summ["alloc_after_bwd"] = e[2]
        if e[1] == "start":
            summ["alloc_start"] = e[2]
        if e[1] == "after_zero_grad":
            summ["alloc_end"] = e[2]
    summ["peak_step"] = max(e[3] for e in evs)
    # saved bytes by scope class
    agg = {}
    for ptr, r in St.saved.items():
        sc = short(r["scope"])
        m = re.match(r"L(\d+)\.(.*)", sc)
        if m:
            li, rest = int(m.group(1)), m.group(2)
            grp = "layer_all"
        else:
            li, rest, grp = -1, sc, "head"
        agg.setdefault((grp, r["kind"]), 0)
        agg[(grp, r["kind"])] += r["nbytes"]
        if li in (-1, 1):  # per-op detail: layer 1 and everything outside layers
            row = dict(key, kind="saved", layer=li, scope=rest, op=r["op"], shape=r["shape"], dtype=r["dtype"],
                       nbytes=r["nbytes"], tkind=r["kind"], uses=r["uses"])
            fout.write(json.dumps(row) + "\n")
    summ["saved_totals"] = {f"{g}/{k}": v for (g, k), v in sorted(agg.items())}
    summ["n_layers"] = cfg.num_hidden_layers
    fout.write(json.dumps(summ) + "\n"); fout.flush()
    print(json.dumps(summ), flush=True)
    for e in evs:
        # keep layer 1, head, non-layer and marks; drop other layers to keep the file small
        if re.search(r"layers\.(\d+)\.", e[1]) and not re.search(r"layers\.1\.", e[1]) \
                and not re.search(r"L1\.", e[1]):
            # keep the top events anyway
            if e[3] < summ["peak_step"] - 64 * MiB:
                continue
        fev.write(json.dumps(dict(key, ev=e)) + "\n")
    fev.flush()
    del model, opt, out, ids
    gc.collect(); torch.cuda.empty_cache()


def main():
    os.makedirs(OUT_DIR, exist_ok=True)
    from torch.testing._internal.distributed.fake_pg import FakeStore
    torch.cuda.set_device(0)
    cur_world = None
    with open(os.path.join(OUT_DIR, "h200_hf_trace.jsonl"), "a") as fout, \
            open(os.path.join(OUT_DIR, "h200_hf_trace_events.jsonl"), "a") as fev:
        for c in CONFIGS:
            key = f'{c["model"]}/{c["mode"]}'
            if FILT and FILT not in key:
                continue
            if time.time() > DEADLINE:
                print("deadline, skipping", c, flush=True); continue
            w = c.get("world", 1)
            if w > 1 and cur_world != w:
                if dist.is_initialized():
                    dist.destroy_process_group()
                dist.init_process_group("fake", store=FakeStore(), rank=0, world_size=w)
                cur_world = w
            try:
                trace_case(c, fout, fev)
            except Exception as e:
                traceback.print_exc()
                fout.write(json.dumps(dict(c, kind="error", error=repr(e)[:500])) + "\n"); fout.flush()
                St.active = False
                gc.collect(); torch.cuda.empty_cache()


if __name__ == "__main__":
    main()
