"""What BK-Code, BK-Goal and BK-Pref have in common, so that the method wires any of them the same way: the
LLM's background knowledge is asked for once (``label``), kept in the run and in checkpoints, and turned
into a potential Φ(observation, info) that ``PotentialShaping`` adds to PPO's reward."""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Callable
from pathlib import Path
from typing import Any

import torch

from textagents.llm.base import LLMBackend
from textagents.methods.bk.config import BKConfig
from textagents.methods.bk.shaping import Potential


class Knowledge(ABC):
    """One kind of background knowledge and the potential built from it.

    ``label()`` asks the LLM (``llm()``: the run's recorded backend), keeps what it gave, writes it into
    ``run_dir`` for reading and returns the labelling's metrics; ``state()`` / ``tensors()`` are what a
    checkpoint keeps of it and ``restore`` loads them; ``potential()`` is Φ (built on first use; None when
    the LLM gave nothing usable, and the run is PPO alone); ``history`` is how many of the episode's earlier
    steps Φ is shown (``info["history"]``); ``metrics()`` are its running counts, logged every iteration;
    ``close()`` releases what Φ holds (a process, a model).
    """

    history = 0

    def __init__(self, config: BKConfig, run_dir: Path, llm: Callable[[], LLMBackend]):
        self.config = config
        self.run_dir = run_dir
        self.llm = llm

    @abstractmethod
    def label(self) -> dict[str, float]: ...

    @abstractmethod
    def state(self) -> dict[str, Any]: ...

    def tensors(self) -> dict[str, torch.Tensor]:
        return {}

    @abstractmethod
    def restore(self, state: dict[str, Any], tensors: dict[str, torch.Tensor]) -> None: ...

    @abstractmethod
    def potential(self) -> Potential | None: ...

    def metrics(self) -> dict[str, float]:
        return {}

    def close(self) -> None:  # noqa: B027  (optional hook: not every potential holds something)
        """Release what the potential holds."""
