"""What the LLM is shown: steps of a uniformly random policy on a BabyAI-Text level, each with the env's
own progress signal (how far the agent is from what the mission names), which BK-Pref's labels are
checked against."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import gymnasium as gym
import numpy as np

import textenvs  # noqa: F401  (registers the ids)
from textenvs.envs.babyai_text.env import COMMANDS


@dataclass(frozen=True)
class Step:
    """One step: the mission, the command that led here (None at an episode's start), the observation's
    text, the env's reward, and ``distance``: cells from the agent to the nearest object the mission
    names, 0 once the mission is done (None where the mission names no single object)."""

    mission: str
    action: str | None
    observation: str
    reward: float
    distance: int | None


def target_distance(level: Any) -> int | None:
    """Manhattan distance from minigrid ``level``'s agent to the nearest object its instruction names (0 when
    the agent carries one); None for instructions without one object description (sequences)."""
    description = getattr(level.instrs, "desc", None)
    if description is None:
        return None
    if level.carrying is not None and level.carrying in description.obj_set:
        return 0
    agent = np.asarray(level.agent_pos)
    places = [np.asarray(obj.cur_pos) for obj in description.obj_set if obj.cur_pos is not None]
    return min(int(np.abs(agent - place).sum()) for place in places) if places else None


def random_steps(env_id: str, count: int, seed: int, keep: float = 0.2) -> list[Step]:
    """``count`` steps of a random policy, each step kept with probability ``keep`` (so that they are spread
    over several episodes), reproducible from ``seed``."""
    env = gym.make(env_id, action_mode="discrete")
    level = env.unwrapped.level
    rng = np.random.default_rng(seed)
    obs, _ = env.reset(seed=seed)
    steps: list[Step] = []
    while len(steps) < count:
        action = int(rng.integers(env.action_space.n))
        obs, reward, terminated, truncated, _ = env.step(action)
        if rng.random() < keep:
            distance = 0 if reward > 0 else target_distance(level)
            steps.append(Step(str(obs["mission"]), COMMANDS[action], str(obs["text"]), float(reward), distance))
        if terminated or truncated:
            obs, _ = env.reset(seed=int(rng.integers(1 << 30)))
    env.close()
    return steps
