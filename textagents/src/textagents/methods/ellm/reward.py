"""ELLM's intrinsic reward as a Gymnasium wrapper, usable with any agent on ``Crafter-Text-ELLM-v0``.

At each step where ``info["action_success"]`` holds (at every step with ``check_action_success=False``, the
original's uniform baseline, where an attempt pays), the embedding of ``info["player_action"]`` (what the
agent did) is compared with the goals suggested at the previous step; when the best cosine similarity
is above ``threshold`` the reward is that similarity and the goal (and its alias: attack cow = eat cow,
place = make crafting table) counts as achieved for the episode, so it is not suggested again. The env's own
reward is not added unless ``keep_env_reward`` (ELLM's pretraining uses the intrinsic reward alone).

``info`` gains ``suggested_goals`` (the source's answer), ``goals`` (those not yet achieved: the goals of
the next step), ``intrinsic_reward``, ``env_reward`` and
``achieved_goals``. ``goal_observation=True`` adds ``obs["goals"]``: the embedding of the original's goal
string, "Your goal is: " + the current suggestions joined by spaces + "." (ELLM's goal-conditioned policy).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import gymnasium as gym
import numpy as np
from gymnasium import spaces

from textagents.methods.ellm.goals import Caption, GoalSource

ALIASES = {
    "attack cow": "eat cow",
    "eat cow": "attack cow",
    "place crafting table": "make crafting table",
    "make crafting table": "place crafting table",
}
#: The threshold recalibrated for all-MiniLM-L6-v2 (the paper's 0.99 was for paraphrase-MiniLM-L3-v2, where
#: it meant the same words): every pair of different goals is below 0.77, and an article or a plural
#: ("chop the tree", "mine stones") stays above 0.9. ``benchmarks/methods/ellm/calibrate_threshold.py``.
DEFAULT_THRESHOLD = 0.85

Embed = Callable[[Sequence[str]], np.ndarray]


def goal_string(goals: Sequence[str]) -> str:
    """What a goal-conditioned policy reads: the original's "Your goal is: ..." sentence."""
    return "Your goal is: " + " ".join(g.lower().strip() for g in goals) + "."


def pays(similarity: float, threshold: float) -> bool:
    """The original's test (goal_wrapper.py:304): strictly above the threshold."""
    return similarity > threshold


def cosine(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Cosine similarity of each row of ``b`` with vector ``a``."""
    return b @ a / (np.linalg.norm(b, axis=-1) * np.linalg.norm(a) + 1e-12)


class EllmReward(gym.Wrapper):
    def __init__(
        self,
        env: gym.Env,
        source: GoalSource,
        embed: Embed,
        threshold: float = DEFAULT_THRESHOLD,
        keep_env_reward: bool = False,
        goal_observation: bool = False,
        check_action_success: bool = True,
    ):
        super().__init__(env)
        if not 0 < threshold <= 1:
            raise ValueError(f"threshold must be in (0, 1], got {threshold}")
        self.source, self.embed, self.threshold = source, embed, threshold
        self.keep_env_reward, self.goal_observation = keep_env_reward, goal_observation
        self.check_action_success = check_action_success
        self.goals: list[str] = []
        self.achieved: set[str] = set()
        if goal_observation:
            if not isinstance(env.observation_space, spaces.Dict):
                raise TypeError(f"goal_observation needs a Dict observation space, got {env.observation_space}")
            size = embed(["goal"]).shape[-1]
            self.observation_space = spaces.Dict(
                {**env.observation_space.spaces, "goals": spaces.Box(-np.inf, np.inf, (size,), np.float32)}
            )

    def _suggest(self, obs: Any, info: dict[str, Any]) -> tuple[Any, dict[str, Any]]:
        suggested = self.source.suggest(Caption.of(info))
        self.goals = [g for g in suggested if g not in self.achieved]
        info = {
            **info,
            "suggested_goals": suggested,
            "goals": list(self.goals),
            "achieved_goals": sorted(self.achieved),
        }
        if self.goal_observation:
            obs = {**obs, "goals": self.embed([goal_string(self.goals)])[0].astype(np.float32)}
        return obs, info

    def reset(self, *, seed: int | None = None, options: dict[str, Any] | None = None):
        obs, info = self.env.reset(seed=seed, options=options)
        self.achieved = set()
        return self._suggest(obs, info)

    def step(self, action: Any):
        obs, env_reward, terminated, truncated, info = self.env.step(action)
        intrinsic = 0.0
        if (info.get("action_success") or not self.check_action_success) and self.goals:
            similarity = cosine(self.embed([info["player_action"]])[0], self.embed(self.goals))
            best = int(np.argmax(similarity))
            if pays(float(similarity[best]), self.threshold):
                intrinsic = float(similarity[best])
                self.achieved.add(self.goals[best])
                if self.goals[best] in ALIASES:
                    self.achieved.add(ALIASES[self.goals[best]])
        obs, info = self._suggest(obs, info)
        info.update(intrinsic_reward=intrinsic, env_reward=float(env_reward))
        reward = intrinsic + (float(env_reward) if self.keep_env_reward else 0.0)
        return obs, reward, terminated, truncated, info
