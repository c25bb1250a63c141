#!/usr/bin/env bash
# Issue 29 item 6's benchmark on the GPU machine, in one device call: builds
# swift-run (benchmarks/build_gpu.sh; carry .cache/icu-static.tar.xz and
# .cache/tokenizers), then tokenize_bench.py: swift-run against HF
# tokenizers' encode_batch (and transformers' apply_chat_template in a
# process pool) on the same cores, the token cache's second run, and the
# peak host memory on a file and on 10 copies of it.
#   bash benchmarks/data/tokenize_bench.sh OUTDIR [N]
set -uo pipefail
OUT=${1:?OUTDIR}
N=${2:-200000}
mkdir -p "$OUT"
bash benchmarks/build_gpu.sh "$OUT/build" || exit 1
python3 benchmarks/data/tokenize_bench.py build-gpu/bin/swift-run \
  benchmarks/runtime/chat/qwen2.5-1.5b-chat.json .cache/tokenizers/qwen2_5 \
  /tmp/tokenize-bench "$N" 10 2>&1 | grep -v Warning | tee "$OUT/tokenize_bench.txt"
