#!/usr/bin/env bash
# swift-run's ZeRO stages against PyTorch FSDP2 on every GPU of the machine
# (issue 7), in one call of the device tool: builds swift-run runtime-only,
# sweeps NCCL bus bandwidth, runs each case of cases.py with swift-run at
# world 1 (ZeRO-0, the reference losses) and at world N for ZeRO 0-3, and
# with FSDP2 under torchrun at world N, then prints compare.py's table.
# Usage (repo root, on the device): benchmarks/multigpu/run.sh OUTDIR
# MG_STEPS (default 5) steps per run; MG_SKIP_SWEEP=1 skips the sweep;
# MG_WORLD overrides N (the GPUs nvidia-smi lists).
# OUTDIR gets: build.log, nccl.jsonl, swift.log, swift-metrics.jsonl,
# fsdp2.jsonl, fsdp2.log, results.jsonl, table.txt.
set -uo pipefail
OUT=${1:-/tmp/swift-multigpu}
mkdir -p "$OUT"
export NCCL_NVLS_ENABLE=0 PYTHONUNBUFFERED=1
HERE=benchmarks/multigpu
N=${MG_WORLD:-$(nvidia-smi --list-gpus | wc -l)}
STEPS=${MG_STEPS:-5}
PREFIX=$(python3 -c 'import torch;print(torch.utils.cmake_prefix_path)')
T0=$SECONDS
{ cmake -G Ninja -S . -B build-gpu -DSWIFT_BUILD_COMPILER=OFF -DSWIFT_BUILD_TESTS=OFF \
    -DCMAKE_PREFIX_PATH="$PREFIX" -DCMAKE_CUDA_ARCHITECTURES=90 &&
  ninja -C build-gpu swift-run; } >"$OUT/build.log" 2>&1 || { tail -40 "$OUT/build.log"; exit 1; }
echo "build: $((SECONDS - T0)) s; world $N"
if [[ -z ${MG_SKIP_SWEEP:-} ]]; then
  timeout 300 torchrun --nproc-per-node "$N" $HERE/nccl_sweep.py "$OUT/nccl.jsonl" ||
    echo "nccl sweep: exit $?"
fi
swift() { # plan name, world
  local plan=$HERE/plans/$1.json world=$2
  echo "== swift-run $1" | tee -a "$OUT/swift.log"
  local launch=()
  [[ $world -gt 1 ]] && launch=(--nproc-per-node "$world")
  rm -f /tmp/mg-m.jsonl
  timeout 600 build-gpu/bin/swift-run "$plan" --device cuda --steps "$STEPS" "${launch[@]}" \
    --metrics /tmp/mg-m.jsonl >>"$OUT/swift.log" 2>&1 || echo "   exit $?" | tee -a "$OUT/swift.log"
  tail -1 "$OUT/swift.log"
  [[ -f /tmp/mg-m.jsonl ]] && python3 -c "
import json, sys
for l in open('/tmp/mg-m.jsonl'):
    r = json.loads(l); r['config'] = sys.argv[1]; print(json.dumps(r))" "$1" >>"$OUT/swift-metrics.jsonl"
}
for c in $(python3 -c "import sys; sys.path.insert(0, '$HERE'); import cases; print(' '.join(c['name'] for c in cases.CASES))"); do
  swift "$c-w1-z0" 1
  if [[ $N -gt 1 ]]; then
    for z in 0 1 2 3; do swift "$c-w$N-z$z" "$N"; done
  fi
done
timeout 900 torchrun --nproc-per-node "$N" $HERE/fsdp2_torchrun.py "$OUT/fsdp2.jsonl" "$STEPS" \
  >"$OUT/fsdp2.log" 2>&1 || { echo "fsdp2: exit $?"; tail -20 "$OUT/fsdp2.log"; }
grep '^{' "$OUT/fsdp2.log"
python3 $HERE/compare.py "$OUT" | tee "$OUT/table.txt"
