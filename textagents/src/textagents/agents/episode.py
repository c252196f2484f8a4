"""Playing one episode with an agent of the protocol (``observe`` included) and recording what happened."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import gymnasium as gym

from textagents.agents.base import Agent
from textenvs.core.episode import run_episode


@dataclass
class EpisodeRecord:
    """One episode: return, length, success, invalid actions seen by the env, the env's metrics, and the
    agent's own counters (e.g. an LLM agent's parse misses) when it keeps ``stats``."""

    agent: str
    params: dict[str, Any]
    seed: int | None
    episode_return: float = 0.0
    steps: int = 0
    success: bool = False
    ended: bool = False
    invalid_actions: int = 0
    metrics: dict[str, Any] = field(default_factory=dict)
    agent_stats: dict[str, int] = field(default_factory=dict)


def play_episode(env: gym.Env, agent: Agent, seed: int | None = None, max_steps: int = 100_000) -> EpisodeRecord:
    """Reset ``env`` with ``seed`` and let ``agent`` play until the episode ends or ``max_steps`` steps."""
    result = run_episode(env, agent, seed=seed, step_limit=max_steps)
    return EpisodeRecord(
        agent=agent.uid,
        params=dict(agent.params),
        seed=seed,
        episode_return=result.episode_return,
        steps=result.steps,
        success=result.success,
        ended=result.ended,
        invalid_actions=result.invalid_actions,
        metrics=result.metrics,
        agent_stats=dict(getattr(agent, "stats", {})),
    )
