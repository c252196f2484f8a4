"""Random LoRA adapters on the tiny causal model, saved as peft saves them, and the model they merge into."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import torch


def random_adapter(model_dir: Path, out: Path, seed: int, rank: int = 4, alpha: float = 8, rslora: bool = False) -> Any:
    """Save a LoRA adapter with random ``A`` and ``B`` for the model in ``model_dir`` into ``out``; return the
    model with it merged (``B`` is random, not zero as peft starts it, so the adapter changes the answers)."""
    from peft import LoraConfig, get_peft_model
    from transformers import AutoModelForCausalLM

    torch.manual_seed(seed)
    model = AutoModelForCausalLM.from_pretrained(model_dir)
    config = LoraConfig(r=rank, lora_alpha=alpha, use_rslora=rslora, task_type="CAUSAL_LM")
    wrapped = get_peft_model(model, config)
    with torch.no_grad():
        for name, parameter in wrapped.named_parameters():
            if "lora_B" in name:
                parameter.normal_(std=0.5)
    wrapped.save_pretrained(out)
    return wrapped.merge_and_unload().eval()


def logits(model: Any, text_ids: list[int]) -> torch.Tensor:
    with torch.no_grad():
        return model(input_ids=torch.tensor([text_ids])).logits[0]
