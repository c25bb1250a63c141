#!/usr/bin/env bash
# FP8 against bf16 on real text, on one H200, in one call of the device tool
# (about 5-6 minutes): Llama-3.1-8B B1 S4096 without checkpointing, the
# fp8-bf16 plan (FP8 GEMMs in the decoder linears, otherwise pure bf16)
# against the bf16 plan, 300 steps each from the same random initial weights
# (the plans' seed) on the same byte-level JSONL text (fp8_loss_curve.py data:
# the installed torch/transformers sources), AdamW lr 3e-4, warmup 30, cosine
# to 10%, clipping 1.0 (the two jobs of side_by_side.py). Prints the mean loss
# of the last 20 steps of each, their relative difference (target: within
# 1%), and the median tokens/s of each.
# Usage (repo root, on the device): benchmarks/runtime/fp8_loss_curve.sh OUTDIR
# OUTDIR gets: build.log, data.txt, per seed fp8-sN.log, bf16-sN.log and
# their -metrics.jsonl, summary.txt (+ summary.json).
# FLC_SEEDS ("0"; e.g. "0 1 2": a pair of runs per seed), FLC_STEPS (300),
# FLC_FP8 / FLC_BF16 (the two configurations of
# side_by_side.py), FLC_BUDGET_S (570: seconds after which nothing new
# starts; each run gets its share).
set -uo pipefail
OUT=${1:-/tmp/fp8-loss}
mkdir -p "$OUT"
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 PYTHONUNBUFFERED=1
HERE=benchmarks/runtime
STEPS=${FLC_STEPS:-300}
FP8=${FLC_FP8:-llama3.1-8b-fp8-B1-S4096-none}
BF16=${FLC_BF16:-llama3.1-8b-bf16-B1-S4096-none}
DEADLINE=$(( $(date +%s) + ${FLC_BUDGET_S:-570} ))
left() { echo $(( DEADLINE - $(date +%s) )); }
PREFIX=$(python3 -c 'import torch;print(torch.utils.cmake_prefix_path)')
build() {
  cmake -G Ninja -S . -B build-gpu -DSWIFT_BUILD_COMPILER=OFF -DSWIFT_BUILD_TESTS=OFF \
    -DCMAKE_PREFIX_PATH="$PREFIX" -DCMAKE_CUDA_ARCHITECTURES=90 "$@" &&
    ninja -C build-gpu swift-run
}
T0=$SECONDS
if ! build >"$OUT/build.log" 2>&1; then
  # FP8 needs the CUDA kernels build; say so rather than measure without them
  tail -40 "$OUT/build.log"; echo "build failed"; exit 1
fi
echo "build: $((SECONDS - T0)) s"
nvidia-smi --query-gpu=name,memory.total,clocks.sm --format=csv,noheader | tee -a "$OUT/build.log"

PLANS=/tmp/flc-plans DATA=/tmp/flc/data.jsonl
rm -rf $PLANS && mkdir -p /tmp/flc
python3 $HERE/side_by_side.py plans $PLANS >/dev/null 2>>"$OUT/data.txt"
runs=()
for cfg in $FP8 $BF16; do
  if [[ -f $PLANS/$cfg.json ]]; then runs+=("$cfg")
  else echo "$cfg: no plan (make_plans.sh writes benchmarks/runtime/plans/$cfg.json): skipped" |
    tee -a "$OUT/data.txt"; fi
done
[[ ${#runs[@]} -gt 0 ]] || exit 1
python3 - "${runs[@]/#/$PLANS/}" <<'PY' | tee -a "$OUT/data.txt"
import json, sys
# Both runs must read the same windows: same S and global batch.
ts = [json.load(open(p + ".json"))["training"] for p in sys.argv[1:]]
for p, t in zip(sys.argv[1:], ts):
    print(p, {k: t.get(k) for k in ("precision", "sequence_length", "global_batch_size",
                                     "optimizer", "lr_schedule", "max_grad_norm", "seed")})
assert len({(t["sequence_length"], t["global_batch_size"], t.get("seed", 0)) for t in ts}) == 1, \
    "the two plans differ in S, batch or seed"
PY
T0=$SECONDS
python3 $HERE/fp8_loss_curve.py data $DATA --plan "$PLANS/${runs[0]}.json" --steps $STEPS \
  2>&1 | tee -a "$OUT/data.txt" || exit 1
echo "data: $((SECONDS - T0)) s"

# Paired runs: for each seed (the plans' training.seed: the initial weights)
# both precisions, same data. One pair cannot separate FP8 from the
# run-to-run spread of CUDA (not bit-deterministic; three bf16 runs of seed
# 0 ended 3.4% apart): FLC_SEEDS="0 1 2" runs more pairs.
SEEDS=${FLC_SEEDS:-0}
n=$(( ${#runs[@]} * $(echo $SEEDS | wc -w) ))
for seed in $SEEDS; do
  for cfg in "${runs[@]}"; do
    label=bf16; [[ $cfg == "$FP8" ]] && label=fp8
    lim=$(( ($(left) - 15) / n )); n=$((n - 1))
    (( lim > 400 )) && lim=400
    if (( lim < 60 )); then echo "$label seed $seed: skipped, $(left) s left"; continue; fi
    echo "== $label: $cfg, seed $seed, $STEPS steps (limit $lim s)"
    T0=$SECONDS
    plan=/tmp/flc/$cfg-s$seed.json
    python3 -c "
import json, sys
p = json.load(open('$PLANS/$cfg.json')); p['training']['seed'] = $seed
json.dump(p, open('$plan', 'w'), indent=1)"
    m="$OUT/$label-s$seed-metrics.jsonl"
    rm -f "$m"
    timeout $lim build-gpu/bin/swift-run $plan --device cuda --steps $STEPS \
      --data $DATA --metrics "$m" >"$OUT/$label-s$seed.log" 2>&1 ||
      echo "   exit $? (see $label-s$seed.log)"
    grep -m1 'model states' "$OUT/$label-s$seed.log"
    tail -2 "$OUT/$label-s$seed.log"
    echo "$label seed $seed: $((SECONDS - T0)) s"
  done
done
first=$(echo $SEEDS | awk '{print $1}')
python3 $HERE/fp8_loss_curve.py report "$OUT/fp8-s$first-metrics.jsonl" \
  "$OUT/bf16-s$first-metrics.jsonl" --json "$OUT/summary.json" | tee "$OUT/summary.txt"
python3 $HERE/fp8_loss_curve.py seeds "$OUT" | tee -a "$OUT/summary.txt"
