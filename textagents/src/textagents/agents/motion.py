"""Text commands for continuous-control envs (fastsim's wheel speeds), so that LLM agents can drive them."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import gymnasium as gym
import numpy as np
from gymnasium import spaces

from textenvs.core.commands import CommandVocabulary, invalid_command_feedback
from textenvs.core.spaces import text_space

#: Command -> (left wheel, right wheel) speed, fastsim's units (clipped by the env to +-4).
WHEEL_COMMANDS: dict[str, tuple[float, float]] = {
    "go forward": (4.0, 4.0),
    "go backward": (-4.0, -4.0),
    "turn left": (-2.0, 2.0),
    "turn right": (2.0, -2.0),
    "veer left": (2.0, 4.0),
    "veer right": (4.0, 2.0),
    "stop": (0.0, 0.0),
}


class MotionCommandWrapper(gym.ActionWrapper):
    """Text actions over a ``Box`` action space: each command is a fixed native action; an unknown command
    is the ``"stop"`` action with ``info["invalid_action"] = True`` and feedback, as the env contract
    prescribes. ``info["admissible_commands"]`` lists the commands."""

    def __init__(self, env: gym.Env, commands: Mapping[str, tuple[float, ...]] = WHEEL_COMMANDS, idle: str = "stop"):
        super().__init__(env)
        if not isinstance(env.action_space, spaces.Box):
            raise TypeError(f"MotionCommandWrapper needs a Box action space, got {env.action_space}")
        if idle not in commands:
            raise ValueError(f"idle command {idle!r} is not one of {list(commands)}")
        self.vocabulary = CommandVocabulary(list(commands))
        self.native = {c: np.asarray(v, dtype=env.action_space.dtype) for c, v in commands.items()}
        for command, action in self.native.items():
            if action.shape != env.action_space.shape:
                raise ValueError(f"command {command!r} maps to shape {action.shape}, not {env.action_space.shape}")
        self.idle = idle
        self.action_space = text_space(256)
        self._invalid: str | None = None

    def action(self, action: Any) -> np.ndarray:
        command = self.vocabulary.parse(action) if isinstance(action, str) else None
        self._invalid = None if command is not None else invalid_command_feedback(action, self.vocabulary)
        return self.native[command or self.idle]

    def _annotate(self, info: dict[str, Any]) -> dict[str, Any]:
        info = dict(info, admissible_commands=list(self.vocabulary))
        if self._invalid is not None:
            info.update(invalid_action=True, feedback=self._invalid)
        return info

    def reset(self, **kwargs: Any) -> tuple[Any, dict[str, Any]]:
        obs, info = self.env.reset(**kwargs)
        self._invalid = None
        return obs, self._annotate(info)

    def step(self, action: Any) -> tuple[Any, float, bool, bool, dict[str, Any]]:
        obs, reward, terminated, truncated, info = self.env.step(self.action(action))
        return obs, reward, terminated, truncated, self._annotate(info)


def make_for_llm(env_id: str, **kwargs: Any) -> gym.Env:
    """``gym.make(env_id)`` with text commands: continuous-control envs get ``MotionCommandWrapper``. An unknown
    id raises ``ValueError`` naming the closest registered ids."""
    from textenvs.trajectories.record import make_env

    env = make_env(env_id, kwargs)
    return MotionCommandWrapper(env) if isinstance(env.action_space, spaces.Box) else env
