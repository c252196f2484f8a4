"""What the LLM is shown: steps of a uniformly random policy on a BabyAI-Text level or ELLM's Crafter, each
with the env's own progress signal (``Family.distance``), which BK-Pref's labels are checked against."""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass

import gymnasium as gym
import numpy as np

import textenvs  # noqa: F401  (registers the ids)
from textagents.methods.bk.environments import family_of


@dataclass(frozen=True)
class Step:
    """One step: the mission, the command that led here (None at an episode's start), the observation's
    text, the env's reward, and ``distance``: how far from done by the env's own measure (BabyAI: cells from
    the agent to the nearest object the mission names, 0 once the mission is done, None where the mission
    names no single object; Crafter: achievements not yet unlocked)."""

    mission: str
    action: str | None
    observation: str
    reward: float
    distance: int | None


def random_steps(env_id: str, count: int, seed: int, keep: float = 0.2) -> list[Step]:
    """``count`` steps of a random policy, each step kept with probability ``keep`` (so that they are spread
    over several episodes), reproducible from ``seed``."""
    family = family_of(env_id)
    env = gym.make(env_id, action_mode="discrete")
    commands = env.unwrapped.discrete_commands()
    rng = np.random.default_rng(seed)
    obs, _ = env.reset(seed=seed)
    steps: list[Step] = []
    while len(steps) < count:
        action = int(rng.integers(env.action_space.n))
        obs, reward, terminated, truncated, _ = env.step(action)
        if rng.random() < keep:
            distance = family.distance(env.unwrapped, float(reward))
            steps.append(Step(str(obs["mission"]), commands[action], str(obs["text"]), float(reward), distance))
        if terminated or truncated:
            obs, _ = env.reset(seed=int(rng.integers(1 << 30)))
    env.close()
    return steps


def random_windows(env_id: str, count: int, seed: int, window: int, keep: float = 0.2) -> list[tuple[Step, ...]]:
    """``count`` windows of ``window`` consecutive steps of one episode of a random policy (the original's
    labelling segments, ``label_preference.py:60-71``: within one episode, never padded), oldest first.
    After each step, the episode's last ``window`` steps (once it has that many) are kept with probability
    ``keep``, so windows may overlap. ``window`` 1 is ``random_steps``, one step per window."""
    if window == 1:
        return [(step,) for step in random_steps(env_id, count, seed, keep)]
    family = family_of(env_id)
    env = gym.make(env_id, action_mode="discrete")
    commands = env.unwrapped.discrete_commands()
    rng = np.random.default_rng(seed)
    env.reset(seed=seed)
    recent: deque[Step] = deque(maxlen=window)
    windows: list[tuple[Step, ...]] = []
    while len(windows) < count:
        action = int(rng.integers(env.action_space.n))
        obs, reward, terminated, truncated, _ = env.step(action)
        distance = family.distance(env.unwrapped, float(reward))
        recent.append(Step(str(obs["mission"]), commands[action], str(obs["text"]), float(reward), distance))
        if len(recent) == window and rng.random() < keep:
            windows.append(tuple(recent))
        if terminated or truncated:
            recent.clear()
            env.reset(seed=int(rng.integers(1 << 30)))
    env.close()
    return windows
