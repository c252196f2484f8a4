"""LoRA adapter folders as peft saves them: ``adapter_config.json`` and ``adapter_model.safetensors``.

``read_adapter`` checks a folder before anything is loaded from it: JSON and safetensors only (no pickle: reading
them runs no code), a plain LoRA (low-rank ``lora_A``/``lora_B`` weights; no DoRA, no whole modules saved, no
per-layer ranks). ``stack_adapters`` writes one adapter equal to several applied together: each LoRA adds
``scale · B·A`` to a weight, so the rows of the ``A``s and the columns of the scaled ``B``s side by side give
their sum, of rank the sum of their ranks (scale 1: ``lora_alpha`` = ``r``). LLM-Personalize trains each round's
LoRA on the weights merged with the rounds before, so the stack of its rounds' adapters on the base model is the
fine-tuned model, as a server with runtime LoRA loading (vLLM) serves it.
"""

from __future__ import annotations

import json
import math
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from textenvs.core.files import staged_folder

ADAPTER_CONFIG = "adapter_config.json"
ADAPTER_WEIGHTS = "adapter_model.safetensors"
#: The prefix peft gives the weights of a saved adapter (the model wrapped in a ``PeftModel``).
WEIGHT_PREFIX = "base_model.model."
LORA_WEIGHTS = ("lora_A.weight", "lora_B.weight")
MAX_CONFIG_BYTES = 1_000_000
#: Settings that make an adapter more than plain LoRA: refused (neither stacked nor served).
UNSUPPORTED = ("use_dora", "modules_to_save", "rank_pattern", "alpha_pattern", "layers_to_transform", "lora_bias")


class AdapterError(ValueError):
    """A folder that is not a LoRA adapter this code can read: the message names the folder and the problem."""


@dataclass(frozen=True)
class LoraAdapter:
    """A checked adapter folder: its raw config, rank, the scale its ``B·A`` is multiplied by, target modules."""

    path: Path
    config: dict[str, Any]
    rank: int
    scale: float
    target_modules: tuple[str, ...]

    @property
    def weights(self) -> Path:
        return self.path / ADAPTER_WEIGHTS


def read_adapter(path: str | Path) -> LoraAdapter:
    """The adapter in folder ``path``; ``AdapterError`` unless it is a folder with ``adapter_config.json`` and
    ``adapter_model.safetensors`` holding a plain LoRA config."""
    path = Path(path)
    if not path.is_dir():
        raise AdapterError(f"{path} is not a folder: a LoRA adapter is a folder with {ADAPTER_CONFIG}")
    config_file = path / ADAPTER_CONFIG
    if not config_file.is_file():
        raise AdapterError(f"{path} has no {ADAPTER_CONFIG}: it is not a LoRA adapter folder")
    if not (path / ADAPTER_WEIGHTS).is_file():
        raise AdapterError(f"{path} has no {ADAPTER_WEIGHTS}: adapters are read from safetensors only")
    if config_file.stat().st_size > MAX_CONFIG_BYTES:
        raise AdapterError(f"{config_file} is over {MAX_CONFIG_BYTES} bytes: not an adapter config")
    try:
        config = json.loads(config_file.read_text(encoding="utf-8"))
    except (ValueError, UnicodeDecodeError) as error:
        raise AdapterError(f"{config_file} is not valid JSON: {error}") from error
    if not isinstance(config, dict) or config.get("peft_type") != "LORA":
        kind = config.get("peft_type") if isinstance(config, dict) else type(config).__name__
        raise AdapterError(f"{config_file}: peft_type must be 'LORA', got {kind!r}")
    rank, alpha, targets = config.get("r"), config.get("lora_alpha"), config.get("target_modules")
    if not isinstance(rank, int) or isinstance(rank, bool) or rank < 1:
        raise AdapterError(f"{config_file}: r must be a positive integer, got {rank!r}")
    if not isinstance(alpha, int | float) or isinstance(alpha, bool) or not math.isfinite(alpha):
        raise AdapterError(f"{config_file}: lora_alpha must be a number, got {alpha!r}")
    if not (isinstance(targets, list) and targets and all(isinstance(t, str) for t in targets)):
        raise AdapterError(f"{config_file}: target_modules must be a list of module names, got {targets!r}")
    unsupported = [key for key in UNSUPPORTED if config.get(key)]
    if unsupported:
        raise AdapterError(f"{config_file}: only plain LoRA adapters are read; {unsupported[0]} is set")
    scale = alpha / math.sqrt(rank) if config.get("use_rslora") else alpha / rank
    return LoraAdapter(path, config, rank, scale, tuple(targets))


def stack_adapters(folders: Sequence[str | Path], out: str | Path) -> LoraAdapter:
    """One adapter in ``out`` equal to the adapters of ``folders`` applied together (module docstring); they must
    adapt the same modules. Written aside and renamed into place."""
    import torch
    from safetensors.torch import load_file, save_file

    adapters = [read_adapter(folder) for folder in folders]
    if not adapters:
        raise ValueError("no adapters to stack")
    first = adapters[0]
    weights = [load_file(adapter.weights) for adapter in adapters]
    for adapter, tensors in zip(adapters[1:], weights[1:], strict=True):
        if set(adapter.target_modules) != set(first.target_modules) or tensors.keys() != weights[0].keys():
            raise AdapterError(f"{adapter.path} adapts other modules than {first.path}: they cannot be stacked")
    stacked = {}
    for key, tensor in weights[0].items():
        if not key.endswith(LORA_WEIGHTS):
            raise AdapterError(f"{first.weights}: {key!r} is not a LoRA weight (lora_A / lora_B)")
        if key.endswith("lora_A.weight"):
            parts = [tensors[key].float() for tensors in weights]
            stacked[key] = torch.cat(parts, dim=0).to(tensor.dtype)
        else:
            parts = [tensors[key].float() * adapter.scale for adapter, tensors in zip(adapters, weights, strict=True)]
            stacked[key] = torch.cat(parts, dim=1).to(tensor.dtype)
    rank = sum(adapter.rank for adapter in adapters)
    config = {**first.config, "r": rank, "lora_alpha": rank, "use_rslora": False}
    out = Path(out)
    with staged_folder(out) as staged:
        (staged / ADAPTER_CONFIG).write_text(json.dumps(config, indent=2) + "\n", encoding="utf-8")
        save_file({k: v.contiguous() for k, v in stacked.items()}, staged / ADAPTER_WEIGHTS)
    return read_adapter(out)
