#!/usr/bin/env python3
"""Chat fine-tuning end to end against transformers (issue 29 item 12).

  chat_e2e.py data OUT N_TRAIN N_EVAL   writes OUT/train.jsonl, OUT/eval.jsonl:
        generated multilingual chat conversations ("messages"), deterministic
        (seed 0): 1-3 user/assistant exchanges, half with a system prompt,
        words drawn from English, Chinese, Arabic, Hindi, Russian and emoji
        lists; the assistant answers the user's words in reverse order, so
        that the loss can fall
  chat_e2e.py check OUT                 loads OUT/export (swift-run
        --export-hf) with transformers' AutoTokenizer and
        AutoModelForCausalLM as they are, and checks against swift-run:
        - the ids of every eval conversation: apply_chat_template(messages,
          tokenize=True) against swift-run --inspect-data's (OUT/inspect.jsonl);
        - the eval loss: the mean cross-entropy over every trained (label)
          token of the eval set, computed by transformers on swift-run's ids
          and labels one conversation at a time (bf16 weights, fp32 loss),
          against the eval_loss of swift-run's last metrics line.
        Prints both and their difference; exit 1 when the ids differ or the
        losses differ by more than 1e-3.
Runs on the GPU machine (transformers, torch); chat_e2e.sh drives it.
"""
import json
import random
import sys

WORDS = {
    "en": "the quick brown fox jumps over a lazy dog while seven wizards quietly "
          "box jumping frogs near river bank at dawn".split(),
    "zh": "我们 今天 天气 很好 学习 机器 模型 数据 训练 中文 北京 上海 朋友 时间".split(),
    "ar": "مرحبا كيف حالك اليوم كتاب مدرسة بيت شمس قمر ماء سماء صديق".split(),
    "hi": "नमस्ते आप कैसे हैं आज मौसम अच्छा किताब पानी घर दोस्त समय".split(),
    "ru": "привет как дела сегодня погода хорошая книга вода дом друг время".split(),
    "emoji": ["👋", "🙂", "👩‍💻", "👍🏽", "🎉", "🇯🇵", "❤️", "🚀"],
}
SYSTEMS = ["You are a helpful assistant.", "Answer briefly.", "你是一个有用的助手。",
           "Reply with the words reversed."]


def conversation(rng):
    msgs = []
    if rng.random() < 0.5:
        msgs.append({"role": "system", "content": rng.choice(SYSTEMS)})
    for _ in range(rng.randint(1, 3)):
        lang = rng.choice(list(WORDS))
        words = [rng.choice(WORDS[lang]) for _ in range(rng.randint(3, 40))]
        if rng.random() < 0.2:
            words.append(str(rng.randint(0, 10**6)))
        msgs.append({"role": "user", "content": " ".join(words)})
        msgs.append({"role": "assistant", "content": " ".join(reversed(words))})
    return {"messages": msgs}


def data(out, n_train, n_eval):
    rng = random.Random(0)
    for name, n in (("train", n_train), ("eval", n_eval)):
        with open(f"{out}/{name}.jsonl", "w") as f:
            for _ in range(n):
                f.write(json.dumps(conversation(rng), ensure_ascii=False) + "\n")


def check(out):
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer
    tok = AutoTokenizer.from_pretrained(f"{out}/export")
    model = AutoModelForCausalLM.from_pretrained(f"{out}/export", dtype=torch.bfloat16).cuda().eval()
    convs = [json.loads(l) for l in open(f"{out}/eval.jsonl")]
    inspected = [json.loads(l) for l in open(f"{out}/inspect.jsonl")]
    assert len(inspected) == len(convs), (len(inspected), len(convs))
    bad = 0
    total, count = 0.0, 0
    for c, s in zip(convs, inspected):
        ids = tok.apply_chat_template(c["messages"], tokenize=True)
        if hasattr(ids, "input_ids") or isinstance(ids, dict):
            ids = ids["input_ids"]
        if list(ids) != s["input_ids"]:
            bad += 1
            if bad <= 3:
                print("ids differ:", json.dumps(c, ensure_ascii=False)[:200])
        x = torch.tensor([s["input_ids"]], device="cuda")
        y = torch.tensor([s["labels"]], device="cuda")
        with torch.no_grad():
            logits = model(x).logits.float()
        # HF's causal-LM shift: position k predicts labels[k+1].
        lp = torch.nn.functional.cross_entropy(logits[0, :-1], y[0, 1:], ignore_index=-100,
                                               reduction="sum")
        total += lp.item()
        count += int((y[0, 1:] != -100).sum())
    hf = total / count
    metrics = [json.loads(l) for l in open(f"{out}/metrics.jsonl")]
    swift = [m["eval_loss"] for m in metrics if "eval_loss" in m][-1]
    print(f"eval conversations {len(convs)}, trained tokens {count}, ids differing {bad}")
    print(f"eval_loss swift-run {swift:.6f}  transformers {hf:.6f}  diff {abs(swift - hf):.2e}")
    sys.exit(1 if bad or abs(swift - hf) > 1e-3 else 0)


if __name__ == "__main__":
    if sys.argv[1] == "data":
        data(sys.argv[2], int(sys.argv[3]), int(sys.argv[4]))
    elif sys.argv[1] == "check":
        check(sys.argv[2])
    else:
        sys.exit(__doc__)
