"""An optimizer's state (Adam's moments and step counts) as named tensors, for safetensors checkpoints."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import torch


def optimizer_tensors(optimizer: torch.optim.Optimizer, prefix: str = "") -> dict[str, torch.Tensor]:
    """``{prefix}{param index}.{key}`` -> tensor for every entry of ``optimizer.state_dict()["state"]``, on the
    CPU (they may cross to another process)."""
    return {
        f"{prefix}{index}.{key}": torch.as_tensor(value).detach().cpu().clone()
        for index, moments in optimizer.state_dict()["state"].items()
        for key, value in moments.items()
    }


def load_optimizer_tensors(
    optimizer: torch.optim.Optimizer, tensors: Mapping[str, torch.Tensor], prefix: str = ""
) -> None:
    """Restore what ``optimizer_tensors`` saved (entries without ``prefix`` are ignored)."""
    moments: dict[int, dict[str, Any]] = {}
    for name, value in tensors.items():
        if name.startswith(prefix):
            index, key = name[len(prefix) :].split(".", 1)
            moments.setdefault(int(index), {})[key] = value.clone()
    if moments:
        full = optimizer.state_dict()
        full["state"] = moments
        optimizer.load_state_dict(full)
