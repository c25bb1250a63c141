#!/usr/bin/env bash
# Activation offload and --gpu-memory on the GPU (device machine), in one
# call: builds swift-run (benchmarks/build_gpu.sh), then on the Llama-3.2-1B
# B16 S2048 full-checkpointing plan (schedule derived again):
#  - offload_activations 0 against -1, at 1 and 2 micro-batches a step:
#    losses, peak allocated bytes and tokens/s of each (the peak should fall
#    by about L x B x S x C x 2 bytes less the two inputs in flight);
#  - --gpu-memory over the device, and below the plan's predicted peak:
#    exit 2 before anything is allocated;
#  - a cap below the real peak on a plan that predicts none: the OOM exit;
#  - world.gpu_memory_bytes as the default cap.
# OC_CAPS_ONLY=1 runs the cap's checks only.
#   bash benchmarks/runtime/offload_check.sh OUTDIR
set -uo pipefail
OUT=${1:?OUTDIR}
cd "$(dirname "$0")/../.."
mkdir -p "$OUT"
bash benchmarks/build_gpu.sh "$OUT" || exit 1
RUN=build-gpu/bin/swift-run
BASE=benchmarks/runtime/plans/llama3.2-1b-B16-S2048-full.json
nvidia-smi --query-gpu=name,memory.total --format=csv,noheader

# variant OUTFILE K ACCUMULATION [nopred] [cap=BYTES]
variant() {
  python3 - "$BASE" "$@" <<'PY'
import json, sys
p = json.load(open(sys.argv[1]))
out, k, acc = sys.argv[2], int(sys.argv[3]), int(sys.argv[4])
p.pop("schedule", None)
if k:
    p["strategy"]["offload_activations"] = k
t = p["training"]
t["gradient_accumulation"] = acc
t["micro_batch_size"] = t["global_batch_size"] // acc
for opt in sys.argv[5:]:
    if opt == "nopred":
        p.pop("predicted", None)
    elif opt.startswith("cap="):
        p["world"]["gpu_memory_bytes"] = int(opt[4:])
json.dump(p, open(out, "w"), indent=1)
PY
}

# run NAME PLAN ARGS...: exit status, the startup lines, the error line.
run() {
  local name=$1 plan=$2
  shift 2
  timeout 300 "$RUN" "$plan" --device cuda --metrics "$OUT/m-$name.jsonl" "$@" \
    > "$OUT/run-$name.log" 2>&1
  echo "== $name: exit $?"
  grep -E "activation offload|capped|error" "$OUT/run-$name.log" | cut -c1-400
}

# OC_CAPS_ONLY=1: the memory cap's checks only.
for acc in $([ -n "${OC_CAPS_ONLY:-}" ] || echo 1 2); do
  variant /tmp/ref$acc.json 0 $acc
  variant /tmp/off$acc.json -1 $acc
  run ref$acc /tmp/ref$acc.json --steps 6
  run off$acc /tmp/off$acc.json --steps 6
  run ref${acc}b /tmp/ref$acc.json --steps 6 # run-to-run spread
done
[ -n "${OC_CAPS_ONLY:-}" ] || python3 - "$OUT" <<'PY'
import json, sys
out = sys.argv[1]
def rows(n):
    try:
        return [json.loads(l) for l in open(f"{out}/m-{n}.jsonl")]
    except OSError:
        return []
for acc in (1, 2):
    for n in (f"ref{acc}", f"off{acc}", f"ref{acc}b"):
        r = [x for x in rows(n) if "loss" in x]
        if not r:
            print(n, "no metrics"); continue
        steady = r[2:] or r
        tps = sorted(x["tokens_per_second"] for x in steady)[len(steady) // 2]
        print(f"{n:6s} peak {max(x['peak_memory_bytes'] for x in r) / 2**30:7.3f} GiB"
              f"  tok/s {tps:9.0f}  losses {[x['loss'] for x in r]}")
PY

variant /tmp/plan.json -1 1
run over-device /tmp/plan.json --steps 1 --gpu-memory 100000
run below-predicted /tmp/plan.json --steps 1 --gpu-memory 10
variant /tmp/nopred.json 0 1 nopred
run oom /tmp/nopred.json --steps 2 --gpu-memory 8
variant /tmp/capped.json -1 1 cap=$((60 << 30))
run plan-cap /tmp/capped.json --steps 2
