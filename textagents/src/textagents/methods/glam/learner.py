"""What every GLAM agent (the LLM policy, NPAE, DRRN, symbolic PPO) implements for the method's loop: train
on the next ``envs`` x ``frames_per_env`` frames, choose commands for evaluation, save and restore."""

from __future__ import annotations

from abc import ABC, abstractmethod
from typing import Any

import numpy as np
import torch

from textagents.methods.glam.config import GlamConfig
from textagents.methods.glam.episodes import Episodes, evaluate_policy, level_name


class Learner(ABC):
    def __init__(self, config: GlamConfig):
        self.config = config
        self.frames = 0
        self.episodes = 0

    @abstractmethod
    def train_frames(self, iteration: int) -> dict[str, float]:
        """Collect the iteration's frames and learn from them; returns the iteration's metrics."""

    @abstractmethod
    def choose(self, episodes: Episodes, indices: list[int], rng: np.random.Generator, greedy: bool) -> list[int]:
        """A command index for each env in ``indices``."""

    @abstractmethod
    def state(self) -> tuple[dict[str, Any], dict[str, torch.Tensor]]:
        """JSON-able state and named tensors: everything a resumed run needs."""

    @abstractmethod
    def restore(self, state: dict[str, Any], tensors: dict[str, torch.Tensor]) -> None: ...

    def evaluate(self, test_levels: bool = True) -> dict[str, Any]:
        """``eval_episodes`` on the training level and (``test_levels``) ``test_eval_episodes`` on each test
        level; success = return > 0."""
        result: dict[str, Any] = {"frames": self.frames}
        levels = [(self.config.env_id, "train_level", self.config.eval_episodes)]
        if test_levels:
            episodes = self.config.test_eval_episodes or self.config.eval_episodes
            levels += [(env_id, level_name(env_id), episodes) for env_id in self.config.test_env_ids]
        for env_id, label, episodes in levels:
            scores = evaluate_policy(
                self.choose,
                env_id,
                episodes,
                self.config.envs,
                self.config.max_steps,
                self.config.seed,
                self.config.eval_greedy,
                self.config.prompt_observations,
            )
            result.update({f"{label}/{k}": v for k, v in scores.items()})
        return result

    def close(self) -> None:  # noqa: B027  (learners without processes or envs to release)
        """Release processes and envs."""


def episode_stats(finished: list[tuple[float, bool]]) -> dict[str, float]:
    """Success rate and mean return of the episodes that ended during an iteration."""
    return {
        "success_rate": float(np.mean([ok for _, ok in finished])) if finished else float("nan"),
        "return": float(np.mean([r for r, _ in finished])) if finished else float("nan"),
    }
