#!/usr/bin/env bash
# Issue 13 item 7 on the H200 (device machine), after h200.sh built build-gpu:
# Llama-3.1-8B-shaped random weights written by transformers (bf16
# safetensors, 4 shards + index), then with swift-run
#   A: load, train 10 steps on SFT-shaped JSONL (packed), save a checkpoint
#   B: resume it, train steps 11-20, export an HF model (bf16)
#   C: the same 20 steps straight (B's steps must equal C's)
#   D: transformers loads B's export; its loss on 4 full windows next to
#      swift-run's first-step loss from the export on the same windows
# Prints each phase's wall time and host peak (VmHWM via GNU time), the
# load/save/export GB/s swift-run reports, and swift-plan's prediction.
# Weights and exports live in /dev/shm (the disk holds the 48 GB checkpoint).
# Usage (repo root, on the device): benchmarks/runtime/finetune/finetune_8b.sh OUTDIR
set -uo pipefail
OUT=${1:-/tmp/swift-8b}
W=${W:-/dev/shm/swift8b}
CK=${CK:-/root/ck8b}
mkdir -p "$OUT" "$W"
RUN=$PWD/build-gpu/bin/swift-run
PLAN=benchmarks/runtime/finetune/llama3.1-8b-h200.json
export NCCL_NVLS_ENABLE=0
t0=$(date +%s.%N)
python3 - "$W" <<'PY'
import json, os, random, sys, time
import torch
from transformers import LlamaConfig, LlamaForCausalLM
w = sys.argv[1]
cfg = LlamaConfig(hidden_size=4096, intermediate_size=14336, num_hidden_layers=32,
                  num_attention_heads=32, num_key_value_heads=8, vocab_size=128256,
                  max_position_embeddings=131072, rms_norm_eps=1e-5,
                  tie_word_embeddings=False, bos_token_id=128000, eos_token_id=128001)
rope = dict(rope_type="llama3", factor=8.0, low_freq_factor=1.0, high_freq_factor=4.0,
            original_max_position_embeddings=8192)
if hasattr(cfg, "rope_parameters"):
    cfg.rope_parameters = dict(rope_theta=500000.0, **rope)
else:
    cfg.rope_theta, cfg.rope_scaling = 500000.0, rope
torch.manual_seed(0)
t = time.time()
torch.set_default_dtype(torch.bfloat16)
with torch.device("cuda"):
    model = LlamaForCausalLM(cfg)
model.save_pretrained(f"{w}/model", max_shard_size="5GB")
print(f"transformers wrote {w}/model in {time.time() - t:.1f} s:",
      sorted(os.listdir(f"{w}/model")))
random.seed(0)
with open(f"{w}/sft.jsonl", "w") as f:  # prompt (not trained on) + answer
    for _ in range(600):
        n = random.randint(256, 4096)
        ids = [random.randrange(128256) for _ in range(n)]
        p = n // 4
        f.write(json.dumps({"input_ids": ids, "labels": [-100] * p + ids[p:]}) + "\n")
with open(f"{w}/full.jsonl", "w") as f:  # 4 full windows, every token trained
    for _ in range(4):
        f.write(json.dumps({"input_ids": [random.randrange(128256) for _ in range(4096)]}) + "\n")
PY
echo "weights and data made in $(python3 -c "print(round($(date +%s.%N)-$t0))") s"
phase() { # name args...: swift-run under GNU time
  local name=$1; shift
  local s=$(date +%s.%N)
  /usr/bin/time -v "$RUN" "$PLAN" --device cuda "$@" >"$OUT/$name.log" 2>"$OUT/$name.time"
  local rc=$? e=$(date +%s.%N)
  local rss=$(awk -F: '/Maximum resident/ {print $2}' "$OUT/$name.time")
  printf "== %s rc=%d %.1f s wall, host peak (VmHWM) %.0f MiB\n" "$name" $rc \
    "$(python3 -c "print($e-$s)")" "$(python3 -c "print($rss/1024)")"
  grep -E "swift-run: (loaded|saved|exported|resuming|mean)|^step (1|2|10|11|20)/|rror" "$OUT/$name.log" | grep -v "^step 1[2-9]"
  [[ $rc == 0 ]] || tail -5 "$OUT/$name.log" "$OUT/$name.time"
}
rm -rf "$CK"
phase A --weights "$W/model" --data "$W/sft.jsonl" --steps 10 --save-dir "$CK" --metrics "$OUT/A.jsonl"
du -sh "$CK"/step-*; ls "$CK"; cat "$CK/latest"
phase B --resume "$CK" --data "$W/sft.jsonl" --steps 20 --export-hf "$W/export" --metrics "$OUT/B.jsonl"
rm -rf "$CK"
phase C --weights "$W/model" --data "$W/sft.jsonl" --steps 20 --metrics "$OUT/C.jsonl"
ls -la "$W/export"; cp "$W/export/config.json" "$W/export/model.safetensors.index.json" "$OUT/" 2>/dev/null
phase D --weights "$W/export" --data "$W/full.jsonl" --steps 1 --metrics "$OUT/D.jsonl"
python3 - "$OUT" "$W" "$PLAN" <<'PY'
import json, sys, time
import torch
out, w, plan = sys.argv[1:4]
m = lambda n: [json.loads(l) for l in open(f"{out}/{n}.jsonl")]
try:
    a, b, c = m("A"), m("B"), m("C")
    print("A losses", [round(r["loss"], 5) for r in a])
    print("B losses", [round(r["loss"], 5) for r in b])
    print("C losses", [round(r["loss"], 5) for r in c])
    d = max(abs(x["loss"] - y["loss"]) for x, y in zip(a + b, c))
    print(f"resumed (A then B) vs straight (C): max |dloss| over {len(c)} steps {d:.3e}")
    print("lr", [round(r["lr"], 8) for r in c])
    print("grad_norm", [round(r["grad_norm"], 4) for r in c])
    pr = json.load(open(plan))["predicted"]
    steps = [r["step_seconds"] for r in c[1:]]
    peak = max(r["peak_memory_bytes"] for r in c)
    print(f"swift-plan predicted: peak {pr['peak_memory_bytes']/2**30:.2f} GiB, step {pr['step_seconds']:.3f} s;"
          f" measured: peak {peak/2**30:.2f} GiB, median step {sorted(steps)[len(steps)//2]:.3f} s,"
          f" median real tok/s {sorted(r['tokens_per_second'] for r in c[1:])[len(steps)//2]:,.0f}")
except Exception as e:
    print("metrics incomplete:", e)
from transformers import AutoModelForCausalLM
t = time.time()
model = AutoModelForCausalLM.from_pretrained(f"{w}/export", dtype=torch.bfloat16, device_map="cuda")
print(f"transformers loaded the export in {time.time() - t:.1f} s")
rows = [json.loads(l)["input_ids"] for l in open(f"{w}/full.jsonl")]
total, count = 0.0, 0
with torch.no_grad():
    for ids in rows:
        x = torch.tensor([ids], device="cuda")
        total += model(input_ids=x, labels=x).loss.float().item() * (len(ids) - 1)
        count += len(ids) - 1
hf = total / count
sw = m("D")[0]["loss"]
print(f"loss on 4 full windows: transformers {hf:.5f}, swift-run {sw:.5f}, relative diff {abs(hf - sw) / hf:.2e}")
PY
