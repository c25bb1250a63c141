#!/usr/bin/env bash
# swift-run vs HF transformers eager and HF + torch.compile on one H200, in
# one call of the device tool: builds swift-run runtime-only, checks the fused
# kernels, runs the selected configurations of side_by_side.py with swift-run,
# then the HF ones with hf_baseline.py (eager, then compiled), and prints
# tokens/s, peak memory and MFU side by side.
# Usage (repo root, on the device): benchmarks/runtime/side_by_side.sh OUTDIR
# OUTDIR gets (8 files at most, for the device tool): build.log, kernels.txt,
# swift.log, swift-metrics.jsonl, hf.log, hf.jsonl (eager and compiled rows,
# hf_mode says which), results.jsonl, table.txt.
# SBS_ONLY=SUB[,SUB...] runs the configurations whose name holds one of the
# substrings (an FP8 one brings its bf16 twin); SBS_SKIP_HF=1 skips the HF
# side, SBS_SKIP_EAGER=1 its eager runs, SBS_SKIP_COMPILE=1 its compiled ones;
# SBS_HF_ONLY=SUB[,SUB...] runs the HF side of only those configurations;
# SBS_NO_VARIANTS=1 skips the per-kernel switches at the end; SBS_HF_TIMEOUT=S
# ends the HF side after S seconds at the latest.
# SBS_BUDGET_S (default 570): seconds from the start after which nothing new
# starts and a running HF case is killed, so that the table is written inside
# a 600 s device call; a configuration without a plan (the FP8 ones until
# make_plans.sh wrote theirs) is skipped with a message.
# SBS_TRACE=1 also traces one step of each configuration (swift-run --trace)
# and writes where its GPU time goes to traces.txt (trace_summary.py);
# SBS_TRACE=SUB[,SUB...] traces only the configurations holding a substring;
# SBS_GAPS=N lists each trace's N longest idle gaps.
# SBS_AB="VAR=value ...[;VAR=value ...]" runs each configuration again with
# each of those environments, right after the first (e.g.
# SWIFT_KERNELS=-overlap).
# SBS_NEED_KERNELS=1 stops when swift-run does not build with its kernels
# (else it measures without them).
# SBS_CLOCKS=1 samples the SM clock and power draw (gpu_clocks.py) and writes
# each run's median busy clock and power to clocks.txt.
set -uo pipefail
OUT=${1:-/tmp/swift-sbs}
mkdir -p "$OUT"
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 PYTHONUNBUFFERED=1
HERE=benchmarks/runtime
export SBS_DEADLINE=$(( $(date +%s) + ${SBS_BUDGET_S:-570} ))
left() { echo $(( SBS_DEADLINE - $(date +%s) )); }
PREFIX=$(python3 -c 'import torch;print(torch.utils.cmake_prefix_path)')
build() {
  cmake -G Ninja -S . -B build-gpu -DSWIFT_BUILD_COMPILER=OFF -DSWIFT_BUILD_TESTS=OFF \
    -DCMAKE_PREFIX_PATH="$PREFIX" -DCMAKE_CUDA_ARCHITECTURES=90 "$@" &&
    ninja -C build-gpu swift-run swift-kernel-check
}
T0=$SECONDS
if ! build >"$OUT/build.log" 2>&1; then
  # SBS_NEED_KERNELS=1: an A/B of the kernels themselves; stop here.
  [[ -n ${SBS_NEED_KERNELS:-} ]] && { grep -B2 -A12 -m3 'error' "$OUT/build.log"; exit 1; }
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
rm -rf $PLANS
python3 $HERE/side_by_side.py plans $PLANS >/dev/null  # names the plans it skips on stderr
CFGS=$(python3 $HERE/side_by_side.py names)            # SBS_ONLY's selection, in run order
echo "configurations: $(echo $CFGS)"
STEPS=${SBS_STEPS:-6}
swift() { # config [VAR=value...]: one swift-run, its metrics tagged with the config
  local cfg=$1 tag=$1; shift
  [[ $# -gt 0 ]] && tag="$cfg/$(echo "$@" | tr ' ' ',')"
  grep -qxF -- "$cfg" <<<"$CFGS" || return 0
  if [[ ! -f $PLANS/$cfg.json ]]; then
    echo "== swift-run $tag: no plan (make_plans.sh writes plans/$cfg.json): skipped" |
      tee -a "$OUT/swift.log"
    return 0
  fi
  local lim=$(( $(left) - 20 ))
  (( lim > 300 )) && lim=300
  if (( lim < 30 )); then
    echo "== swift-run $tag: skipped, $(left) s of the budget left" | tee -a "$OUT/swift.log"
    return 0
  fi
  echo "== swift-run $tag" | tee -a "$OUT/swift.log"
  rm -f /tmp/sbs-m.jsonl
  mark "swift $tag" start
  env "$@" timeout $lim build-gpu/bin/swift-run $PLANS/$cfg.json --device cuda --steps $STEPS \
    --metrics /tmp/sbs-m.jsonl >>"$OUT/swift.log" 2>&1 || echo "   exit $?" | tee -a "$OUT/swift.log"
  mark "swift $tag" end
  tail -1 "$OUT/swift.log"
  [[ -f /tmp/sbs-m.jsonl ]] && python3 -c "
import json, sys
for l in open('/tmp/sbs-m.jsonl'):
    r = json.loads(l); r['config'] = sys.argv[1]; print(json.dumps(r))" "$tag" >>"$OUT/swift-metrics.jsonl"
}
table() { python3 $HERE/side_by_side.py table "$OUT" >"$OUT/table.txt" 2>&1; }
T0=$SECONDS
for cfg in $CFGS; do
  swift "$cfg"
  # SBS_AB="VAR=value ...[;VAR=value ...]": each configuration again with
  # each of those environments right after (A/B on the same GPU and clocks).
  if [[ -n ${SBS_AB:-} ]]; then
    IFS=';' read -ra variants <<<"$SBS_AB"
    for v in "${variants[@]}"; do swift "$cfg" $v; done
  fi
done
echo "swift-run: $((SECONDS - T0)) s"
table # a call cut short in the HF part still has the swift side
if [[ -z ${SBS_SKIP_HF:-} ]]; then
  T0=$SECONDS
  # Eager then torch.compile, each case with its own time limit and the whole
  # under SBS_DEADLINE (side_by_side.py hf); rows land in hf.jsonl as they come.
  # SBS_HF_TIMEOUT=S: the HF side ends after S seconds at the latest.
  hf_end=$SBS_DEADLINE
  [[ -n ${SBS_HF_TIMEOUT:-} ]] && (( $(date +%s) + SBS_HF_TIMEOUT < hf_end )) &&
    hf_end=$(( $(date +%s) + SBS_HF_TIMEOUT ))
  t=$(( hf_end - $(date +%s) + 10 )); (( t < 10 )) && t=10
  SBS_DEADLINE=$hf_end timeout $t python3 $HERE/side_by_side.py hf "$OUT/hf.jsonl" \
    >"$OUT/hf.log" 2>&1 || echo "hf: exit $?"
  grep '^{"config"' "$OUT/hf.log"
  echo "hf: $((SECONDS - T0)) s"
fi
table
cat "$OUT/table.txt"
clocks() {
  [[ -n ${SBS_CLOCKS:-} ]] && python3 $HERE/gpu_clocks.py summary $CLK/samples.csv $CLK/phases.tsv |
    tee "$OUT/clocks.txt"
}
clocks
if [[ -n ${SBS_TRACE:-} ]]; then
  for cfg in $CFGS; do
    [[ -f $PLANS/$cfg.json ]] || continue
    if [[ $SBS_TRACE != 1 ]]; then # SUB[,SUB...]: only those configurations
      hit=; for sub in ${SBS_TRACE//,/ }; do [[ $cfg == *"$sub"* ]] && hit=1; done
      [[ -n $hit ]] || continue
    fi
    (( $(left) > 60 )) || { echo "trace: budget spent"; break; }
    timeout 120 build-gpu/bin/swift-run $PLANS/$cfg.json --device cuda --steps 3 \
      --trace /tmp/trace-$cfg.json >/dev/null 2>>"$OUT/swift.log" || echo "trace $cfg: exit $?"
    { echo "== $cfg"; python3 $HERE/trace_summary.py /tmp/trace-$cfg.json --top 30 --gaps ${SBS_GAPS:-0}; } >>"$OUT/traces.txt" 2>&1
  done
  grep -A12 '^==' "$OUT/traces.txt"
fi
[[ -n ${SBS_NO_VARIANTS:-} ]] && exit 0
# The variants come last: a call cut short still printed the main table.
# Each optimization's effect on the 1B: one fused op off at a time (see
# runtime/include/swift/Runtime/model/Kernels.h), all off, all off with the old
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
table
cat "$OUT/table.txt"
clocks
