#!/usr/bin/env bash
# Usage: scripts/compare_losses.sh OLD_SWIFT_RUN NEW_SWIFT_RUN [OUTDIR]
#
# Runs one matrix of CPU training runs with two swift-run binaries (e.g. one
# built from main before a runtime change, one after) and compares their
# per-step losses and gradient norms bit for bit (the --metrics JSONL; nlohmann
# writes doubles so they read back exactly). The matrix is the runtime tests'
# tiny Llama (test/Runtime/RunPlan.h tinyPlan: GQA, biases, q/k norm, tied
# embeddings, fp32) at world 1/2/4 (swift-run --nproc-per-node N), ZeRO 0-3,
# gradient accumulation 1/3, plus at some of those points: offload optimizer
# and optimizer+params, checkpointing selective/full, LoRA, QLoRA, packed and
# padded JSONL data, bf16-mixed and pure bf16, clipping with a cosine lr
# schedule, untied embeddings. Every plan's schedule is the derived one.
#
# Prints one line per case ("identical" or what differs) and a summary;
# exits 1 when any case differs or fails with either binary. OUTDIR (default:
# a fresh temporary directory) keeps each case's plan, outputs and metrics.
set -euo pipefail

if [[ $# -lt 2 || $# -gt 3 ]]; then
  echo "usage: $0 OLD_SWIFT_RUN NEW_SWIFT_RUN [OUTDIR]" >&2
  exit 2
fi
OLD=$(realpath "$1")
NEW=$(realpath "$2")
for b in "$OLD" "$NEW"; do
  [[ -x $b ]] || { echo "$0: $b: not an executable" >&2; exit 2; }
done
OUT=${3:-$(mktemp -d -t swift-compare-XXXXXX)}
mkdir -p "$OUT"
OUT=$(realpath "$OUT")
STEPS=${STEPS:-3}

# The cases: OUT/cases/NAME/{plan.json,args}.
python3 - "$OUT" <<'EOF'
import copy, json, os, random, sys

out = sys.argv[1]

def tiny(zero, world, accumulation=1):
    # test/Runtime/RunPlan.h tinyPlan, with a free gradient accumulation.
    return {
        "schema": "swift.plan", "version": 1,
        "model": {"hidden_size": 64, "intermediate_size": 128,
                  "num_hidden_layers": 2, "num_attention_heads": 4,
                  "num_key_value_heads": 2, "head_dim": 16,
                  "vocab_size": 256, "tie_word_embeddings": True,
                  "rms_norm_eps": 1e-5, "rope_theta": 10000.0,
                  "attention_qkv_bias": True, "attention_o_bias": True,
                  "qk_norm": True},
        "training": {"sequence_length": 32,
                     "global_batch_size": 2 * world * accumulation,
                     "micro_batch_size": 2,
                     "gradient_accumulation": accumulation,
                     "precision": "fp32",
                     "optimizer": {"lr": 1e-3, "betas": [0.9, 0.95],
                                   "eps": 1e-8, "weight_decay": 0.1},
                     "seed": 1234},
        "world": {"size": world, "gpus_per_node": world},
        "strategy": {"zero": zero, "offload": "none",
                     "checkpointing": "none", "bucket_bytes": 40000,
                     "prefetch_depth": 1},
    }

def lora(p, method="lora"):
    p["training"]["method"] = method
    p["training"]["lora"] = {"rank": 4, "alpha": 8.0, "dropout": 0.0,
                             "targets": ["q_proj", "k_proj", "v_proj",
                                         "o_proj", "gate_proj", "up_proj",
                                         "down_proj"]}
    return p

# JSONL token ids (as test/Runtime/DataTest.cpp pairedSamples): pairs of
# samples filling a window of 32.
rng = random.Random(7)
data = os.path.join(out, "data.jsonl")
with open(data, "w") as f:
    for _ in range(24):
        a = rng.randint(5, 27)
        b = 32 - a - rng.randint(0, 2)
        for n in (a, b):
            f.write(json.dumps({"input_ids": [rng.randint(0, 255)
                                              for _ in range(n)]}) + "\n")

cases = []
def case(name, plan, args=""):
    cases.append((name, plan, args))

for world in (1, 2, 4):
    for zero in range(4):
        for g in (1, 3):
            case(f"w{world}-z{zero}-g{g}", tiny(zero, world, g))
for zero, offload in ((1, "optimizer"), (2, "optimizer"), (3, "optimizer"),
                      (3, "optimizer+params")):
    p = tiny(zero, 2, 3)
    p["strategy"]["offload"] = offload
    case(f"w2-z{zero}-g3-offload-{offload.replace('+', '-')}", p)
for zero, world, mode, first in ((0, 1, "selective", -1), (0, 2, "full", -1),
                                 (2, 2, "selective", 1), (3, 2, "full", 1),
                                 (3, 4, "full", -1)):
    p = tiny(zero, world, 3)
    p["strategy"]["checkpointing"] = mode
    p["strategy"]["checkpoint_layers"] = first
    case(f"w{world}-z{zero}-g3-ckpt-{mode}-{first}", p)
for method, zero, world, offload, ckpt in (
        ("lora", 0, 1, "none", "none"), ("lora", 2, 2, "optimizer", "full"),
        ("lora", 3, 2, "none", "selective"), ("qlora", 0, 1, "none", "none"),
        ("qlora", 3, 2, "optimizer+params", "full")):
    p = lora(tiny(zero, world, 3), method)
    p["strategy"]["offload"] = offload
    p["strategy"]["checkpointing"] = ckpt
    case(f"w{world}-z{zero}-g3-{method}-{offload.replace('+', '-')}-{ckpt}", p)
for zero, world, g, packing in ((0, 1, 3, True), (2, 2, 3, True),
                                (3, 4, 1, True), (1, 2, 3, False)):
    p = tiny(zero, world, g)
    p["training"]["packing"] = packing
    case(f"w{world}-z{zero}-g{g}-jsonl-{'packed' if packing else 'padded'}",
         p, "--data " + data)
for precision, zero, world in (("bf16-mixed", 0, 1), ("bf16-mixed", 1, 2),
                               ("bf16", 3, 2)):
    case(f"w{world}-z{zero}-g3-{precision}",
         dict(tiny(zero, world, 3),
              training=dict(tiny(zero, world, 3)["training"],
                            precision=precision)))
p = tiny(2, 2, 3)
p["training"]["max_grad_norm"] = 0.05
p["training"]["lr_schedule"] = {"warmup_steps": 1, "decay": "cosine",
                                "min_lr_ratio": 0.1}
case("w2-z2-g3-clip-cosine", p)
p = tiny(3, 2, 3)
p["model"]["tie_word_embeddings"] = False
case("w2-z3-g3-untied", p)

for name, plan, args in cases:
    d = os.path.join(out, "cases", name)
    os.makedirs(d, exist_ok=True)
    with open(os.path.join(d, "plan.json"), "w") as f:
        json.dump(plan, f, indent=1)
    with open(os.path.join(d, "args"), "w") as f:
        f.write(f"--nproc-per-node {plan['world']['size']} {args}".strip())
EOF

# run BINARY CASE_DIR SIDE: the case's run into CASE_DIR/SIDE.
run() {
  local bin=$1 dir=$2 side=$3
  mkdir -p "$dir/$side"
  # shellcheck disable=SC2046 # args are words
  (cd "$dir/$side" &&
    SWIFT_CACHE_DIR="$OUT/cache-$side" timeout 300 "$bin" ../plan.json \
      --steps "$STEPS" --metrics metrics.jsonl $(cat ../args) \
      > out.txt 2>&1) || echo "exit $?" > "$dir/$side/failed"
}

total=0
same=0
for dir in "$OUT"/cases/*/; do
  dir=${dir%/}
  name=$(basename "$dir")
  rm -rf "$dir/old" "$dir/new"
  run "$OLD" "$dir" old
  run "$NEW" "$dir" new
  total=$((total + 1))
  verdict=$(python3 - "$dir" "$STEPS" <<'EOF'
import json, os, sys
d, steps = sys.argv[1], int(sys.argv[2])
def read(side):
    if os.path.exists(os.path.join(d, side, "failed")):
        return None
    rows = []
    with open(os.path.join(d, side, "metrics.jsonl")) as f:
        for line in f:
            m = json.loads(line)
            if "loss" in m:
                rows.append((m["step"], m["loss"], m["grad_norm"]))
    return rows
old, new = read("old"), read("new")
if old is None or new is None:
    print("FAILED (" + ", ".join(s for s, r in (("old", old), ("new", new))
                                 if r is None) + "; see out.txt)")
elif len(old) != steps or len(new) != steps:
    print(f"FAILED ({len(old)} / {len(new)} steps of {steps})")
elif old != new:
    (s, lo, go), (_, ln, gn) = next((a, b) for a, b in zip(old, new) if a != b)
    print(f"DIFFER at step {s}: loss {lo!r} vs {ln!r}, grad_norm {go!r} vs {gn!r}")
else:
    print("identical")
EOF
)
  [[ $verdict == identical ]] && same=$((same + 1))
  printf '%-44s %s\n' "$name" "$verdict"
done
echo "$same of $total cases identical (losses and grad norms of $STEPS steps, bit for bit); runs in $OUT"
[[ $same -eq $total ]]
