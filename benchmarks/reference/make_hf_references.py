#!/usr/bin/env python3
"""Tiny HF model directories and what transformers computes on them.

Runs on the GPU machine (transformers + torch), on its CPU in fp32 so the
numbers are exact and reproducible; writes, under OUT (default
test/data/hf):
  <name>/config.json + safetensors   save_pretrained of a random tiny model
                                     (llama untied with Llama-3.1's rope
                                     scaling, qwen2 tied with q/k/v biases,
                                     qwen3 with q/k norms, mistral with
                                     linear rope scaling; llama-sharded: the
                                     llama in 3 shards)
  batch.jsonl                        the samples every step reads, in order
  expected.json                      per model: loss and grad norm of each
                                     of 3 AdamW steps, and the settings

The training loop is what an HF Trainer user gets: AdamW (decoupled weight
decay on every parameter), the loss averaged over the global batch's trained
tokens (labels = input_ids, shifted inside the model), the grad norm of
torch.nn.utils.clip_grad_norm_ (max_grad_norm 1.0, so clipping acts).
CI (test/hf-reference.test) runs swift-run on the same directories and data
and compares.
"""
import json
import os
import sys

import torch
from transformers import AutoConfig, AutoModelForCausalLM

OUT = sys.argv[1] if len(sys.argv) > 1 else "test/data/hf"
SEQ, BATCH, STEPS = 16, 4, 3
LR, BETAS, EPS, WD, MAX_NORM = 1e-3, (0.9, 0.95), 1e-8, 0.1, 1.0
VOCAB = 256

COMMON = dict(hidden_size=64, intermediate_size=128, num_hidden_layers=2,
              num_attention_heads=4, num_key_value_heads=2, vocab_size=VOCAB,
              max_position_embeddings=128, rms_norm_eps=1e-5,
              hidden_act="silu", initializer_range=0.02)
MODELS = {
    "llama": dict(model_type="llama", tie_word_embeddings=False,
                  attention_bias=False, mlp_bias=False),
    "qwen2": dict(model_type="qwen2", tie_word_embeddings=True,
                  use_sliding_window=False),
    "qwen3": dict(model_type="qwen3", tie_word_embeddings=True, head_dim=16,
                  attention_bias=False, use_sliding_window=False),
    "mistral": dict(model_type="mistral", tie_word_embeddings=False,
                    sliding_window=None),
}
# rope_theta and rope scaling per model. The llama's is Llama-3.1's scheme
# with the original context shrunk to 32 positions, so that at head_dim 16
# one frequency is kept, one smoothed and the rest divided by the factor.
ROPE = {
    "llama": (10000.0, dict(rope_type="llama3", factor=8.0, low_freq_factor=1.0,
                            high_freq_factor=4.0,
                            original_max_position_embeddings=32)),
    "qwen2": (1000000.0, None),
    "qwen3": (1000000.0, None),
    "mistral": (10000.0, dict(rope_type="linear", factor=2.0)),
}


def set_rope(config, theta, scaling):
    """transformers 5 keeps theta and scaling in rope_parameters; 4 in
    rope_theta and rope_scaling."""
    if hasattr(config, "rope_parameters"):
        config.rope_parameters = dict(rope_theta=theta,
                                      **(scaling or dict(rope_type="default")))
    else:
        config.rope_theta = theta
        config.rope_scaling = scaling


def batch_samples():
    """STEPS x BATCH samples of SEQ token ids from a fixed LCG."""
    x, out = 12345, []
    for _ in range(STEPS * BATCH):
        ids = []
        for _ in range(SEQ):
            x = (1103515245 * x + 12345) % (1 << 31)
            ids.append(x % VOCAB)
        out.append(ids)
    return out


def train(model, samples):
    opt = torch.optim.AdamW(model.parameters(), lr=LR, betas=BETAS, eps=EPS,
                            weight_decay=WD)
    losses, norms = [], []
    for step in range(STEPS):
        ids = torch.tensor(samples[step * BATCH:(step + 1) * BATCH])
        # Mean over the batch's SEQ-1 targets per sample, as one batch.
        loss = model(input_ids=ids, labels=ids).loss
        loss.backward()
        norm = torch.nn.utils.clip_grad_norm_(model.parameters(), MAX_NORM)
        opt.step()
        opt.zero_grad(set_to_none=True)
        losses.append(loss.item())
        norms.append(norm.item())
    return losses, norms


def main():
    torch.manual_seed(0)
    os.makedirs(OUT, exist_ok=True)
    samples = batch_samples()
    with open(os.path.join(OUT, "batch.jsonl"), "w") as f:
        for ids in samples:
            f.write(json.dumps({"input_ids": ids}) + "\n")
    expected = {"settings": dict(sequence_length=SEQ, global_batch_size=BATCH,
                                 steps=STEPS, lr=LR, betas=list(BETAS),
                                 eps=EPS, weight_decay=WD,
                                 max_grad_norm=MAX_NORM,
                                 transformers=__import__("transformers").__version__,
                                 torch=torch.__version__),
                "models": {}}
    for name, extra in list(MODELS.items()) + [("llama-sharded", None)]:
        kind = "llama" if extra is None else name
        cfg = dict(COMMON, **MODELS[kind])
        model_type = cfg.pop("model_type")
        config = AutoConfig.for_model(model_type, **cfg)
        set_rope(config, *ROPE[kind])
        torch.manual_seed(0)  # llama-sharded is the llama, in shards
        model = AutoModelForCausalLM.from_config(
            config, torch_dtype=torch.float32, attn_implementation="eager")
        model.eval()  # no dropout anywhere (the configs have none either)
        path = os.path.join(OUT, name)
        model.save_pretrained(path, safe_serialization=True,
                              max_shard_size="150KB" if extra is None else "5GB")
        losses, norms = train(model, samples)
        expected["models"][name] = dict(losses=losses, grad_norms=norms)
        print(name, losses, norms)
    with open(os.path.join(OUT, "expected.json"), "w") as f:
        json.dump(expected, f, indent=1)
        f.write("\n")


if __name__ == "__main__":
    main()
