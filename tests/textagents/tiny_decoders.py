"""Tiny random decoders of the architectures that export to GGUF (llama, qwen2), with the tiny tokenizer.

Their weights are drawn wider than transformers' default (``initializer_range`` 0.2 instead of 0.02) so
that attention is peaked and position-dependent: a wrong Q/K row order or a swapped tensor changes the
logits by far more than float32 rounding. Grouped-query attention (4 heads, 2 key/value heads) so that K's
permutation differs from Q's.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import torch

from textagents.testing import ENV_VOCABULARY, save_model, train_tokenizer

ARCHITECTURES = ("llama", "qwen2")


def tiny_decoder(model_type: str, tokenizer: Any, seed: int = 0) -> Any:
    """A random ``LlamaForCausalLM`` (embeddings tied) or ``Qwen2ForCausalLM`` (untied; Q/K/V biases)."""
    from transformers import LlamaConfig, LlamaForCausalLM, Qwen2Config, Qwen2ForCausalLM

    shape = {
        "vocab_size": len(tokenizer),
        "hidden_size": 64,
        "intermediate_size": 128,
        "num_hidden_layers": 2,
        "num_attention_heads": 4,
        "num_key_value_heads": 2,
        "max_position_embeddings": 4096,
        "initializer_range": 0.2,
        "eos_token_id": tokenizer.eos_token_id,
        "pad_token_id": tokenizer.pad_token_id,
        "bos_token_id": None,
    }
    build, config = {
        "llama": (LlamaForCausalLM, lambda: LlamaConfig(**shape, tie_word_embeddings=True)),
        "qwen2": (Qwen2ForCausalLM, lambda: Qwen2Config(**shape, tie_word_embeddings=False)),
    }[model_type]
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(seed)
        return build(config()).eval()


def save_tiny_decoder(path: Path, model_type: str, seed: int = 0) -> Path:
    """A tiny decoder and its tokenizer saved in ``path`` (a model folder ``--model`` takes)."""
    tokenizer = train_tokenizer(ENV_VOCABULARY)
    save_model(tiny_decoder(model_type, tokenizer, seed), tokenizer, path)
    return path
