"""What background-knowledge shaping needs to know per env family: what the LLM is told about the
environment (one description shared by BK-Code, BK-Goal and BK-Pref's prompts; the original described
minigrid's numeric grid, ``prompts/minigrid``), what PPO sees, and the env's own progress signal that
BK-Pref's labels are checked against."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import gymnasium as gym
import numpy as np

from textagents.sb3.wrappers import CrafterSymbolicObservation, SymbolicObservation
from textenvs.envs import ENV_TABLE


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


def _babyai_distance(env: Any, reward: float) -> int | None:
    """Cells to the nearest object the mission names, 0 once the mission is done."""
    return 0 if reward > 0 else target_distance(env.level)


def _crafter_distance(env: Any, reward: float) -> int:
    """Achievements not yet unlocked in the episode: the open game's progress, counted down."""
    metrics = env.episode_metrics()
    return len(metrics["achievements"]) - int(metrics["num_achievements"])


@dataclass(frozen=True)
class Family:
    """``description``: the environment as the LLM is told it; ``observation``: the wrapper that gives PPO
    its view of the env (``action_mode="discrete"``); ``distance(env, reward)``: how far the unwrapped env's
    current state is from done by the env's own measure, smaller is better (None where it has none);
    ``network``: what the original's convolutional network (``policy.ConvFeatures``) reads of that view."""

    description: str
    observation: Callable[[gym.Env], gym.Env]
    distance: Callable[[Any, float], int | None]
    network: dict[str, Any]


FAMILIES: dict[str, Family] = {
    "babyai_text": Family(
        description=(
            "The environment is BabyAI, a grid world seen from the agent's point of view. Each observation is "
            "text: one line per thing the agent sees, such as 'You see a red ball 2 steps forward' or 'You see "
            "a wall 1 step left', and lines such as 'You carry a blue key'. The agent turns left or right, goes "
            "forward, picks up, drops and toggles (opens doors). Missions ask it to go to, pick up, put next to "
            "or open objects (balls, boxes, keys, doors) of six colours."
        ),
        observation=SymbolicObservation,
        distance=_babyai_distance,
        # the grid alone, its ids scaled as the original's ImageObsWrapper does; its policy never saw the mission
        network={"image": "grid", "scale": (10.0, 5.0, 3.0)},
    ),
    "crafter_text": Family(
        description=(
            "The environment is Crafter, a 2D survival game. Each observation is text: what the player sees "
            "and targets, its inventory and its status (hungry, thirsty, sleepy). The player collects wood, "
            "stone, coal, iron and diamonds, makes tools at a table, drinks water, eats, sleeps and fights "
            "zombies."
        ),
        observation=CrafterSymbolicObservation,
        distance=_crafter_distance,
        # the original's pixels show the inventory; here it is a vector beside the one-hot local view
        network={"image": "view", "extra": ("inventory",)},
    ),
}
#: The description alone, per family (the prompts' view of ``FAMILIES``).
ENVIRONMENTS = {name: family.description for name, family in FAMILIES.items()}


def family_name(env_id: str) -> str:
    """The family of a registered textenvs id, checked to be one shaping supports."""
    families = {entry.id: entry.family for entry in ENV_TABLE}
    if env_id not in families:
        raise ValueError(f"{env_id!r} is not a textenvs id (`textenvs list` shows them)")
    if families[env_id] not in FAMILIES:
        raise ValueError(
            f"background-knowledge shaping supports the {sorted(FAMILIES)} families; {env_id!r} is {families[env_id]!r}"
        )
    return families[env_id]


def family_of(env_id: str) -> Family:
    return FAMILIES[family_name(env_id)]


def action_name(action: Any, commands: Sequence[str]) -> str | None:
    """A discrete action as its command in ``commands`` (commands pass through; None stays None)."""
    if action is None or isinstance(action, str):
        return action
    return commands[int(action)]


def discrete_commands(env_id: str) -> list[str]:
    """The commands of ``env_id``'s discrete actions, in action order."""
    env = gym.make(env_id, action_mode="discrete")
    commands = env.unwrapped.discrete_commands()
    env.close()
    return commands
