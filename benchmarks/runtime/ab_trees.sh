#!/usr/bin/env bash
# A/B of two source trees' swift-run on the same GPU, in one device call:
# builds this tree (benchmarks/build_gpu.sh) and OLD (a source tree, e.g.
# unpacked from `git archive`; built with its own build_gpu.sh, both builds
# at once), then runs each plan with the new and the old binary in turn
# (new, old, new, old: the pairs share the GPU's clocks and temperature) and
# prints, per plan, the median steady tokens/s and the peak allocated bytes
# of each, and new/old. A restructuring that claims no behaviour change
# should show ratios of 1.00 within the run-to-run spread (the two runs of
# one binary show it).
#   bash benchmarks/runtime/ab_trees.sh OLD OUTDIR [PLAN...]
# Default plans: the side-by-side 1B/3B/8B, the LoRA and QLoRA 8B and the 3B
# with its optimizer on the host. AB_REPS (default 2) runs per binary;
# AB_STEPS (default 8) steps per run.
set -uo pipefail
OLD=$(cd "${1:?OLD tree}" && pwd)
OUT=${2:?OUTDIR}
shift 2
cd "$(dirname "$0")/../.."
mkdir -p "$OUT"
PLANS=("$@")
[[ ${#PLANS[@]} -gt 0 ]] || PLANS=(
  benchmarks/runtime/plans/llama3.2-1b-B4-S2048.json
  benchmarks/runtime/plans/llama3.2-3b-B2-S4096-full.json
  benchmarks/runtime/plans/llama3.1-8b-bf16-B1-S4096-full.json
  benchmarks/lora/plans/llama3.1-8b-lora-B4-S2048-none.json
  benchmarks/lora/plans/llama3.1-8b-qlora-B1-S2048-full.json
  benchmarks/runtime/host/llama3.2-3b-z1-opt.json)
T0=$SECONDS
bash benchmarks/build_gpu.sh "$OUT/build-new" > "$OUT/build-new.txt" 2>&1 &
NEW_PID=$!
(cd "$OLD" && bash benchmarks/build_gpu.sh "$OUT/build-old") > "$OUT/build-old.txt" 2>&1 ||
  { echo "old tree: build failed"; cat "$OUT/build-old.txt"; exit 1; }
wait $NEW_PID || { echo "new tree: build failed"; cat "$OUT/build-new.txt"; exit 1; }
echo "builds: $((SECONDS - T0)) s"
NEW_BIN=$PWD/build-gpu/bin/swift-run
OLD_BIN=$OLD/build-gpu/bin/swift-run
RESULTS=$OUT/ab.jsonl
: > "$RESULTS"
run() { # which binary plan rep
  local which=$1 bin=$2 plan=$3 rep=$4 m=/tmp/ab-m.jsonl
  rm -f $m
  # each tree runs its own copy of the plan when it has one
  local p=$plan
  [[ $which == old && -f $OLD/$plan ]] && p=$OLD/$plan
  timeout 300 "$bin" "$p" --device cuda --steps "${AB_STEPS:-8}" --metrics $m \
    > "$OUT/last-$which.log" 2>&1 || { echo "  $which $plan: exit $?"; tail -5 "$OUT/last-$which.log"; }
  [[ -f $m ]] && python3 - "$which" "$plan" "$rep" $m >> "$RESULTS" <<'PY'
import json, statistics, sys
which, plan, rep, path = sys.argv[1:5]
rows = [json.loads(l) for l in open(path)]
rows = [r for r in rows if "tokens_per_second" in r]
steady = rows[2:] or rows
print(json.dumps(dict(which=which, plan=plan, rep=int(rep),
                      tps=statistics.median(r["tokens_per_second"] for r in steady),
                      peak=max(r["peak_memory_bytes"] for r in steady),
                      loss=[r.get("loss") for r in rows])))
PY
}
for plan in "${PLANS[@]}"; do
  for rep in $(seq 1 "${AB_REPS:-2}"); do
    run new "$NEW_BIN" "$plan" "$rep"
    run old "$OLD_BIN" "$plan" "$rep"
  done
  echo "$plan: $((SECONDS - T0)) s"
done
python3 - "$RESULTS" <<'PY' | tee "$OUT/ab.txt"
import json, statistics, sys
rows = [json.loads(l) for l in open(sys.argv[1])]
plans = list(dict.fromkeys(r["plan"] for r in rows))
print(f"{'plan':58} {'new tok/s':>10} {'old tok/s':>10} {'ratio':>6} {'spread':>6}"
      f" {'new peak':>9} {'old peak':>9} {'ratio':>6} losses")
for p in plans:
    n = [r for r in rows if r["plan"] == p and r["which"] == "new"]
    o = [r for r in rows if r["plan"] == p and r["which"] == "old"]
    if not n or not o:
        print(f"{p:58} missing runs"); continue
    nt, ot = statistics.median(r["tps"] for r in n), statistics.median(r["tps"] for r in o)
    spread = max(max(r["tps"] for r in x) / min(r["tps"] for r in x) - 1 for x in (n, o))
    npk, opk = max(r["peak"] for r in n), max(r["peak"] for r in o)
    same = "same" if n[0]["loss"] == o[0]["loss"] else "DIFFER"
    print(f"{p:58} {nt:10.0f} {ot:10.0f} {nt/ot:6.3f} {spread:6.3f}"
          f" {npk/2**30:9.2f} {opk/2**30:9.2f} {npk/opk:6.3f} {same}")
PY
