"""Where a method's models run and in what precision: the ``device`` and ``dtype`` settings, checked and resolved.

``device``: ``auto`` (CUDA when ``torch.cuda.is_available()``, else the CPU), ``cpu``, ``cuda`` or ``cuda:N``.
``dtype``: ``auto`` (bfloat16 on CUDA, float32 on the CPU), ``float32``, ``bfloat16`` or ``float16``; it is the
precision of the LLMs (their weights when they only score and generate, autocast when they are trained); the
small RL networks (DQN, PPO, DRRN, the decision transformer) stay float32 whatever it says.
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # torch is imported where a setting is resolved: checking a config needs no torch
    import torch

DEVICES = ("auto", "cpu", "cuda", "cuda:N")
DTYPE_CHOICES = ("auto", "float32", "bfloat16", "float16")
_CUDA_INDEX = re.compile(r"cuda:(\d+)")


class DeviceError(ValueError):
    """A bad ``device`` or ``dtype`` value, or a device this machine does not have."""


def check_device(value: object) -> str:
    """``value`` when it is a valid ``device`` setting (without looking at this machine's GPUs)."""
    if not isinstance(value, str) or not (value in ("auto", "cpu", "cuda") or _CUDA_INDEX.fullmatch(value)):
        raise DeviceError(f"device must be one of {', '.join(DEVICES)}; got {value!r}")
    return value


def check_dtype(value: object) -> str:
    """``value`` when it is a valid ``dtype`` setting."""
    if value not in DTYPE_CHOICES:
        raise DeviceError(f"dtype must be one of {', '.join(DTYPE_CHOICES)}; got {value!r}")
    return str(value)


def resolve_device(value: str = "auto") -> torch.device:
    """The torch device ``value`` names on this machine; a ``DeviceError`` for a GPU it does not have."""
    import torch

    check_device(value)
    if value == "auto":
        return torch.device("cuda" if torch.cuda.is_available() else "cpu")
    if value == "cpu":
        return torch.device("cpu")
    if not torch.cuda.is_available():
        raise DeviceError(f"device {value!r}: this machine has no CUDA GPU torch can use (use cpu or auto)")
    if value == "cuda":
        return torch.device("cuda")
    index, count = int(value.split(":")[1]), torch.cuda.device_count()
    if index >= count:
        raise DeviceError(f"device {value!r}: this machine has {count} CUDA GPU(s), cuda:0 to cuda:{count - 1}")
    return torch.device("cuda", index)


def resolve_dtype(value: str, device: torch.device) -> torch.dtype:
    """The precision ``value`` names; ``auto``: bfloat16 on CUDA, float32 elsewhere."""
    import torch

    check_dtype(value)
    if value == "auto":
        return torch.bfloat16 if device.type == "cuda" else torch.float32
    return getattr(torch, value)


def rank_device(device: torch.device, rank: int) -> torch.device:
    """The device of process ``rank`` of several that share ``device``'s setting: on CUDA each process gets its
    own GPU, from ``device``'s index on (NCCL refuses two processes on one GPU); on the CPU all share it."""
    import torch

    if device.type != "cuda":
        return device
    index = (device.index or 0) + rank
    count = torch.cuda.device_count()
    if index >= count:
        raise DeviceError(f"LLM process {rank} needs cuda:{index}, but this machine has {count} CUDA GPU(s)")
    return torch.device("cuda", index)


def autocast(device: torch.device, dtype: torch.dtype):
    """Mixed precision in ``dtype`` for a trained model's forward passes (nothing when ``dtype`` is float32).
    Without autocast's cache of the weights' casts: it lasts the whole region and knows nothing of in-place
    writes, so after an optimizer step inside the region (GLAM's update: epochs × minibatches of steps) every
    forward pass would still compute with the weights the region began with."""
    import torch

    return torch.autocast(device.type, dtype=dtype, enabled=dtype != torch.float32, cache_enabled=False)
