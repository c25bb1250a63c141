#!/usr/bin/env bash
# Tokenizing speed on this machine's cores, side by side: swift-run
# --prepare-data (--data-cache off: it tokenizes every time) against HF
# tokenizers' encode_batch (the Rust library through its Node binding, npm
# `tokenizers` 0.23.2, fetched into a temporary directory) on the same
# "text" lines, best of REPEAT runs each. Needs node and npm; any machine
# (the GPU machine has no npm registry: benchmarks/data/tokenize_bench.sh
# measures against Python's tokenizers there).
#   bash benchmarks/data/tokenize_bench_node.sh SWIFT_RUN PLAN TOKENIZER_DIR TEXT.jsonl [REPEAT]
# TEXT.jsonl: {"text": ...} lines (e.g. chat conversations rendered by the
# template: swift-run --inspect-data's "text").
set -euo pipefail
RUN=$1 PLAN=$2 TOK=$(realpath "$3") DATA=$(realpath "$4") REPEAT=${5:-3}
here=$(cd "$(dirname "$0")" && pwd)
node_dir=$(mktemp -d)
trap 'rm -rf "$node_dir"' EXIT
(cd "$node_dir" && npm install --silent tokenizers@0.23.2 > /dev/null 2>&1)
cp "$here/tokenize_bench_node.mjs" "$node_dir/"
eos=$(python3 -c "import json,sys; print(json.load(open(sys.argv[1]))['eos_token'])" "$TOK/tokenizer_config.json")
hf=$(cd "$node_dir" && node tokenize_bench_node.mjs "$TOK/tokenizer.json" "$DATA" "$eos" "$REPEAT")
best=""
for _ in $(seq "$REPEAT"); do
  line=$("$RUN" "$PLAN" --tokenizer "$TOK" --data "$DATA" --data-cache off --prepare-data 2>&1 >/dev/null | grep '^tokenized ')
  s=$(echo "$line" | sed -E 's/.* tokens in ([0-9.]+) s.*/\1/')
  if [ -z "$best" ] || python3 -c "import sys; sys.exit(0 if $s < $best else 1)"; then best=$s; swift_line=$line; fi
done
python3 - "$hf" "$swift_line" "$best" <<'PY'
import json, re, sys
hf = json.loads(sys.argv[1])
swift_line, swift_s = sys.argv[2], float(sys.argv[3])
swift_tokens = int(re.search(r"samples, ([\d,]+) tokens", swift_line).group(1).replace(",", ""))
threads = re.search(r"(\d+) threads?\)", swift_line).group(1)
h, s = hf["tokens"] / hf["seconds"], swift_tokens / swift_s
print(f"samples {hf['samples']}, tokens HF {hf['tokens']} swift {swift_tokens}, {threads} threads")
print(f"HF tokenizers encode_batch {h / 1e6:6.2f} M tokens/s ({hf['seconds']:.2f} s)")
print(f"swift-run --prepare-data   {s / 1e6:6.2f} M tokens/s ({swift_s:.2f} s: reads and parses the JSONL, writes the tokens)")
print(f"swift / HF {s / h:.2f}x")
PY
