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
                                     of 3 AdamW steps, the weight decay
                                     the Trainer's optimizer gave each
                                     parameter, and the settings

The training is HF Trainer's own (transformers.Trainer.train, on the CPU):
its AdamW with its parameter groups (create_optimizer over
get_decay_parameter_names: no weight decay on biases and norm weights), the
loss averaged over the batch's trained tokens (labels = input_ids, shifted
inside the model), clipping at max_grad_norm 1.0 (so it acts), a constant
schedule, the samples in file order. Each step's loss is read where the
Trainer computes it (compute_loss), the grad norm from its log (the norm
before clipping). Existing model directories under OUT are reused (loaded),
so that regenerating the numbers does not change the committed weights.
CI (test/hf-reference.test) runs swift-run on the same directories and data
and compares.
"""
import json
import os
import sys

import tempfile

import torch
from transformers import (AutoConfig, AutoModelForCausalLM, Trainer,
                          TrainerCallback, TrainingArguments)

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


class Samples(torch.utils.data.Dataset):
    def __init__(self, samples):
        self.samples = samples

    def __len__(self):
        return len(self.samples)

    def __getitem__(self, i):
        ids = torch.tensor(self.samples[i])
        return {"input_ids": ids, "labels": ids.clone()}


class InOrder(Trainer):
    """The Trainer, with the samples in file order (its default sampler
    shuffles) and each step's loss recorded as computed."""

    losses = None

    def _get_train_sampler(self, *args, **kwargs):
        return torch.utils.data.SequentialSampler(self.train_dataset)

    def compute_loss(self, model, inputs, *args, **kwargs):
        out = super().compute_loss(model, inputs, *args, **kwargs)
        loss = out[0] if isinstance(out, tuple) else out
        self.losses.append(loss.detach().item())
        return out


class GradNorms(TrainerCallback):
    def __init__(self):
        self.norms = []

    def on_log(self, args, state, control, logs=None, **kwargs):
        if logs and "grad_norm" in logs:
            self.norms.append(float(logs["grad_norm"]))


def train(model, samples):
    """HF Trainer's training of `model` for STEPS steps; returns the losses,
    the grad norms and {parameter name: its optimizer group's weight
    decay}."""
    with tempfile.TemporaryDirectory() as out:
        args = TrainingArguments(
            output_dir=out, per_device_train_batch_size=BATCH,
            max_steps=STEPS, learning_rate=LR, adam_beta1=BETAS[0],
            adam_beta2=BETAS[1], adam_epsilon=EPS, weight_decay=WD,
            max_grad_norm=MAX_NORM, lr_scheduler_type="constant",
            warmup_steps=0, optim="adamw_torch", logging_steps=1,
            save_strategy="no", report_to=[], use_cpu=True, seed=0,
            dataloader_num_workers=0, remove_unused_columns=False,
            disable_tqdm=True)
        norms = GradNorms()
        trainer = InOrder(model=model, args=args,
                          train_dataset=Samples(samples[:STEPS * BATCH]),
                          callbacks=[norms])
        trainer.losses = []
        trainer.train()
        names = {id(p): n for n, p in model.named_parameters()}
        decay = {names[id(p)]: group["weight_decay"]
                 for group in trainer.optimizer.param_groups
                 for p in group["params"]}
    assert len(trainer.losses) == STEPS and len(norms.norms) == STEPS, (
        trainer.losses, norms.norms)
    return trainer.losses, norms.norms, decay


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
                                 trainer="transformers.Trainer",
                                 transformers=__import__("transformers").__version__,
                                 torch=torch.__version__),
                "models": {}}
    for name, extra in list(MODELS.items()) + [("llama-sharded", None)]:
        kind = "llama" if extra is None else name
        cfg = dict(COMMON, **MODELS[kind])
        model_type = cfg.pop("model_type")
        config = AutoConfig.for_model(model_type, **cfg)
        set_rope(config, *ROPE[kind])
        path = os.path.join(OUT, name)
        if os.path.exists(os.path.join(path, "config.json")):
            model = AutoModelForCausalLM.from_pretrained(
                path, dtype=torch.float32, attn_implementation="eager")
        else:
            torch.manual_seed(0)  # llama-sharded is the llama, in shards
            model = AutoModelForCausalLM.from_config(
                config, dtype=torch.float32, attn_implementation="eager")
            model.save_pretrained(path, safe_serialization=True,
                                  max_shard_size="150KB" if extra is None else "5GB")
        losses, norms, decay = train(model, samples)
        expected["models"][name] = dict(losses=losses, grad_norms=norms,
                                        weight_decay=decay)
        print(name, losses, norms,
              sorted(n for n, wd in decay.items() if wd == 0))
    with open(os.path.join(OUT, "expected.json"), "w") as f:
        json.dump(expected, f, indent=1)
        f.write("\n")


if __name__ == "__main__":
    main()
