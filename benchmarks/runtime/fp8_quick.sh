#!/usr/bin/env bash
# FP8 on one H200, one device call (~1-3 min): builds swift-run
# (benchmarks/build_gpu.sh), checks the kernels (the FP8 casts' codes against
# the CPU emulation, fp8Linear against its emulation), then runs Llama-3.1-8B
# B1 S4096 without checkpointing in bf16 and fp8-bf16 (the same plan but
# for the precision), 8 steps each, and traces one fp8 step.
#   bash benchmarks/runtime/fp8_quick.sh OUT [notrace]
# Writes OUT/fp8-quick.tar.gz (logs, metrics, trace summary).
set -uo pipefail
OUT=${1:?OUT}
cd "$(dirname "$0")/../.."
D=$OUT/fp8-quick
mkdir -p "$D"
export NCCL_NVLS_ENABLE=0
bash benchmarks/build_gpu.sh "$D" || exit 1
timeout 180 build-gpu/bin/swift-kernel-check cuda 2>&1 | tee "$D/kernels.txt" | grep -E "fp8|FAIL"
BF=benchmarks/runtime/plans/llama3.1-8b-bf16-B1-S4096-none.json
FP=benchmarks/runtime/plans/llama3.1-8b-fp8-B1-S4096-none.json
run() { # name plan [args...]
  local name=$1 plan=$2; shift 2
  echo "== $name"
  timeout 240 build-gpu/bin/swift-run "$plan" --device cuda --steps 8 \
    --metrics "$D/$name.jsonl" "$@" > "$D/$name.log" 2>&1 || echo "   exit $?"
  grep -E "step (7|8)/" "$D/$name.log" | tail -2
  python3 - "$D/$name.jsonl" <<'EOF'
import json, statistics, sys
rows = [json.loads(l) for l in open(sys.argv[1]) if l.strip()]
steps = [r for r in rows if "step_seconds" in r][2:]
if steps:
    t = statistics.median(r["step_seconds"] for r in steps)
    tok = statistics.median(r.get("tokens_per_second", 0) for r in steps)
    peak = max(r.get("peak_memory_bytes", 0) for r in steps) / 2**30
    print(f"   median step {t:.4f} s, {tok:,.0f} tok/s, peak {peak:.2f} GiB, "
          f"losses {[round(r.get('loss', 0), 4) for r in rows if 'loss' in r]}")
EOF
}
run bf16 "$BF"
run fp8 "$FP"
if [[ "${2:-}" != notrace ]]; then
  timeout 120 build-gpu/bin/swift-run "$FP" --device cuda --steps 3 \
    --trace "$D/trace.json" > "$D/trace.log" 2>&1
  python3 benchmarks/runtime/trace_summary.py "$D/trace.json" --top 30 > "$D/trace.txt" 2>&1
  head -45 "$D/trace.txt"
  rm -f "$D/trace.json"
fi
tar czf "$OUT/fp8-quick.tar.gz" -C "$OUT" fp8-quick
