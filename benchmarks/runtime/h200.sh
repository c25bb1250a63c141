#!/usr/bin/env bash
# swift-run on the H200 (device machine): build runtime-only against the
# machine's LibTorch 2.x, then run the Llama-3.2-1B-shape plan and variants.
# Usage (from the repo root, on the device): benchmarks/runtime/h200.sh OUTDIR [quick]
# Writes build.log, run-*.log and metrics-*.jsonl to OUTDIR. "quick": the
# ZeRO-0 and offload runs plus a CPU/Gloo world-2 check against LibTorch 2.x.
set -uo pipefail
OUT=${1:-/tmp/swift-h200}
MODE=${2:-full}
mkdir -p "$OUT"
export NCCL_NVLS_ENABLE=0
PREFIX=$(python3 -c 'import torch;print(torch.utils.cmake_prefix_path)')
{ cmake -G Ninja -S . -B build-gpu -DSWIFT_BUILD_COMPILER=OFF -DSWIFT_BUILD_TESTS=OFF \
    -DCMAKE_PREFIX_PATH="$PREFIX" -DCMAKE_CUDA_ARCHITECTURES=90 &&
  ninja -C build-gpu swift-run; } >"$OUT/build.log" 2>&1 || { tail -50 "$OUT/build.log"; exit 1; }
RUN=build-gpu/bin/swift-run
PLAN=examples/plans/llama3.2-1b-h200.json
ls "$PREFIX/../../include" | tr '\n' ' ' >"$OUT/torch-include.txt"
nvidia-smi --query-gpu=name,memory.total,clocks.sm --format=csv,noheader | tee "$OUT/gpu.txt"

# Variants of the 1B plan: "zero offload checkpointing" (world 1).
variant() {
  python3 - "$PLAN" "$1" "$2" "$3" "$4" <<'PY'
import json, sys
p = json.load(open(sys.argv[1]))
p["strategy"].update(zero=int(sys.argv[2]), offload=sys.argv[3], checkpointing=sys.argv[4])
json.dump(p, open(sys.argv[5], "w"), indent=1)
PY
}
run() { # name steps env... -- args
  local name=$1 steps=$2; shift 2
  echo "== $name"
  env "$@" $RUN "${PLAN_FILE}" --device cuda --steps "$steps" \
      --metrics "$OUT/metrics-$name.jsonl" 2>&1 | tee "$OUT/run-$name.log" | tail -4
}
PLAN_FILE=$PLAN run zero0 8 NCCL_NVLS_ENABLE=0
if [[ $MODE == quick ]]; then
  variant 1 optimizer selective /tmp/off.json; PLAN_FILE=/tmp/off.json run zero1-offload-selective-nccl 3 SWIFT_COMM=nccl
  # The Gloo/CPU path against this LibTorch: world 2 reproduces world 1.
  python3 - <<'PY'
import json
p = json.load(open("examples/plans/tiny-cpu-zero3.json"))
json.dump(p, open("/tmp/tiny2.json", "w"))
p["world"]["size"] = 1; p["training"]["gradient_accumulation"] = 4
json.dump(p, open("/tmp/tiny1.json", "w"))
PY
  $RUN /tmp/tiny1.json --device cpu --steps 4 --metrics "$OUT/metrics-cpu1.jsonl" | tail -1
  $RUN /tmp/tiny2.json --device cpu --steps 4 --nproc-per-node 2 --metrics "$OUT/metrics-cpu2.jsonl" | tail -1
  python3 -c "
import json
a = [json.loads(l)['loss'] for l in open('$OUT/metrics-cpu1.jsonl')]
b = [json.loads(l)['loss'] for l in open('$OUT/metrics-cpu2.jsonl')]
print('cpu gloo world 2 vs 1: max |dloss|', max(abs(x - y) for x, y in zip(a, b)), len(a), len(b))"
  exit 0
fi
# ZeRO-2/3 at world 1 through NCCL (SWIFT_COMM forces the collective path on
# one GPU): same math as ZeRO-0, so the losses must agree (compared below).
variant 2 none none /tmp/z2.json;         PLAN_FILE=/tmp/z2.json run zero2-nccl 4 SWIFT_COMM=nccl
variant 3 none none /tmp/z3.json;         PLAN_FILE=/tmp/z3.json run zero3-nccl 4 SWIFT_COMM=nccl
variant 3 none full /tmp/z3f.json;        PLAN_FILE=/tmp/z3f.json run zero3-full-nccl 4 SWIFT_COMM=nccl
variant 1 optimizer selective /tmp/off.json; PLAN_FILE=/tmp/off.json run zero1-offload-selective-nccl 3 SWIFT_COMM=nccl
# Weight gradients returned through autograd instead of written by their
# GEMMs (accumulation 2: the second micro-batch adds into the fp32 buffer).
PLAN_FILE=$PLAN run zero0-nosink 4 SWIFT_KERNELS=-sink
python3 - "$OUT" <<'PY' | tee "$OUT/equivalence.txt"
import json, sys
def losses(name):
    return [json.loads(l)["loss"] for l in open(f"{sys.argv[1]}/metrics-{name}.jsonl")]
ref = losses("zero0")
for name in ["zero2-nccl", "zero3-nccl", "zero3-full-nccl", "zero1-offload-selective-nccl",
             "zero0-nosink"]:
    got = losses(name)
    print(f"{name}: max |loss - zero0 loss| over {min(3, len(got))} steps:",
          max(abs(a - b) for a, b in zip(ref[:3], got[:3])))
PY
# Fused (2.x) vs explicit AdamW on the tiny model: parameters after 3 steps.
python3 - <<'PY'
import json
p = json.load(open("examples/plans/tiny-cpu-zero3.json"))
p["world"]["size"] = 1; p["training"]["gradient_accumulation"] = 4
p["training"]["precision"] = "bf16-mixed"; p["strategy"]["zero"] = 0
json.dump(p, open("/tmp/tiny1.json", "w"))
PY
$RUN /tmp/tiny1.json --device cuda --steps 3 --save-params /tmp/fused.bin | tail -1
SWIFT_ADAMW=ops $RUN /tmp/tiny1.json --device cuda --steps 3 --save-params /tmp/ops.bin | tail -1
# Pure bf16 (bf16 weights and moments): the CUDA kernel vs the tensor ops.
python3 - <<'PY'
import json
p = json.load(open("/tmp/tiny1.json")); p["training"]["precision"] = "bf16"
json.dump(p, open("/tmp/tiny1-bf16.json", "w"))
PY
$RUN /tmp/tiny1-bf16.json --device cuda --steps 3 --save-params /tmp/fused-bf16.bin | tail -1
SWIFT_KERNELS=-adamw $RUN /tmp/tiny1-bf16.json --device cuda --steps 3 --save-params /tmp/ops-bf16.bin | tail -1
python3 -c "
import array
def cmp(name, a, b):
    x = array.array('f'); x.frombytes(open(a,'rb').read())
    y = array.array('f'); y.frombytes(open(b,'rb').read())
    print(name, 'n', len(x), 'max |diff|', max(abs(p-q) for p, q in zip(x, y)))
cmp('bf16-mixed fused vs ops AdamW:', '/tmp/fused.bin', '/tmp/ops.bin')
cmp('pure bf16 kernel vs ops AdamW:', '/tmp/fused-bf16.bin', '/tmp/ops-bf16.bin')
" | tee "$OUT/adamw-compare.txt"
# Every optional model feature (q/k/v bias, o_proj bias, Qwen3's q/k norm)
# on CUDA: fused kernels + weight-gradient sinks vs the plain op chains
# (SWIFT_KERNELS=0), fp32, same device and initial weights.
python3 - <<'PY'
import json
p = json.load(open("/tmp/tiny1.json"))
p["training"]["precision"] = "fp32"
p["model"].update(attention_qkv_bias=True, attention_o_bias=True, qk_norm=True)
json.dump(p, open("/tmp/tiny-features.json", "w"))
PY
$RUN /tmp/tiny-features.json --device cuda --steps 3 --metrics /tmp/feat-fused.jsonl | tail -1
SWIFT_KERNELS=0 $RUN /tmp/tiny-features.json --device cuda --steps 3 --metrics /tmp/feat-ops.jsonl | tail -1
python3 -c "
import json
a = [json.loads(l)['loss'] for l in open('/tmp/feat-fused.jsonl')]
b = [json.loads(l)['loss'] for l in open('/tmp/feat-ops.jsonl')]
print('all model features, fused vs op chains (fp32): max |dloss|', max(abs(x - y) for x, y in zip(a, b)))
" | tee -a "$OUT/adamw-compare.txt"
