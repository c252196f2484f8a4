"""Playing one episode with an agent of the protocol (``observe`` included) and recording what happened."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import gymnasium as gym

from textagents.agents.base import Agent, observe


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
    record = EpisodeRecord(agent.uid, dict(agent.params), seed)
    obs, info = env.reset(seed=seed)
    agent.reset(obs, info)
    while record.steps < max_steps:
        action = agent.act(obs, info)
        obs, reward, terminated, truncated, info = env.step(action)
        observe(agent, float(reward), terminated, truncated, info)
        record.steps += 1
        record.episode_return += float(reward)
        record.invalid_actions += bool(info.get("invalid_action"))
        if terminated or truncated:
            record.ended = True
            record.metrics = dict(info.get("episode_metrics", {}))
            break
    record.success = bool(info.get("success", False))
    record.agent_stats = dict(getattr(agent, "stats", {}))
    return record
