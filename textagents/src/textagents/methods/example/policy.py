"""A tabular softmax policy over an env's commands, keyed by the text observation, with an optional prior."""

from __future__ import annotations

from collections.abc import Callable, Sequence

import numpy as np


class TabularPolicy:
    """``pi(a | s) = softmax(theta[s] + prior_weight * prior(s))``; ``prior(s)`` (e.g. an LLM's log-probs of
    the commands) is computed once per observation and kept."""

    def __init__(
        self, commands: Sequence[str], prior: Callable[[str], np.ndarray] | None = None, prior_weight: float = 0.0
    ):
        self.commands = list(commands)
        self.prior = prior
        self.prior_weight = prior_weight
        self.theta: dict[str, np.ndarray] = {}
        self.priors: dict[str, np.ndarray] = {}

    def _prior(self, observation: str) -> np.ndarray:
        if self.prior is None or self.prior_weight == 0:
            return np.zeros(len(self.commands))
        if observation not in self.priors:
            self.priors[observation] = np.asarray(self.prior(observation), dtype=np.float64)
        return self.priors[observation]

    def probabilities(self, observation: str) -> np.ndarray:
        logits = self.theta.get(observation, np.zeros(len(self.commands))) + self.prior_weight * self._prior(
            observation
        )
        exp = np.exp(logits - logits.max())
        return exp / exp.sum()

    def sample(self, observation: str, rng: np.random.Generator) -> int:
        return int(rng.choice(len(self.commands), p=self.probabilities(observation)))

    def reinforce(self, steps: Sequence[tuple[str, int]], advantage: float, learning_rate: float) -> None:
        """theta[s] += lr * advantage * (onehot(a) - pi(s)) for every (s, a) of an episode."""
        for observation, action in steps:
            gradient = -self.probabilities(observation)
            gradient[action] += 1.0
            row = self.theta.setdefault(observation, np.zeros(len(self.commands)))
            row += learning_rate * advantage * gradient
