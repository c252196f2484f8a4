"""Potential-based reward shaping as the background-knowledge paper applies it, for any Gymnasium env and
agent: r' = scale·r + γΦ(s') − Φ(s), with Φ divided by a running standard deviation of the potentials seen.

``terminal="original"`` (default, faithful): Φ(s') of a terminal state is used as is. ``terminal="masked"``:
Φ(s') = 0 when the episode terminates (Ng et al.'s form, which leaves the optimal policy unchanged); the
original's form pays γΦ(s_T) at the end, so an agent can prefer ending in a high-potential state to
finishing the task. Truncation (a time limit) is not termination: both forms keep Φ(s') there.

The potential is called with the observation and the env's ``info``, plus ``info["action"]``: the action
that led to the observation (absent after a reset), for potentials over (action, observation) snippets.
``info`` gains ``potential`` (Φ(s') normalised), ``shaping`` (γΦ(s') − Φ(s)) and ``env_reward``.
"""

from __future__ import annotations

import numbers
from collections.abc import Callable
from typing import Any

import gymnasium as gym
import numpy as np

TERMINAL_MODES = ("original", "masked")
Potential = Callable[[Any, dict[str, Any]], float]
#: The largest |Φ| taken as a potential; larger values, like non-finite ones, are replaced by 0 and counted.
MAX_ABS_PHI = 1e6


def valid_potential(value: Any) -> bool:
    """Whether ``value`` is a real number (not a bool) with ``|value| <= MAX_ABS_PHI`` (NaN is not)."""
    return isinstance(value, numbers.Real) and not isinstance(value, bool) and abs(value) <= MAX_ABS_PHI


class RunningStd:
    """Welford's running variance; ``std`` is 1 until two values are seen (and never below ``floor``)."""

    def __init__(self, floor: float = 1e-4):
        self.count, self.mean, self.m2, self.floor = 0, 0.0, 0.0, floor

    def update(self, value: float) -> None:
        self.count += 1
        delta = value - self.mean
        self.mean += delta / self.count
        self.m2 += delta * (value - self.mean)

    @property
    def std(self) -> float:
        if self.count < 2:
            return 1.0
        return max(self.floor, float(np.sqrt(self.m2 / (self.count - 1))))


class PotentialShaping(gym.Wrapper):
    def __init__(
        self,
        env: gym.Env,
        potential: Potential,
        gamma: float = 0.99,
        reward_scale: float = 10.0,
        terminal: str = "original",
        normalize: bool = True,
    ):
        super().__init__(env)
        if terminal not in TERMINAL_MODES:
            raise ValueError(f"terminal must be one of {list(TERMINAL_MODES)}, got {terminal!r}")
        if not 0 < gamma <= 1:
            raise ValueError(f"gamma must be in (0, 1], got {gamma}")
        self.potential, self.gamma, self.reward_scale = potential, gamma, reward_scale
        self.terminal, self.normalize = terminal, normalize
        self.stats = RunningStd()
        self.last = 0.0
        self.invalid_potentials = 0

    def _phi(self, obs: Any, info: dict[str, Any]) -> float:
        raw = float(self.potential(obs, info))
        if not valid_potential(raw):
            raw = 0.0
            self.invalid_potentials += 1
        if not self.normalize:
            return raw
        self.stats.update(raw)
        return raw / self.stats.std

    def reset(self, *, seed: int | None = None, options: dict[str, Any] | None = None):
        obs, info = self.env.reset(seed=seed, options=options)
        self.last = self._phi(obs, info)
        return obs, {**info, "potential": self.last}

    def step(self, action: Any):
        obs, reward, terminated, truncated, info = self.env.step(action)
        phi = self._phi(obs, {**info, "action": action})
        following = 0.0 if terminated and self.terminal == "masked" else phi
        shaping = self.gamma * following - self.last
        self.last = phi
        info = {**info, "potential": phi, "shaping": shaping, "env_reward": float(reward)}
        return obs, self.reward_scale * float(reward) + shaping, terminated, truncated, info
