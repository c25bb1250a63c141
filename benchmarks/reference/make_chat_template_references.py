#!/usr/bin/env python3
"""Confirms (or remakes) the chat-template references of test/data/chat with
transformers itself: tokenizer.apply_chat_template(messages, tokenize=False,
add_generation_prompt=..., tools=..., **extra) for every committed
conversation and template, against MODEL.expected.jsonl (made by the
JavaScript twin, make_chat_template_references.mjs, with @huggingface/jinja).

UNTESTED HERE: this machine has no transformers; it is meant for the GPU
machine (pip install transformers jinja2), e.g.

    python3 benchmarks/reference/make_chat_template_references.py          # compare
    python3 benchmarks/reference/make_chat_template_references.py --write  # remake

It prints each case that differs (and the first differing character) and
exits 1 if any does. --write replaces the expected files with transformers'
renders (the references then are Python's; the C++ tests follow them).
The tokenizers come from .cache/tokenizers (scripts/fetch_tokenizers.sh);
llama3_1_instruct is test/data/chat/llama3_1_instruct.jinja with llama3_1's
tokenizer, as the C++ test does.
"""
import argparse
import json
import os
import sys

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
DATA = os.path.join(ROOT, "test", "data", "chat")
MODELS = ["qwen3", "qwen2_5", "llama3_1", "mistral_nemo", "llama3_1_instruct"]
TEMPLATE_FILES = {"llama3_1_instruct": ("llama3_1", "llama3_1_instruct.jinja")}


def read_jsonl(path):
    with open(path, encoding="utf-8") as f:
        return [json.loads(line) for line in f if line.strip()]


def render(tokenizer, template, case):
    extra = dict(case["extra"])
    tools = extra.pop("tools", None)
    try:
        text = tokenizer.apply_chat_template(
            case["messages"], tools=tools, chat_template=template, tokenize=False,
            add_generation_prompt=case["add_generation_prompt"], **extra)
        return {"id": case["id"], "text": text}
    except Exception as e:  # jinja2's TemplateError from raise_exception
        return {"id": case["id"], "error": str(e)}


def main():
    from transformers import AutoTokenizer

    ap = argparse.ArgumentParser()
    ap.add_argument("--write", action="store_true")
    args = ap.parse_args()
    cases = read_jsonl(os.path.join(DATA, "conversations.jsonl"))
    bad = 0
    for model in MODELS:
        tokens_of, template_file = TEMPLATE_FILES.get(model, (model, None))
        directory = os.path.join(ROOT, ".cache", "tokenizers", tokens_of)
        if not os.path.exists(os.path.join(directory, "tokenizer_config.json")):
            sys.exit(f"{directory} is missing: run scripts/fetch_tokenizers.sh")
        tokenizer = AutoTokenizer.from_pretrained(directory)
        template = None
        if template_file:
            with open(os.path.join(DATA, template_file), encoding="utf-8") as f:
                template = f.read()
        rows = [render(tokenizer, template, c) for c in cases]
        path = os.path.join(DATA, f"{model}.expected.jsonl")
        if args.write:
            with open(path, "w", encoding="utf-8") as f:
                for r in rows:
                    f.write(json.dumps(r, ensure_ascii=False, separators=(",", ":")) + "\n")
            continue
        expected = {r["id"]: r for r in read_jsonl(path)}
        same = 0
        for r in rows:
            e = expected.get(r["id"], {})
            if "error" in r or "error" in e:
                ok = "error" in r and "error" in e and e["error"] in r["error"]
            else:
                ok = r["text"] == e.get("text")
            same += ok
            if not ok:
                bad += 1
                got, want = r.get("text", r.get("error")), e.get("text", e.get("error"))
                k = next((i for i, (a, b) in enumerate(zip(got, want or "")) if a != b),
                         min(len(got), len(want or "")))
                print(f"{model} case {r['id']}: differs at character {k}:\n"
                      f"  transformers: {got[max(0, k - 40):k + 40]!r}\n"
                      f"  committed:    {(want or '')[max(0, k - 40):k + 40]!r}")
        print(f"{model}: {same}/{len(rows)} the same as transformers")
    sys.exit(1 if bad else 0)


if __name__ == "__main__":
    main()
