#!/usr/bin/env bash
# Issue 29's end-to-end check on the GPU machine, in one device call:
# a Qwen2.5-1.5B-shaped model directory with random weights and the real
# Qwen2.5 tokenizer files (.cache/tokenizers/qwen2_5: carry it), 10,000
# generated multilingual chat conversations (chat_e2e.py data), one epoch
# with evaluation on 200 more, an HF export; then transformers loads the
# export with its tokenizer and checks the eval conversations' ids and the
# eval loss against swift-run's (chat_e2e.py check). Also confirms the
# committed tokenizer and chat-template references with transformers'
# libraries. Usage (repo root, on the device): chat_e2e.sh OUTDIR
# (the plan: benchmarks/runtime/chat/qwen2.5-1.5b-chat.json, made here by
#  swift-plan benchmarks/runtime/chat/qwen2.5-1.5b-chat.yaml --emit plan).
set -uo pipefail
OUT=${1:?OUTDIR}
mkdir -p "$OUT"
HERE=benchmarks/runtime/chat
W=/tmp/chat-e2e # the model and data stay off OUTDIR
rm -rf "$W" && mkdir -p "$W"
export NCCL_NVLS_ENABLE=0
bash benchmarks/build_gpu.sh "$OUT/build" || exit 1
RUN=build-gpu/bin/swift-run
PLAN=$HERE/qwen2.5-1.5b-chat.json
step() { echo "== $*"; }
secs() { python3 -c "import time; print('%.1f' % (time.time() - $1))"; }
step "model directory (random weights) + the Qwen2.5 tokenizer files"
$RUN "$PLAN" --device cuda --steps 0 --export-hf "$W/model" > "$OUT/init.log" 2>&1 || { tail "$OUT/init.log"; exit 1; }
cp .cache/tokenizers/qwen2_5/tokenizer.json .cache/tokenizers/qwen2_5/tokenizer_config.json "$W/model/"
python3 $HERE/chat_e2e.py data "$W" 10000 200
wc -l "$W/train.jsonl" "$W/eval.jsonl"; du -sh "$W/train.jsonl"
step "tokenizing the training file once, on every core, into the token cache"
export SWIFT_CACHE_DIR=$W/cache
t0=$(date +%s.%N)
$RUN "$PLAN" --weights "$W/model" --data "$W/train.jsonl" --prepare-data
echo "tokenize 10,000 conversations: $(secs $t0) s (the run below reuses them)"
$RUN "$PLAN" --weights "$W/model" --data "$W/eval.jsonl" --inspect-data 200 | grep '^{' > "$W/inspect.jsonl"
step "train 1 epoch with evaluation, export"
t0=$(date +%s.%N)
$RUN "$PLAN" --device cuda --weights "$W/model" --data "$W/train.jsonl" --epochs 1 \
  --eval-data "$W/eval.jsonl" --eval-every 20 --metrics "$W/metrics.jsonl" \
  --export-hf "$W/export" > "$OUT/run.log" 2>&1
echo "swift-run rc=$? in $(secs $t0) s"
grep -v '^step' "$OUT/run.log" | head -20; grep '^step' "$OUT/run.log" | tail -3
cp "$W/metrics.jsonl" "$OUT/"
ls "$W/export"
step "transformers on the export"
python3 $HERE/chat_e2e.py check "$W" 2>&1 | grep -v Warning | tail -8
step "the tokenizer references with HF's Python tokenizers"
python3 benchmarks/reference/make_tokenizer_references.py "$W/tokref" > "$OUT/tokref.log" 2>&1; echo "rc=$?"
for f in "$W"/tokref/*.jsonl.gz; do
  n=$(basename "$f")
  if cmp -s <(zcat "$f") <(zcat "test/data/tokenizer/$n"); then echo "$n same"; else
    echo "$n DIFFERS: $(diff <(zcat "$f") <(zcat "test/data/tokenizer/$n") | grep -c '^<') lines"; fi
done
step "the chat-template references with transformers' apply_chat_template"
python3 benchmarks/reference/make_chat_template_references.py > "$OUT/chatref.log" 2>&1; echo "rc=$?"
tail -5 "$OUT/chatref.log"
