"""Uniformly random choice among the admissible commands."""

from __future__ import annotations

from typing import Any

import numpy as np

from textagents.agents.base import admissible_commands


class RandomAgent:
    """Picks one of ``info["admissible_commands"]`` uniformly, from its own seeded generator."""

    uid = "random"

    def __init__(self, seed: int | None = None):
        self.seed = seed
        self.rng = np.random.default_rng(seed)

    @property
    def params(self) -> dict[str, Any]:
        return {"seed": self.seed}

    def reset(self, obs: Any, info: dict[str, Any]) -> None:
        pass

    def act(self, obs: Any, info: dict[str, Any]) -> str:
        commands = admissible_commands(info)
        return commands[int(self.rng.integers(len(commands)))]
