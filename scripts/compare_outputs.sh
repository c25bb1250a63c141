#!/usr/bin/env bash
# Writes what swift-plan prints for the shipped jobs x strategy variants into
# OUTDIR, one file per command: the report, --json, --explain, and
# --emit plan / deepspeed / ms-swift / launch, each with its stdout, stderr
# and exit status. Run it with two swift-plan binaries from the same
# checkout and `diff -r` the two directories: a restructuring that changes
# no behaviour leaves them identical.
#
# usage: scripts/compare_outputs.sh SWIFT_PLAN OUTDIR
#
# Jobs: examples/, test/swift-plan/Inputs/, test/Import/Inputs/, the
# benchmarks' pinned jobs, the HF model directories of test/data/hf, and
# (report and plan only) the invalid jobs of test/swift-plan/errors/.
# Variants: as written, ZeRO 0..3, offload none/optimizer/optimizer+params,
# checkpointing none/full/selective, LoRA and QLoRA, two nodes. A variant a
# job cannot run still writes its error and exit status, which are compared
# too.
set -uo pipefail
if [[ $# -ne 2 ]]; then
  echo "usage: $0 SWIFT_PLAN OUTDIR" >&2
  exit 2
fi
PLAN=$(realpath "$1")
OUT=$(realpath -m "$2")
cd "$(dirname "$0")/.."
REPO=$PWD
[[ -x $PLAN ]] || { echo "$0: $1 is not an executable" >&2; exit 2; }
rm -rf "$OUT" && mkdir -p "$OUT"

# Job files for the HF model directories, written at a fixed place so that
# both runs name the same paths.
GEN=${TMPDIR:-/tmp}/swift-compare-outputs-jobs
rm -rf "$GEN" && mkdir -p "$GEN"
for m in llama qwen2 qwen3 mistral llama-sharded; do
  printf 'model: %s\ntraining: {sequence_length: 16, global_batch_size: 2, precision: fp32}\ncluster: {gpu: h100}\nstrategy: {zero: 0, offload: none, checkpointing: none}\n' \
    "$REPO/test/data/hf/$m" > "$GEN/hf-$m.yaml"
done

VARIANTS=(
  "base|"
  "zero0|--set strategy.zero=0"
  "zero1|--set strategy.zero=1"
  "zero2|--set strategy.zero=2"
  "zero3|--set strategy.zero=3"
  "offload-none|--set strategy.offload=none"
  "offload-optimizer|--set strategy.offload=optimizer"
  "zero3-offload-params|--set strategy.zero=3 --set strategy.offload=optimizer+params"
  "zero1-offload-optimizer|--set strategy.zero=1 --set strategy.offload=optimizer"
  "ckpt-full|--set strategy.checkpointing=full"
  "ckpt-none|--set strategy.checkpointing=none"
  "ckpt-selective|--set strategy.checkpointing=selective"
  "ckpt-full-2layers|--set strategy.checkpointing=full --set strategy.checkpoint_layers=2"
  "lora|--set training.method=lora"
  "qlora|--set training.method=qlora"
  "zero3-lora|--set strategy.zero=3 --set training.method=lora"
  "two-nodes|--set cluster.nodes=2"
  "two-nodes-zero2|--set cluster.nodes=2 --set strategy.zero=2"
)
ALL_EMITS=(summary json explain plan deepspeed ms-swift launch)

count=0
# run NAME EMIT ARGS...: one command, its outputs under $OUT/NAME/EMIT.*
run() {
  local name=$1 emit=$2
  shift 2
  local args=("$@")
  case $emit in
  summary) ;;
  json) args+=(--json) ;;
  explain) args+=(--explain) ;;
  *) args+=(--emit "$emit") ;;
  esac
  mkdir -p "$OUT/$name"
  "$PLAN" "${args[@]}" > "$OUT/$name/$emit.out" 2> "$OUT/$name/$emit.err"
  echo $? > "$OUT/$name/$emit.rc"
  count=$((count + 1))
}

jobs=()
for f in examples/*.yaml test/swift-plan/Inputs/*.yaml test/Import/Inputs/*.yaml \
  "$GEN"/*.yaml; do
  jobs+=("$f")
done
for f in "${jobs[@]}"; do
  base=$(basename "$f" .yaml)
  dir=$(basename "$(dirname "$f")")
  for v in "${VARIANTS[@]}"; do
    vname=${v%%|*}
    read -r -a sets <<< "${v#*|}"
    for e in "${ALL_EMITS[@]}"; do
      run "$dir/$base/$vname" "$e" "$f" "${sets[@]}"
    done
  done
done
# The benchmarks' pinned jobs, as written.
for f in benchmarks/*/*/jobs/*.yaml benchmarks/runtime/*/*.yaml; do
  [[ -f $f ]] || continue
  name=${f#benchmarks/}
  for e in "${ALL_EMITS[@]}"; do
    run "benchmarks/${name%.yaml}" "$e" "$f"
  done
done
# Invalid jobs: the error and exit status.
for f in test/swift-plan/errors/*.yaml; do
  for e in summary plan; do
    run "errors/$(basename "$f" .yaml)" "$e" "$f"
  done
done
echo "$0: $count commands, outputs in $OUT"
