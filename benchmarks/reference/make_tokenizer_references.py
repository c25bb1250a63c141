#!/usr/bin/env python3
"""The tokenizer references with HF's Rust tokenizers through its Python binding.

The twin of make_tokenizer_references.mjs (the same Rust library through its
Node.js binding), to confirm its ids with the binding transformers uses, on
a machine where transformers is installed (the GPU machine):

    python3 make_tokenizer_references.py OUT [--tokenizers DIR] [--corpus FILE]

reads the committed corpus (test/data/tokenizer/corpus.jsonl; the .mjs
script generates it, this one does not change it) and writes OUT/NAME.jsonl.gz
and OUT/variant-NAME.jsonl.gz (variants.json) in the same format: line i {"ids": [...]} for add_special_tokens=False, and
"prefix"/"suffix" (or "special") for add_special_tokens=True. Its output
should be the committed files' (same library); where it differs, say so.

UNTESTED HERE: written where transformers is not installed; run it on the
GPU machine first, then diff (zcat A | diff - <(zcat B)).
"""
import argparse
import gzip
import json
import os

NAMES = ["qwen3", "qwen2_5", "llama3_1", "llama2", "mistral_nemo"]
REPO = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))


def reference_line(ids, special):
    line = {"ids": ids}
    if ids == special:
        return line
    for k in range(0, len(special) - len(ids) + 1):
        if special[k:k + len(ids)] == ids:
            line["prefix"] = special[:k]
            line["suffix"] = special[k + len(ids):]
            return line
    line["special"] = special
    return line


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("out")
    ap.add_argument("--tokenizers", default=os.path.join(REPO, ".cache", "tokenizers"))
    ap.add_argument("--corpus", default=os.path.join(REPO, "test", "data", "tokenizer", "corpus.jsonl"))
    args = ap.parse_args()
    from tokenizers import Tokenizer  # HF's Rust library (a transformers dependency)

    texts = []
    with open(args.corpus, encoding="utf-8") as f:
        for line in f:
            e = json.loads(line)
            if "hex" in e:  # invalid UTF-8: what swift reads it as
                texts.append(bytes.fromhex(e["hex"]).decode("utf-8", errors="replace"))
            else:
                texts.append(e["text"])
    os.makedirs(args.out, exist_ok=True)
    for name in NAMES:
        tok = Tokenizer.from_file(os.path.join(args.tokenizers, name, "tokenizer.json"))
        plain = tok.encode_batch(texts, add_special_tokens=False)
        special = tok.encode_batch(texts, add_special_tokens=True)
        lines = [json.dumps(reference_line(a.ids, b.ids), separators=(",", ":"))
                 for a, b in zip(plain, special)]
        with gzip.open(os.path.join(args.out, name + ".jsonl.gz"), "wt", encoding="utf-8") as f:
            f.write("\n".join(lines) + "\n")
        print(f"{name}: {len(lines)} strings")

    # The variants (variants.json): real files with fields set by JSON
    # pointer, on the first 1,500 valid strings.
    with open(os.path.join(os.path.dirname(args.corpus), "variants.json"), encoding="utf-8") as f:
        variants = json.load(f)["variants"]
    valid = []
    with open(args.corpus, encoding="utf-8") as f:
        for line in f:
            e = json.loads(line)
            if "text" in e and len(valid) < 1500:
                valid.append(e["text"])
    for v in variants:
        with open(os.path.join(args.tokenizers, v["base"], "tokenizer.json"), encoding="utf-8") as f:
            j = json.load(f)
        for pointer, value in v["set"].items():
            keys = pointer.split("/")[1:]
            o = j
            for k in keys[:-1]:
                o = o[int(k)] if isinstance(o, list) else o[k]
            last = keys[-1]
            if isinstance(o, list):
                o[int(last)] = value
            else:
                o[last] = value
        tok = Tokenizer.from_str(json.dumps(j))
        plain = tok.encode_batch(valid, add_special_tokens=False)
        special = tok.encode_batch(valid, add_special_tokens=True)
        lines = [json.dumps(reference_line(a.ids, b.ids), separators=(",", ":"))
                 for a, b in zip(plain, special)]
        with gzip.open(os.path.join(args.out, "variant-" + v["name"] + ".jsonl.gz"), "wt",
                       encoding="utf-8") as f:
            f.write("\n".join(lines) + "\n")
        print(f"variant {v['name']}: {len(lines)} strings")


if __name__ == "__main__":
    main()
