#!/usr/bin/env bash
# swift-run vs HF transformers eager on one H200, in one call of the device
# tool: builds swift-run runtime-only, checks the fused kernels against their
# op chains, runs every configuration of side_by_side.py with swift-run and
# with hf_baseline.py, and prints tokens/s, peak memory and MFU side by side.
# Usage (repo root, on the device): benchmarks/runtime/side_by_side.sh OUTDIR
# OUTDIR gets (8 files at most, for the device tool): build.log, kernels.txt,
# swift.log, swift-metrics.jsonl, hf.log, hf.jsonl, results.jsonl, table.txt.
# SBS_SKIP_HF=1 skips the HF side; SBS_ONLY=SUBSTR runs matching configs only;
# SBS_TRACE=1 also traces one step of each configuration (swift-run --trace)
# and writes where its GPU time goes to traces.txt (trace_summary.py).
# SBS_CLOCKS=1 samples the SM clock and power draw (gpu_clocks.py) and writes
# each run's median busy clock and power to clocks.txt.
set -uo pipefail
OUT=${1:-/tmp/swift-sbs}
mkdir -p "$OUT"
export NCCL_NVLS_ENABLE=0 PYTHONUNBUFFERED=1
HERE=benchmarks/runtime
PREFIX=$(python3 -c 'import torch;print(torch.utils.cmake_prefix_path)')
build() {
  cmake -G Ninja -S . -B build-gpu -DSWIFT_BUILD_COMPILER=OFF -DSWIFT_BUILD_TESTS=OFF \
    -DCMAKE_PREFIX_PATH="$PREFIX" -DCMAKE_CUDA_ARCHITECTURES=90 "$@" &&
    ninja -C build-gpu swift-run swift-kernel-check
}
T0=$SECONDS
if ! build >"$OUT/build.log" 2>&1; then
  # Never lose the call to a kernel build problem: measure without them.
  echo "== build with kernels failed; building without (see build.log)" | tee -a "$OUT/build.log"
  rm -rf build-gpu
  build -DSWIFT_CUDA_KERNELS=OFF >>"$OUT/build.log" 2>&1 || { tail -40 "$OUT/build.log"; exit 1; }
fi
echo "build: $((SECONDS - T0)) s"
nvidia-smi --query-gpu=name,memory.total,clocks.sm --format=csv,noheader | tee -a "$OUT/build.log"
timeout 120 build-gpu/bin/swift-kernel-check cuda 2>&1 | tee "$OUT/kernels.txt"

CLK=/tmp/sbs-clocks
mark() { [[ -n ${SBS_CLOCKS:-} ]] && python3 $HERE/gpu_clocks.py mark $CLK/phases.tsv "$@"; }
if [[ -n ${SBS_CLOCKS:-} ]]; then
  rm -rf $CLK && mkdir -p $CLK
  python3 $HERE/gpu_clocks.py sample $CLK/samples.csv & SAMPLER=$!
  trap 'kill $SAMPLER 2>/dev/null' EXIT
  export SBS_PHASES=$CLK/phases.tsv # run_hf marks its configurations
fi
PLANS=/tmp/sbs-plans
python3 $HERE/side_by_side.py plans $PLANS >/dev/null
STEPS=${SBS_STEPS:-6}
swift() { # config [VAR=value...]: one swift-run, its metrics tagged with the config
  local cfg=$1 tag=$1; shift
  [[ $# -gt 0 ]] && tag="$cfg/$(echo "$@" | tr ' ' ',')"
  [[ -n ${SBS_ONLY:-} && $cfg != *${SBS_ONLY}* ]] && return
  echo "== swift-run $tag" | tee -a "$OUT/swift.log"
  rm -f /tmp/sbs-m.jsonl
  mark "swift $tag" start
  env "$@" timeout 300 build-gpu/bin/swift-run $PLANS/$cfg.json --device cuda --steps $STEPS \
    --metrics /tmp/sbs-m.jsonl >>"$OUT/swift.log" 2>&1 || echo "   exit $?" | tee -a "$OUT/swift.log"
  mark "swift $tag" end
  tail -1 "$OUT/swift.log"
  [[ -f /tmp/sbs-m.jsonl ]] && python3 -c "
import json, sys
for l in open('/tmp/sbs-m.jsonl'):
    r = json.loads(l); r['config'] = sys.argv[1]; print(json.dumps(r))" "$tag" >>"$OUT/swift-metrics.jsonl"
}
T0=$SECONDS
swift llama3.2-1b-B4-S2048
swift llama3.2-3b-B2-S4096-full
swift qwen2.5-0.5b-B4-S2048
swift llama3.1-8b-bf16-B1-S4096-full
# checkpointing chosen by swift-plan, against the checkpointed HF baselines
swift llama3.2-3b-B2-S4096-planned
swift llama3.1-8b-bf16-B1-S4096-planned
echo "swift-run: $((SECONDS - T0)) s"
if [[ -z ${SBS_SKIP_HF:-} ]]; then
  T0=$SECONDS
  timeout ${SBS_HF_TIMEOUT:-300} python3 $HERE/side_by_side.py hf "$OUT/hf.jsonl" >"$OUT/hf.log" 2>&1 ||
    echo "hf: exit $?"
  grep '^{"config"' "$OUT/hf.log"
  echo "hf: $((SECONDS - T0)) s"
fi
python3 $HERE/side_by_side.py table "$OUT" | tee "$OUT/table.txt"
clocks() {
  [[ -n ${SBS_CLOCKS:-} ]] && python3 $HERE/gpu_clocks.py summary $CLK/samples.csv $CLK/phases.tsv |
    tee "$OUT/clocks.txt"
}
clocks
if [[ -n ${SBS_TRACE:-} ]]; then
  for cfg in llama3.2-1b-B4-S2048 llama3.2-3b-B2-S4096-full qwen2.5-0.5b-B4-S2048 \
             llama3.1-8b-bf16-B1-S4096-full; do
    [[ -n ${SBS_ONLY:-} && $cfg != *${SBS_ONLY}* ]] && continue
    timeout 300 build-gpu/bin/swift-run $PLANS/$cfg.json --device cuda --steps 3 \
      --trace /tmp/trace-$cfg.json >/dev/null 2>>"$OUT/swift.log" || echo "trace $cfg: exit $?"
    { echo "== $cfg"; python3 $HERE/trace_summary.py /tmp/trace-$cfg.json --top 30; } >>"$OUT/traces.txt" 2>&1
  done
  grep -A12 '^==' "$OUT/traces.txt"
fi
[[ -n ${SBS_NO_VARIANTS:-} ]] && exit 0
# The variants come last: a call cut short still printed the main table.
# Each optimization's effect on the 1B: one fused op off at a time (see
# runtime/include/swift/Runtime/Kernels.h), all off, all off with the old
# unchunked loss (fp32 logits); then the main run again (run-to-run spread).
# SBS_QUICK=1: only the elementwise kernels' switches and the repeat.
T0=$SECONDS
if [[ -n ${SBS_QUICK:-} ]]; then
  for off in -sink -norm -swiglu -rope; do swift llama3.2-1b-B4-S2048 SWIFT_KERNELS=$off; done
  swift llama3.1-8b-bf16-B1-S4096-full SWIFT_KERNELS=-sink
else
  for off in -sink -adamw -loss -norm -swiglu -rope; do swift llama3.2-1b-B4-S2048 SWIFT_KERNELS=$off; done
  swift llama3.2-1b-B4-S2048 SWIFT_SDPA_EXPAND=1
  swift llama3.2-1b-B4-S2048 SWIFT_KERNELS=0
  swift llama3.2-1b-B4-S2048 SWIFT_KERNELS=0 SWIFT_LOSS=full
  swift llama3.1-8b-bf16-B1-S4096-full SWIFT_KERNELS=-adamw
fi
swift llama3.2-1b-B4-S2048 SBS_REPEAT=1
echo "swift-run variants: $((SECONDS - T0)) s"
python3 $HERE/side_by_side.py table "$OUT" | tee "$OUT/table.txt"
clocks
