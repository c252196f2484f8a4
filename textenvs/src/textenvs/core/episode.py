"""Running one episode of an env with a policy that follows the expert/agent protocol."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import gymnasium as gym

from textenvs.core.expert import Expert


@dataclass
class EpisodeResult:
    """What one episode produced; ``ended`` is False when ``step_limit`` stopped it first."""

    episode_return: float = 0.0
    steps: int = 0
    success: bool = False
    ended: bool = False
    invalid_actions: int = 0
    first_invalid: tuple[int, Any] | None = None
    metrics: dict[str, Any] = field(default_factory=dict)


def run_episode(env: gym.Env, policy: Expert, seed: int | None = None, step_limit: int = 100_000) -> EpisodeResult:
    """Play one episode from ``env.reset(seed=seed)``; stop at its end or after ``step_limit`` steps.

    A policy that defines ``observe(reward, terminated, truncated, info)`` (agents that learn or keep
    history) is told the outcome of every step.
    """
    result = EpisodeResult()
    observe = getattr(policy, "observe", None)
    obs, info = env.reset(seed=seed)
    policy.reset(obs, info)
    while result.steps < step_limit:
        action = policy.act(obs, info)
        obs, reward, terminated, truncated, info = env.step(action)
        if observe is not None:
            observe(float(reward), terminated, truncated, info)
        result.steps += 1
        result.episode_return += float(reward)
        if info.get("invalid_action"):
            result.invalid_actions += 1
            result.first_invalid = result.first_invalid or (result.steps - 1, action)
        if terminated or truncated:
            result.ended = True
            result.metrics = dict(info.get("episode_metrics", {}))
            break
    result.success = bool(info.get("success", False))
    return result
