"""ELLM's intrinsic reward on Housekeep-Text as a Gymnasium wrapper, usable with any agent.

When a command places the held object on a receptacle and the LLM says the object belongs there
(``PlacementJudge``, asked once per pair and cached), the step pays ``bonus``, once per episode per
(object, receptacle) pair (``novelty="pair"``) or per object (``novelty="object"``: the original's
novelty, where an object placed where the LLM said yes is not suggested again). A place on a receptacle the
LLM said no to, a failed place and every other command pay nothing. Names are ELLM's: the object's category
("tennis ball") and the receptacle's room type and category ("bedroom chair"), so two chairs of a bedroom
are one pair. The env's own reward is not added unless ``keep_env_reward``, as ``EllmReward``.

``info`` gains ``intrinsic_reward``, ``env_reward``, ``achieved_goals`` (the rewarded placements of the
episode as "object in receptacle", the original's goal strings) and, on a step that placed an object,
``placement``: the object, the receptacle, whether the LLM said yes and whether Housekeep's annotations
call it correct.
"""

from __future__ import annotations

from typing import Any

import gymnasium as gym

from textagents.methods.ellm.placement import PlacementJudge
from textenvs.envs.housekeep.reward import PLACE_REWARD
from textenvs.envs.housekeep.world import HELD, World

NOVELTY = ("pair", "object")


def goal_text(obj: str, receptacle: str) -> str:
    """The original's goal string for a placement."""
    return f"{obj} in {receptacle}"


class PlacementReward(gym.Wrapper):
    """``bonus`` defaults to the original's ``DROP_SUCCESS_REWARD`` (2.5) for a suggested placement."""

    def __init__(
        self,
        env: gym.Env,
        judge: PlacementJudge,
        bonus: float = PLACE_REWARD,
        keep_env_reward: bool = False,
        novelty: str = "pair",
    ):
        super().__init__(env)
        if novelty not in NOVELTY:
            raise ValueError(f"novelty must be one of {NOVELTY}, got {novelty!r}")
        self.judge, self.bonus, self.keep_env_reward, self.novelty = judge, bonus, keep_env_reward, novelty
        self.achieved: set[str] = set()
        self.done_objects: set[str] = set()

    @property
    def world(self) -> World:
        return self.env.unwrapped.world

    def reset(self, *, seed: int | None = None, options: dict[str, Any] | None = None):
        obs, info = self.env.reset(seed=seed, options=options)
        self.achieved, self.done_objects = set(), set()
        return obs, {**info, "achieved_goals": []}

    def step(self, action: Any):
        held = self.world.robots[0].holding
        obs, env_reward, terminated, truncated, info = self.env.step(action)
        intrinsic = 0.0
        world = self.world
        if held != HELD and world.location[held] != HELD:
            obj = world.categories[held].replace("_", " ")
            receptacle = world.receptacles[world.location[held]].kind_label
            yes = self.judge.says_yes(obj, receptacle)
            goal = goal_text(obj, receptacle)
            fresh = goal not in self.achieved and (self.novelty == "pair" or obj not in self.done_objects)
            if yes and fresh:
                intrinsic = float(self.bonus)
                self.achieved.add(goal)
                self.done_objects.add(obj)
            placement = {"object": obj, "receptacle": receptacle, "llm_yes": yes, "correct": world.is_correct(held)}
            info = {**info, "placement": placement}
        info = {**info, "intrinsic_reward": intrinsic, "env_reward": float(env_reward)}
        info["achieved_goals"] = sorted(self.achieved)
        reward = intrinsic + (float(env_reward) if self.keep_env_reward else 0.0)
        return obs, reward, terminated, truncated, info
