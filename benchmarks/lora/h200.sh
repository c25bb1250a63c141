#!/usr/bin/env bash
# Issue 14's measurements on one H200, in one device call:
#   bash benchmarks/lora/h200.sh OUT [PART...]
# builds swift-run (benchmarks/build_gpu.sh), checks the CUDA kernels against
# their op chains, runs the three plans of benchmarks/lora/plans (LoRA B4
# side by side with HF + peft; LoRA and QLoRA B1 with full checkpointing),
# checks that peft loads swift-run's exported adapter, and measures host
# memory under offload (benchmarks/runtime/host). Writes OUT/lora.tar.gz.
# PART (kernels, 8b, peft, host, trace; default all but trace) runs a part only, to split
# the work over device calls of 10 minutes.
set -uo pipefail
OUT=${1:?OUT}
shift
PARTS=${*:-kernels 8b peft host}
want() { [[ " $PARTS " == *" $1 "* ]]; }
cd "$(dirname "$0")/../.."
mkdir -p "$OUT/lora"
bash benchmarks/build_gpu.sh "$OUT/lora" || exit 1
step() { echo "== $*"; "$@" 2>&1 | tee -a "$OUT/lora/log.txt" | tail -4; }
want kernels && step build-gpu/bin/swift-kernel-check
if want 8b; then
  for plan in benchmarks/lora/plans/llama3.1-8b-*.json; do
    step python3 benchmarks/lora/side_by_side.py "$OUT/lora" "$plan"
  done
fi
want peft && step python3 benchmarks/lora/peft_loads.py "$OUT/lora/peft"
want host && step python3 benchmarks/runtime/host/host_memory.py "$OUT/lora/host"
if want trace; then  # where the LoRA B4 step's GPU time goes
  step build-gpu/bin/swift-run benchmarks/lora/plans/llama3.1-8b-lora-B4-S2048-none.json \
    --device cuda --steps 3 --trace "$OUT/lora/trace.json"
  python3 benchmarks/runtime/trace_summary.py "$OUT/lora/trace.json" --top 40 |
    tee "$OUT/lora/trace.txt"
  gzip "$OUT/lora/trace.json"
fi
tar czf "$OUT/lora.tar.gz" --exclude="*.safetensors" -C "$OUT" lora && rm -rf "$OUT/lora"
