#!/usr/bin/env bash
# Packed JSONL windows on the H200 (device machine), after h200.sh built
# build-gpu: the Llama-3.2-1B plan (B4 x 2 accumulation, S2048) on
# synthetic full windows (unpacked causal flash), on SFT-shaped JSONL samples
# packed (FlashAttention varlen, the default on CUDA) and packed through the
# block-diagonal mask (SWIFT_ATTENTION=mask, the memory-efficient SDPA
# backend), and padded one sample per window. Prints tokens/s (real tokens)
# and peak memory of each, and the packed losses both ways.
# Usage (repo root, on the device): benchmarks/runtime/packing_h200.sh OUTDIR
set -uo pipefail
OUT=${1:-/tmp/swift-packing}
mkdir -p "$OUT"
RUN=build-gpu/bin/swift-run
PLAN=examples/plans/llama3.2-1b-h200.json
python3 - "$OUT/sft.jsonl" <<'PY'
import json, random, sys
random.seed(0)
with open(sys.argv[1], "w") as f:
    for _ in range(2000):  # prompt (not trained on) + answer, 64..2048 tokens
        n = random.randint(64, 2048)
        ids = [random.randrange(128256) for _ in range(n)]
        p = n // 4
        f.write(json.dumps({"input_ids": ids, "labels": [-100] * p + ids[p:]}) + "\n")
PY
python3 - "$PLAN" "$OUT/padded.json" <<'PY'
import json, sys
p = json.load(open(sys.argv[1])); p["training"]["packing"] = False
json.dump(p, open(sys.argv[2], "w"))
PY
one() { # name plan VAR=value args...
  local name=$1 plan=$2 var=$3; shift 3
  env "$var" $RUN "$plan" --device cuda --steps 8 --metrics "$OUT/$name.jsonl" "$@" \
    >"$OUT/$name.log" 2>&1 || { echo "$name failed:"; tail -5 "$OUT/$name.log"; }
}
one synthetic "$PLAN" X=1
one packed-varlen "$PLAN" X=1 --data "$OUT/sft.jsonl"
one packed-mask "$PLAN" SWIFT_ATTENTION=mask --data "$OUT/sft.jsonl"
one padded "$OUT/padded.json" X=1 --data "$OUT/sft.jsonl"
python3 - "$OUT" <<'PY'
import json, sys, statistics
out = sys.argv[1]
rows = {}
for name in ["synthetic", "packed-varlen", "packed-mask", "padded"]:
    try:
        m = [json.loads(l) for l in open(f"{out}/{name}.jsonl")]
    except FileNotFoundError:
        print(f"{name:14} no metrics"); continue
    rows[name] = m
    tps = statistics.median(r["tokens_per_second"] for r in m[1:])
    print(f"{name:14} {tps:9,.0f} real tok/s  step {statistics.median(r['step_seconds'] for r in m[1:]):.3f} s"
          f"  peak {max(r['peak_memory_bytes'] for r in m) / 2**30:6.2f} GiB"
          f"  tokens/step {m[1]['tokens']}  losses {[round(r['loss'], 4) for r in m[:3]]}")
if "packed-varlen" in rows and "packed-mask" in rows:
    d = max(abs(a["loss"] - b["loss"]) for a, b in zip(rows["packed-varlen"], rows["packed-mask"]))
    print(f"packed varlen vs mask: max |dloss| over {len(rows['packed-mask'])} steps {d:.2e}")
PY
