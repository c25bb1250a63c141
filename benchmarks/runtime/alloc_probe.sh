#!/usr/bin/env bash
# The caching allocator's reserved peak against its allocated peak, with and
# without PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True (swift-run's
# default since the gradients are allocated per step), on one H200 in one
# call of the device tool: builds swift-run (build_gpu.sh), then runs each
# configuration of side_by_side.py named in PROBE_CONFIGS for 6 steps under
# each setting and prints its allocated and reserved peaks and tokens/s
# (steps 2-6). Usage (repo root, on the device): alloc_probe.sh OUTDIR
set -u
OUT=${1:?OUTDIR}
HERE=benchmarks/runtime
CONFIGS=${PROBE_CONFIGS:-llama3.1-8b-mixed-B1-S4096-planned llama3.1-8b-bf16-B1-S4096-planned llama3.2-3b-B2-S4096-planned llama3.2-1b-B4-S2048}
bash benchmarks/build_gpu.sh "$OUT" >/dev/null || exit 1
P=/tmp/probe-plans
rm -rf $P && python3 $HERE/side_by_side.py plans $P >/dev/null 2>&1
for conf in "expandable_segments:True" "expandable_segments:False"; do
  for cfg in $CONFIGS; do
    rm -f /tmp/probe-m.jsonl
    PYTORCH_CUDA_ALLOC_CONF=$conf timeout 200 build-gpu/bin/swift-run $P/$cfg.json \
      --device cuda --steps 6 --metrics /tmp/probe-m.jsonl >/tmp/probe.log 2>&1 ||
      { tail -3 /tmp/probe.log; continue; }
    python3 - "$cfg" "$conf" <<'PY'
import json, sys
rs = [json.loads(l) for l in open("/tmp/probe-m.jsonl")][1:]
tps = sum(r["tokens"] for r in rs) / sum(r["step_seconds"] for r in rs)
alloc = max(r["peak_memory_bytes"] for r in rs) / 2**30
res = max(r["peak_reserved_bytes"] for r in rs) / 2**30
print(f"{sys.argv[1]:36s} {sys.argv[2]:26s} allocated {alloc:7.2f} GiB "
      f"reserved {res:7.2f} GiB tokens/s {tps:9.0f}")
PY
  done
done
