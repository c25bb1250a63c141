"""Baseline measurements of training memory and speed with stock
PyTorch + HF transformers (+ FSDP2 over a fake process group, so per-rank
memory at world size N is real on one GPU). Output: JSON lines.
Usage: python3 hf_baseline.py WORLD OUTFILE [case-filter | new]
Extended from shared/calibration/hf_baseline.py (same row format; extra keys:
peak_fwd / alloc_after_fwd / peak_bwd / alloc_after_bwd / peak_opt of the steady
step with the highest peak, and peak_phase). "new" skips the public cases.
A case with compile=True runs torch.compile(model) (default mode) and
warmup=W (default 1) leaves its first W steps (compilation) out of the steady
numbers; such rows also carry compile_s (the warm-up steps' seconds).
max_grad_norm=X clips the gradients before each step (HF Trainer's order)."""
import os, sys, json, time, gc, traceback, math
import torch
import torch.distributed as dist

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
import models  # noqa: E402

WORLD = int(sys.argv[1]); OUT = sys.argv[2]; FILT = sys.argv[3] if len(sys.argv) > 3 else ""
DEADLINE = time.time() + float(os.environ.get("BUDGET_S", "520"))

def cfg_of(name):
    """HF's LlamaForCausalLM config of a table model (benchmarks/models.py),
    as every row in test/data/calibration was measured: shapes only (HF's
    defaults for the norm epsilon and rope), and Llama's one attention_bias
    flag (q, k, v and o biases) where Qwen2 has q/k/v biases."""
    from transformers import LlamaConfig
    m = models.model(name)
    return LlamaConfig(hidden_size=m["hidden_size"], num_hidden_layers=m["num_hidden_layers"],
                       num_attention_heads=m["num_attention_heads"],
                       num_key_value_heads=m["num_key_value_heads"],
                       intermediate_size=m["intermediate_size"], vocab_size=m["vocab_size"],
                       tie_word_embeddings=m["tie_word_embeddings"],
                       attention_bias=m["attention_qkv_bias"], max_position_embeddings=32768,
                       attn_implementation="sdpa")

def fix_rope(model, cfg):
    for mod in model.modules():
        if hasattr(mod, "inv_freq") and isinstance(mod.inv_freq, torch.Tensor):
            dim = cfg.hidden_size // cfg.num_attention_heads
            rp = getattr(cfg, "rope_parameters", None) or {}
            theta = rp.get("rope_theta", 10000.0) if isinstance(rp, dict) else 10000.0
            inv = 1.0 / (theta ** (torch.arange(0, dim, 2, dtype=torch.float32, device="cuda") / dim))
            mod.inv_freq = inv
            if hasattr(mod, "original_inv_freq"):
                mod.original_inv_freq = inv

def init_params(model):
    with torch.no_grad():
        for p in model.parameters():
            t = p.to_local() if hasattr(p, "to_local") else p
            t.normal_(0, 0.02)

def build_model(c):
    """The case's model and optimizer, as every measurement here runs them:
    returns (model, optimizer, config, autocast)."""
    from transformers import LlamaForCausalLM
    cfg = cfg_of(c["model"])
    mode = c["mode"]  # ddp_mp | bf16 | lora | fsdp
    autocast = False
    if mode == "fsdp":
        from torch.distributed.fsdp import fully_shard, MixedPrecisionPolicy, CPUOffloadPolicy
        with torch.device("meta"):
            model = LlamaForCausalLM(cfg)
        mp = MixedPrecisionPolicy(param_dtype=torch.bfloat16, reduce_dtype=torch.float32)
        kw = dict(mp_policy=mp, reshard_after_forward=c.get("reshard", True))
        if c.get("offload"):
            kw["offload_policy"] = CPUOffloadPolicy(pin_memory=True)
        for layer in model.model.layers:
            fully_shard(layer, **kw)
        fully_shard(model, **kw)
        model.to_empty(device="cpu" if c.get("offload") else "cuda")
        init_params(model)
        fix_rope(model, cfg)
        opt = torch.optim.AdamW(model.parameters(), lr=1e-5, foreach=True)
    else:
        dtype = torch.float32 if mode == "ddp_mp" else torch.bfloat16
        with torch.device("cuda"):
            model = LlamaForCausalLM(cfg).to(dtype)
        if mode == "lora":
            from peft import LoraConfig, get_peft_model
            lc = LoraConfig(r=c.get("r", 16), lora_alpha=32, lora_dropout=0.0,
                            target_modules=["q_proj", "k_proj", "v_proj", "o_proj", "gate_proj", "up_proj", "down_proj"])
            model = get_peft_model(model, lc)
            if c["ckpt"]:
                model.enable_input_require_grads()
        autocast = mode == "ddp_mp"
        params = [p for p in model.parameters() if p.requires_grad]
        opt = torch.optim.AdamW(params, lr=1e-5, fused=True)
    if c["ckpt"]:
        model.gradient_checkpointing_enable(gradient_checkpointing_kwargs={"use_reentrant": False})
    model.train()
    return model, opt, cfg, autocast

def run_case(c):
    B, S = c["B"], c["S"]
    torch.cuda.empty_cache(); torch.cuda.reset_peak_memory_stats()
    base_alloc = torch.cuda.memory_allocated()
    t0 = time.time()
    model, opt, cfg, autocast = build_model(c)
    if c.get("compile"):  # what a user who wants speed types (the optimizer stays eager)
        torch._dynamo.reset()
        model = torch.compile(model)
    n_params = sum((p.numel() if not hasattr(p, "full_tensor") else p.numel()) for p in model.parameters())
    n_train = sum(p.numel() for p in model.parameters() if p.requires_grad)
    torch.cuda.synchronize()
    static_after_init = torch.cuda.memory_allocated() - base_alloc
    ids = torch.randint(0, cfg.vocab_size, (B, S), device="cuda")
    times, peaks, peaks_res, phases = [], [], [], []
    steps = c.get("steps", 4)
    for step in range(steps):
        torch.cuda.synchronize(); torch.cuda.reset_peak_memory_stats()
        t = time.time()
        with torch.autocast("cuda", dtype=torch.bfloat16, enabled=autocast):
            out = model(input_ids=ids, labels=ids)
        # phase boundaries (host-side allocator counters: no sync, no effect on memory)
        ph = dict(peak_fwd=torch.cuda.max_memory_allocated() - base_alloc,
                  alloc_after_fwd=torch.cuda.memory_allocated() - base_alloc)
        torch.cuda.reset_peak_memory_stats()
        out.loss.backward()
        ph["peak_bwd"] = torch.cuda.max_memory_allocated() - base_alloc
        ph["alloc_after_bwd"] = torch.cuda.memory_allocated() - base_alloc
        torch.cuda.reset_peak_memory_stats()
        if c.get("max_grad_norm"):  # as HF Trainer clips: before the step
            torch.nn.utils.clip_grad_norm_(model.parameters(), c["max_grad_norm"])
        opt.step(); opt.zero_grad(set_to_none=True)
        ph["peak_opt"] = torch.cuda.max_memory_allocated() - base_alloc
        torch.cuda.synchronize()
        times.append(time.time() - t)
        peaks.append(max(ph["peak_fwd"], ph["peak_bwd"], ph["peak_opt"]))
        phases.append(ph)
        peaks_res.append(torch.cuda.max_memory_reserved())
        if step == 0:
            static_after_step1 = torch.cuda.memory_allocated() - base_alloc
        if time.time() > DEADLINE:
            break
    # steps left out of the steady numbers: the first (warmup 1, every case but
    # compiled ones), at least one steady step remaining
    w = max(0, min(c.get("warmup", 1), len(times) - 1))
    st = sorted(times[w:]) or times
    med = st[len(st) // 2]
    res = dict(c, world=WORLD, n_params_local=n_params, n_trainable_local=n_train,
               static_after_init=static_after_init, static_after_step1=static_after_step1,
               peak_alloc_first=peaks[0], peak_alloc_steady=max(peaks[w:]) if len(peaks) > 1 else peaks[0],
               peak_reserved=max(peaks_res), step_s_median=med, step_s_all=times,
               tokens_per_s=B * S / med, setup_s=round(time.time() - t0 - sum(times), 2),
               loss=float(out.loss))
    # phase breakdown of the steady step with the highest peak
    ist = max(range(w, len(peaks)), key=lambda i: peaks[i]) if len(peaks) > 1 else 0
    res.update(phases[ist]); res["peak_phase"] = max(("fwd", "bwd", "opt"), key=lambda k: phases[ist]["peak_" + k])
    if c.get("compile"):
        res["compile_s"] = round(sum(times[:w]), 2)
        res["steady_steps"] = len(times) - w
    del model, opt, out, ids
    gc.collect()
    if c.get("compile"):
        torch._dynamo.reset()  # the compiled graphs and their guards go with the model
    torch.cuda.empty_cache()
    return res

D = dict
CASES = {
 1: [
  # the shared file's cases (kept for re-measurement; filter with argv[3])
  D(model="qwen2.5-0.5b", mode="ddp_mp", B=4, S=2048, ckpt=False, tag="public"),
  D(model="qwen2.5-0.5b", mode="ddp_mp", B=4, S=2048, ckpt=True, tag="public"),
  D(model="llama3.2-1b", mode="ddp_mp", B=4, S=2048, ckpt=False, tag="public"),
  D(model="llama3.2-1b", mode="ddp_mp", B=4, S=2048, ckpt=True, tag="public"),
  D(model="llama3.2-1b", mode="ddp_mp", B=8, S=2048, ckpt=False, tag="public"),
  D(model="llama3.2-1b", mode="ddp_mp", B=1, S=16384, ckpt=True, tag="public"),
  D(model="llama3.2-1b", mode="bf16", B=4, S=2048, ckpt=False, tag="public"),
  D(model="llama3.2-1b", mode="lora", B=4, S=2048, ckpt=False, tag="public"),
  D(model="llama3.2-3b", mode="ddp_mp", B=2, S=4096, ckpt=False, tag="public"),
  D(model="llama3.2-3b", mode="ddp_mp", B=2, S=4096, ckpt=True, tag="public"),
  # new (tag extra)
  D(model="llama3.2-3b", mode="lora", B=4, S=2048, ckpt=False),
  D(model="llama3.2-3b", mode="lora", B=8, S=4096, ckpt=True),
  D(model="llama3-8b", mode="lora", B=2, S=4096, ckpt=False),
  D(model="llama3-8b", mode="lora", B=4, S=4096, ckpt=True),
  D(model="llama3-8b", mode="bf16", B=1, S=4096, ckpt=False),
  D(model="llama3-8b", mode="bf16", B=4, S=4096, ckpt=True),
  D(model="qwen2.5-1.5b", mode="ddp_mp", B=4, S=2048, ckpt=False),
  D(model="qwen2.5-1.5b", mode="ddp_mp", B=4, S=2048, ckpt=True),
  D(model="qwen2.5-1.5b", mode="bf16", B=4, S=2048, ckpt=False),
  D(model="qwen2.5-1.5b", mode="lora", B=4, S=2048, ckpt=False),
  D(model="llama3.2-1b", mode="ddp_mp", B=2, S=4096, ckpt=False),
  D(model="llama3.2-1b", mode="ddp_mp", B=16, S=1024, ckpt=True),
  D(model="llama3.2-1b", mode="bf16", B=4, S=2048, ckpt=True),
  D(model="llama3.2-1b", mode="bf16", B=1, S=8192, ckpt=False),
  D(model="llama3.2-1b", mode="lora", B=4, S=2048, ckpt=True),
  D(model="llama3.2-3b", mode="bf16", B=4, S=2048, ckpt=False),
  D(model="llama3.2-3b", mode="bf16", B=4, S=4096, ckpt=True),
  D(model="llama3.2-3b", mode="ddp_mp", B=1, S=8192, ckpt=True),
  D(model="llama3.2-3b", mode="ddp_mp", B=4, S=1024, ckpt=False),
  D(model="qwen2.5-0.5b", mode="bf16", B=8, S=2048, ckpt=False),
  # swift-run side by side (benchmarks/runtime/side_by_side.py): pure bf16 8B, full checkpointing
  D(model="llama3-8b", mode="bf16", B=1, S=4096, ckpt=True),
  # probes (tag probe, not yet measured): configurations whose peak is predicted away from the
  # loss head (optimizer step, end of backward, layer backward) -- run with argv[3] = tag=probe
  D(model="llama3.2-1b", mode="ddp_mp", B=1, S=512, ckpt=False, tag="probe"),
  D(model="llama3-8b", mode="bf16", B=1, S=1024, ckpt=True, tag="probe"),
  D(model="llama3.2-3b", mode="lora", B=1, S=1024, ckpt=False, tag="probe"),
 ],
 2: [
  D(model="llama3.2-1b", mode="fsdp", B=1, S=512, ckpt=False, reshard=True, tag="probe"),
  D(model="llama3.2-3b", mode="fsdp", B=2, S=4096, ckpt=True, tag="public"),
  D(model="llama3.2-3b", mode="fsdp", B=2, S=4096, ckpt=False, tag="public"),
  D(model="llama3.2-1b", mode="fsdp", B=4, S=2048, ckpt=False, reshard=True),
  D(model="llama3.2-1b", mode="fsdp", B=4, S=2048, ckpt=False, reshard=False),
  D(model="qwen2.5-1.5b", mode="fsdp", B=4, S=2048, ckpt=True, reshard=False),
  D(model="llama3.2-1b", mode="fsdp", B=4, S=2048, ckpt=True, offload=True, steps=3),
  D(model="llama3.2-3b", mode="fsdp", B=2, S=4096, ckpt=True, offload=True, steps=3),
 ],
 4: [
  D(model="llama3.2-3b", mode="fsdp", B=2, S=4096, ckpt=False, reshard=True),
  D(model="llama3.2-3b", mode="fsdp", B=2, S=4096, ckpt=True, reshard=False),
  D(model="llama3-8b", mode="fsdp", B=2, S=4096, ckpt=True, reshard=True),
  D(model="llama3-8b", mode="fsdp", B=1, S=4096, ckpt=False, reshard=False),
  D(model="llama3.2-3b", mode="fsdp", B=4, S=2048, ckpt=False, offload=True, steps=3),
 ],
 8: [
  D(model="llama3-8b", mode="fsdp", B=1, S=512, ckpt=False, reshard=True, tag="probe"),
  D(model="llama3-8b", mode="fsdp", B=1, S=1024, ckpt=True, reshard=False, tag="probe"),
  D(model="llama3-8b", mode="fsdp", B=2, S=4096, ckpt=False, reshard=True),
  D(model="llama3-8b", mode="fsdp", B=4, S=4096, ckpt=True, reshard=False),
  D(model="llama3.2-1b", mode="fsdp", B=4, S=2048, ckpt=True, reshard=True),
 ],
}

def main():
    import transformers
    print(json.dumps(dict(env=1, torch=torch.__version__, transformers=transformers.__version__,
                          gpu=torch.cuda.get_device_name(0), world=WORLD)), flush=True)
    if WORLD > 1:
        from torch.testing._internal.distributed.fake_pg import FakeStore
        dist.init_process_group("fake", store=FakeStore(), rank=0, world_size=WORLD)
    torch.cuda.set_device(0)
    with open(OUT, "a") as f:
        for c in CASES[WORLD]:
            key = f'{c["model"]}/{c["mode"]}'
            if FILT.startswith("tag="):
                if c.get("tag") != FILT[4:]:
                    continue
            elif FILT == "new":
                if c.get("tag") in ("public", "probe"):
                    continue
            elif FILT and FILT not in key:
                continue
            if time.time() > DEADLINE:
                print("deadline, skipping", c, flush=True); continue
            try:
                r = run_case(c)
            except Exception as e:
                r = dict(c, world=WORLD, error=repr(e)[:500]); traceback.print_exc()
                gc.collect(); torch.cuda.empty_cache()
            print(json.dumps(r), flush=True)
            f.write(json.dumps(r) + "\n"); f.flush()

if __name__ == "__main__":
    main()
