"""The models the benchmarks run: the one table every benchmark script imports.

Fields as in each model's config.json on the Hugging Face Hub, plus the plan
schema's bias/norm flags (attention_qkv_bias, attention_o_bias, qk_norm),
which follow from model_type. Each entry equals swift-plan's preset of the
same name (its C++ preset table); test/benchmarks/models-match-presets.test
fails when they differ. Standard library only: the CI test imports it.
"""

# config.json rope_scaling of Llama 3.2 and 3.1 (plan schema model.rope_scaling).
LLAMA32_ROPE = dict(rope_type="llama3", factor=32.0, low_freq_factor=1.0,
                    high_freq_factor=4.0, original_max_position_embeddings=8192)
LLAMA31_ROPE = dict(LLAMA32_ROPE, factor=8.0)

MODELS = {
    "qwen2.5-0.5b": dict(
        model_type="qwen2", hidden_size=896, intermediate_size=4864, num_hidden_layers=24,
        num_attention_heads=14, num_key_value_heads=2, head_dim=64, vocab_size=151936,
        tie_word_embeddings=True, rms_norm_eps=1e-6, rope_theta=1e6,
        attention_qkv_bias=True, attention_o_bias=False, qk_norm=False),
    "qwen2.5-1.5b": dict(
        model_type="qwen2", hidden_size=1536, intermediate_size=8960, num_hidden_layers=28,
        num_attention_heads=12, num_key_value_heads=2, head_dim=128, vocab_size=151936,
        tie_word_embeddings=True, rms_norm_eps=1e-6, rope_theta=1e6,
        attention_qkv_bias=True, attention_o_bias=False, qk_norm=False),
    "llama3.2-1b": dict(
        model_type="llama", hidden_size=2048, intermediate_size=8192, num_hidden_layers=16,
        num_attention_heads=32, num_key_value_heads=8, head_dim=64, vocab_size=128256,
        tie_word_embeddings=True, rms_norm_eps=1e-5, rope_theta=5e5,
        attention_qkv_bias=False, attention_o_bias=False, qk_norm=False,
        rope_scaling=LLAMA32_ROPE),
    "llama3.2-3b": dict(
        model_type="llama", hidden_size=3072, intermediate_size=8192, num_hidden_layers=28,
        num_attention_heads=24, num_key_value_heads=8, head_dim=128, vocab_size=128256,
        tie_word_embeddings=True, rms_norm_eps=1e-5, rope_theta=5e5,
        attention_qkv_bias=False, attention_o_bias=False, qk_norm=False,
        rope_scaling=LLAMA32_ROPE),
    "llama3.1-8b": dict(
        model_type="llama", hidden_size=4096, intermediate_size=14336, num_hidden_layers=32,
        num_attention_heads=32, num_key_value_heads=8, head_dim=128, vocab_size=128256,
        tie_word_embeddings=False, rms_norm_eps=1e-5, rope_theta=5e5,
        attention_qkv_bias=False, attention_o_bias=False, qk_norm=False,
        rope_scaling=LLAMA31_ROPE),
}

# hf_baseline.py's name for llama3.1-8b, which its cases and the committed
# calibration rows (test/data/calibration) carry.
ALIASES = {"llama3-8b": "llama3.1-8b"}


def preset(name):
    """The table's (and swift-plan's) name of a model a benchmark names."""
    return ALIASES.get(name, name)


def model(name):
    return MODELS[preset(name)]
