#!/usr/bin/env bash
# Issue 31's long-context table on one GPU, in one device call: each plan
# (swift-plan --emit plan; their world.gpu_memory_bytes caps the allocator on
# a larger GPU, e.g. an H100's 80 GB on an H200) runs STEPS optimizer steps
# of synthetic data (random weights: memory and time only); a row per plan:
# sequence length, method, activation decisions, measured peak allocated
# bytes and the plan's, the last step's seconds and the plan's, tokens/s.
#   bash benchmarks/runtime/long_context.sh OUTDIR STEPS PLAN...
# Builds swift-run first (benchmarks/build_gpu.sh). LC_BUDGET_S (default
# 560): no plan starts after that many seconds. LC_ARGS: more swift-run
# arguments for every plan (e.g. "--gpu-memory 23" to probe past a plan's
# own cap: the largest length that runs, issue 31 item 5).
set -uo pipefail
OUT=${1:?OUTDIR}
STEPS=${2:?STEPS}
shift 2
cd "$(dirname "$0")/../.."
mkdir -p "$OUT"
T0=$SECONDS
bash benchmarks/build_gpu.sh "$OUT/build" || exit 1
nvidia-smi --query-gpu=name,memory.total --format=csv,noheader | tee "$OUT/gpu.txt"
: > "$OUT/rows.jsonl"
for plan in "$@"; do
  (( SECONDS - T0 < ${LC_BUDGET_S:-560} )) || { echo "$plan: budget spent"; continue; }
  name=$(basename "$plan" .json)
  m=/tmp/lc-$name.jsonl
  rm -f "$m"
  t=$(( ${LC_BUDGET_S:-560} + 30 - SECONDS + T0 ))
  timeout $t build-gpu/bin/swift-run "$plan" --device cuda --steps "$STEPS" --metrics "$m" ${LC_ARGS:-} \
    > "$OUT/$name.log" 2>&1
  rc=$?
  echo "$name: exit $rc, $((SECONDS - T0)) s"; grep -E "capped|offload|out of memory|error" "$OUT/$name.log" | head -3
  python3 - "$plan" "$m" "$rc" "$name" >> "$OUT/rows.jsonl" <<'PY'
import json, os, sys
plan, metrics, rc, name = sys.argv[1], sys.argv[2], int(sys.argv[3]), sys.argv[4]
p = json.load(open(plan))
rows = [json.loads(l) for l in open(metrics)] if os.path.exists(metrics) else []
rows = [r for r in rows if "tokens_per_second" in r]
last = rows[-1] if rows else {}
s = p["strategy"]
print(json.dumps(dict(
    name=name, seq=p["training"]["sequence_length"],
    method=p["training"].get("method", "full"), zero=s["zero"], offload=s["offload"],
    offload_activations=s.get("offload_activations", 0),
    mlp_tile_tokens=s.get("mlp_tile_tokens", 0), exit=rc,
    peak=max((r["peak_memory_bytes"] for r in rows), default=None),
    peak_reserved=max((r.get("peak_reserved_bytes", 0) for r in rows), default=None),
    planned_peak=p["predicted"]["peak_memory_bytes"],
    step=last.get("step_seconds"), planned_step=p["predicted"]["step_seconds"],
    tokens_per_second=last.get("tokens_per_second"))))
PY
done
python3 - "$OUT/rows.jsonl" <<'PY' | tee "$OUT/table.txt"
import json, sys
G = 2**30
print(f"{'plan':18} {'seq':>7} {'method':6} {'act.off':>7} {'tiles':>5} {'exit':>4}"
      f" {'peak GiB':>8} {'plan':>6} {'ratio':>6} {'step s':>7} {'plan':>7} {'ratio':>6} {'tok/s':>7}")
for l in open(sys.argv[1]):
    r = json.loads(l)
    pk, ps = r["peak"], r["step"]
    f = lambda x, d=2: "-" if x is None else f"{x:.{d}f}"
    print(f"{r['name']:18} {r['seq']:7d} {r['method']:6} {r['offload_activations']:7d}"
          f" {r['mlp_tile_tokens']:5d} {r['exit']:4d} {f(pk and pk / G):>8}"
          f" {r['planned_peak'] / G:6.2f} {f(pk and pk / r['planned_peak'], 3):>6}"
          f" {f(ps, 1):>7} {r['planned_step']:7.1f} {f(ps and ps / r['planned_step'], 3):>6}"
          f" {f(r['tokens_per_second'], 0):>7}")
PY
