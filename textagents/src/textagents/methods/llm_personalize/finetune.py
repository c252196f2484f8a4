"""Supervised fine-tuning of the planner on chat pairs with ``trl``'s SFT trainer (LoRA through ``peft`` by
default, full fine-tuning as an option), as LLM-Personalize's imitation and self-training steps do.

A pair's prompt is rendered exactly as ``TransformersBackend.chat`` renders it at inference (the model's chat
template, or a plain transcript for models without one) and the loss is on the assistant's plan only. The
result is saved as a plain transformers model (LoRA merged) with safetensors weights, loadable by every
backend and by ``textagents serve``; with LoRA, the trained adapter itself is saved beside it in ``adapter/``
(peft's ``adapter_config.json`` and ``adapter_model.safetensors``). The folder is written aside and renamed
into place: a reader sees the whole model or none.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from textenvs.core.files import staged_folder

Pair = list[dict[str, str]]
#: The subfolder of a fine-tuned model that holds the LoRA adapter trained in that round.
ADAPTER = "adapter"


@dataclass(frozen=True)
class FinetuneSettings:
    """``epochs``, ``learning_rate``, ``batch_size``, ``lora`` (False: full fine-tuning), ``lora_r``,
    ``max_length`` (tokens per example), ``seed``; ``micro_batch`` examples a forward and backward pass (None:
    the whole batch), their gradients accumulated into the batch's update: the same update, less memory (a
    150k-token vocabulary's logits are ~0.6 GB an example of 1,024 tokens). No gradient checkpointing; the
    device and the precision are the backend's (``sft_precision``)."""

    epochs: float = 1.0
    learning_rate: float = 2e-4
    batch_size: int = 4
    micro_batch: int | None = None
    lora: bool = True
    lora_r: int = 8
    max_length: int = 1024
    seed: int = 0


def sft_examples(backend: Any, pairs: list[Pair]) -> list[dict[str, str]]:
    """Prompt/completion examples: the system and user messages as the backend renders them, the plan."""
    eos = backend.tokenizer.eos_token or ""
    return [{"prompt": backend.chat_prompt(pair[:2]), "completion": pair[2]["content"] + eos} for pair in pairs]


def sft_precision(backend: Any) -> dict[str, bool]:
    """The trainer's device and precision settings for ``backend``'s model: the CPU without mixed precision
    (as before there were GPUs), or its GPU with bf16 when the model is in bfloat16. A float16 model cannot be
    trained so (fp16 needs float32 master weights): a ``ValueError`` naming what works."""
    import torch

    dtype = backend.model.dtype
    if dtype == torch.float16:
        raise ValueError("dtype float16 cannot be fine-tuned (fp16 training needs float32 weights): use bfloat16")
    return {"use_cpu": backend.device.type == "cpu", "bf16": dtype == torch.bfloat16, "fp16": False}


def finetune(backend: Any, pairs: list[Pair], out: str | Path, settings: FinetuneSettings) -> dict[str, float]:
    """Fine-tune ``backend``'s model (a ``TransformersBackend``) on ``pairs``; save it into ``out``.

    Returns the training loss of the first and last logged steps. ``backend.model`` is the fine-tuned
    model afterwards (merged), so the same backend plans with it.
    """
    from datasets import Dataset
    from peft import LoraConfig
    from trl import SFTConfig, SFTTrainer

    if not pairs:
        raise ValueError("no pairs to fine-tune on")
    micro_batch = settings.micro_batch or settings.batch_size
    if settings.batch_size % micro_batch:
        raise ValueError(f"micro_batch must divide batch_size ({settings.batch_size}), got {micro_batch}")
    out = Path(out)
    peft_config = (
        LoraConfig(r=settings.lora_r, lora_alpha=2 * settings.lora_r, task_type="CAUSAL_LM") if settings.lora else None
    )
    with staged_folder(out) as staged:
        config = SFTConfig(
            output_dir=str(staged / "trainer"),
            num_train_epochs=settings.epochs,
            learning_rate=settings.learning_rate,
            per_device_train_batch_size=micro_batch,
            gradient_accumulation_steps=settings.batch_size // micro_batch,
            max_length=settings.max_length,
            **sft_precision(backend),
            gradient_checkpointing=False,
            report_to=[],
            save_strategy="no",
            logging_steps=1,
            seed=settings.seed,
            completion_only_loss=True,
            dataset_num_proc=None,
        )
        backend.model.train()
        trainer = SFTTrainer(
            model=backend.model,
            args=config,
            train_dataset=Dataset.from_list(sft_examples(backend, pairs)),
            processing_class=backend.tokenizer,
            peft_config=peft_config,
        )
        trainer.train()
        losses = [entry["loss"] for entry in trainer.state.log_history if "loss" in entry]
        if settings.lora:
            trainer.model.save_pretrained(staged / ADAPTER, safe_serialization=True)
        model = trainer.model.merge_and_unload() if settings.lora else trainer.model
        model.eval()
        model.save_pretrained(staged, safe_serialization=True)
        backend.tokenizer.save_pretrained(staged)
    backend.model = model
    first, last = (losses[0], losses[-1]) if losses else (math.nan, math.nan)
    return {"loss_first": float(first), "loss_last": float(last), "examples": float(len(pairs))}
