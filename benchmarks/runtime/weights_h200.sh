#!/usr/bin/env bash
# HF weights in and out of swift-run on the H200 (device machine), after
# h200.sh built build-gpu: the 1B plan's random initial weights exported
# (bf16 safetensors), loaded back, trained 4 steps, exported again; each
# phase's wall time, GB/s and the rank's peak host memory (VmHWM, from
# /usr/bin/time) are printed; transformers then loads the export.
# Usage (repo root, on the device): benchmarks/runtime/weights_h200.sh OUTDIR
set -uo pipefail
OUT=${1:-/tmp/swift-weights}
mkdir -p "$OUT"
RUN=build-gpu/bin/swift-run
PLAN=examples/plans/llama3.2-1b-h200.json
export NCCL_NVLS_ENABLE=0
phase() { # name args...: runs swift-run under GNU time
  local name=$1; shift
  local t0=$(date +%s.%N)
  /usr/bin/time -v $RUN "$PLAN" --device cuda "$@" >"$OUT/$name.log" 2>"$OUT/$name.time"
  local rc=$? t1=$(date +%s.%N)
  local rss=$(awk -F: '/Maximum resident/ {print $2}' "$OUT/$name.time")
  printf "%-10s rc=%d %6.1f s  peak host RSS %6.0f MiB\n" "$name" $rc \
    "$(python3 -c "print($t1-$t0)")" "$(python3 -c "print($rss/1024)")"
  tail -3 "$OUT/$name.log"
}
phase init --steps 0 --export-hf "$OUT/init"
du -sh "$OUT/init"
phase load --steps 4 --weights "$OUT/init" --export-hf "$OUT/trained" --metrics "$OUT/load.jsonl"
phase seed --steps 4 --metrics "$OUT/seed.jsonl"
python3 - "$OUT" <<'PY'
import json, sys, time, torch
out = sys.argv[1]
loss = lambda f: [json.loads(l)["loss"] for l in open(f)]
print("losses from the seed  ", loss(out + "/seed.jsonl"))
print("losses from the export", loss(out + "/load.jsonl"))
from transformers import AutoModelForCausalLM
t0 = time.time()
m = AutoModelForCausalLM.from_pretrained(out + "/trained", torch_dtype=torch.bfloat16).cuda()
print("transformers loaded the export in %.1f s: %d parameters" % (time.time() - t0, sum(p.numel() for p in m.parameters())))
ids = torch.randint(0, m.config.vocab_size, (1, 128), device="cuda")
print("transformers loss on random tokens: %.4f" % m(ids, labels=ids).loss.item())
PY
