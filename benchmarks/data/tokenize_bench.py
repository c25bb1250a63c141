#!/usr/bin/env python3
"""Tokenizing speed: swift-run against HF tokenizers, side by side, same cores.

  tokenize_bench.py SWIFT_RUN PLAN TOKENIZER_DIR OUT [N] [COPIES]

Generates N multilingual chat conversations (chat_e2e.py's generator) into
OUT/chat.jsonl, renders them with transformers' apply_chat_template into
OUT/text.jsonl ({"text": rendered}), and times, on every core of the machine:

  text  HF   tokenizers.Tokenizer.encode_batch(rendered texts) (Rust, rayon)
        swift swift-run --prepare-data --data-cache off on text.jsonl (reads
              the file, parses JSON, encodes, appends EOS, writes the tokens)
  chat  HF   apply_chat_template(messages, tokenize=True) in a process pool
              (what TRL's dataset.map(num_proc=cores) runs)
        swift swift-run --prepare-data on chat.jsonl (render + encode +
              assistant-only labels)
  cache swift: the second run with a token cache (nothing tokenized)

and prints tokens/s with the ratio swift / HF. Host memory: swift's peak RSS
on chat.jsonl and on a file of COPIES copies of it (bounded: it must not grow
with the file). Runs on the GPU machine (tokenizers, transformers);
tokenize_bench.sh drives it.
"""
import json
import multiprocessing as mp
import os
import re
import resource
import subprocess
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "runtime", "chat"))
from chat_e2e import conversation  # noqa: E402

_tok = None


def _init(tokenizer_dir):
    global _tok
    from transformers import AutoTokenizer
    _tok = AutoTokenizer.from_pretrained(tokenizer_dir)


def _chat_ids(lines):
    n = 0
    for line in lines:
        ids = _tok.apply_chat_template(json.loads(line)["messages"], tokenize=True)
        if isinstance(ids, dict) or hasattr(ids, "input_ids"):
            ids = ids["input_ids"]
        n += len(ids)
    return n


def swift(run, plan, tok_dir, data, cache="off"):
    """Wall seconds, tokens and peak RSS (MB) of one swift-run --prepare-data."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
    t0 = time.time()
    p = subprocess.run([run, plan, "--tokenizer", tok_dir, "--data", data,
                        "--data-cache", cache, "--prepare-data"],
                       capture_output=True, text=True)
    secs = time.time() - t0
    if p.returncode != 0:
        sys.exit(f"swift-run failed ({p.returncode}): {p.stderr}{p.stdout}")
    rss = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
    m = re.search(r"tokenized .*?: [\d,]+ samples, ([\d,]+) tokens", p.stderr) or \
        re.search(r": [\d,]+ samples, ([\d,]+) tokens from the token cache", p.stderr)
    tokens = int(m.group(1).replace(",", "")) if m else 0
    # RUSAGE_CHILDREN's maxrss is the largest child so far: only a growth
    # is this child's own.
    return secs, tokens, max(rss, before) / 1024, p.stderr.strip().splitlines()


def main():
    run, plan, tok_dir, out = sys.argv[1:5]
    n = int(sys.argv[5]) if len(sys.argv) > 5 else 200000
    copies = int(sys.argv[6]) if len(sys.argv) > 6 else 10
    cores = os.cpu_count()
    os.makedirs(out, exist_ok=True)
    import random
    rng = random.Random(1)
    chat = f"{out}/chat.jsonl"
    with open(chat, "w") as f:
        for _ in range(n):
            f.write(json.dumps(conversation(rng), ensure_ascii=False) + "\n")
    from transformers import AutoTokenizer
    from tokenizers import Tokenizer
    tok = AutoTokenizer.from_pretrained(tok_dir)
    lines = open(chat).read().splitlines()
    rendered = [tok.apply_chat_template(json.loads(l)["messages"], tokenize=False) for l in lines]
    with open(f"{out}/text.jsonl", "w") as f:
        for r in rendered:
            f.write(json.dumps({"text": r}, ensure_ascii=False) + "\n")
    size = os.path.getsize(chat) / 1e6
    print(f"{n} conversations, chat.jsonl {size:.0f} MB, {cores} cores")

    fast = Tokenizer.from_file(f"{tok_dir}/tokenizer.json")
    t0 = time.time()
    enc = fast.encode_batch(rendered, add_special_tokens=False)
    hf_text_s = time.time() - t0
    hf_text_tokens = sum(len(e.ids) for e in enc)
    del enc
    sw_text_s, sw_text_tokens, _, _ = swift(run, plan, tok_dir, f"{out}/text.jsonl")

    chunks = [lines[i:i + 500] for i in range(0, len(lines), 500)]
    t0 = time.time()
    with mp.Pool(cores, initializer=_init, initargs=(tok_dir,)) as pool:
        hf_chat_tokens = sum(pool.map(_chat_ids, chunks))
    hf_chat_s = time.time() - t0
    sw_chat_s, sw_chat_tokens, rss_small, log = swift(run, plan, tok_dir, chat)

    cache = f"{out}/cache"
    subprocess.run(["rm", "-rf", cache])
    swift(run, plan, tok_dir, chat, cache)
    sw_cached_s, _, _, cached_log = swift(run, plan, tok_dir, chat, cache)

    big = f"{out}/big.jsonl"
    with open(big, "wb") as f:
        data = open(chat, "rb").read()
        for _ in range(copies):
            f.write(data)
    big_s, big_tokens, rss_big, big_log = swift(run, plan, tok_dir, big)
    os.remove(big)

    def row(name, hs, ht, ss, st):
        print(f"{name:<6} HF {ht / hs / 1e6:7.2f} M tokens/s ({hs:6.2f} s)   "
              f"swift {st / ss / 1e6:7.2f} M tokens/s ({ss:6.2f} s)   "
              f"swift/HF {(st / ss) / (ht / hs):5.2f}x")

    print(f"tokens: text HF {hf_text_tokens} swift {sw_text_tokens} (+1 EOS a sample: "
          f"{n}); chat HF {hf_chat_tokens} swift {sw_chat_tokens}")
    row("text", hf_text_s, hf_text_tokens, sw_text_s, sw_text_tokens)
    row("chat", hf_chat_s, hf_chat_tokens, sw_chat_s, sw_chat_tokens)
    print(f"cache  swift, the second run: {sw_cached_s:.2f} s ({cached_log[-1] if cached_log else ''})")
    print(f"memory swift peak RSS: {rss_small:.0f} MB on {size:.0f} MB; "
          f"{rss_big:.0f} MB on {size * copies / 1e3:.1f} GB ({big_tokens / big_s / 1e6:.2f} M tokens/s)")
    print("swift's lines:", *log[-2:], sep="\n  ")


if __name__ == "__main__":
    main()
