"""A tiny corridor env that exercises the contract kit before (and besides) the real families."""

from __future__ import annotations

from typing import Any

import gymnasium as gym
import numpy as np

from textenvs.core import CommandVocabulary, EnvEntry, StepOutcome, TextEnv, register_envs

CORRIDOR_ID = "TestCorridor-v0"
LENGTH = 5


class CorridorEnv(TextEnv):
    """Walk right to the door at the end of a corridor; 12 steps at most."""

    def __init__(
        self,
        *,
        max_steps: int = 12,
        obs_mode: str = "text",
        action_mode: str = "text",
        render_mode: str | None = None,
    ):
        self.max_steps = max_steps
        super().__init__(
            vocabulary=CommandVocabulary(["go left", "go right", "wait"], aliases={"left": "go left"}),
            text_max_length=80,
            image_shape=(8, 8 * LENGTH),
            native_spaces={"position": gym.spaces.Discrete(LENGTH)},
            obs_mode=obs_mode,
            action_mode=action_mode,
            render_mode=render_mode,
        )

    def _reset_world(self, options: dict[str, Any]) -> dict[str, Any]:
        self.position = int(self.np_random.integers(0, LENGTH - 1))
        self.steps = 0
        return {"start": self.position}

    def _step_world(self, command: str | None) -> StepOutcome:
        self.steps += 1
        feedback = ""
        if command == "go right":
            self.position += 1
        elif command == "go left":
            if self.position == 0:
                feedback = "You bump into the wall."
            self.position = max(0, self.position - 1)
        done = self.success()
        return StepOutcome(
            reward=1.0 if done else 0.0,
            terminated=done,
            truncated=not done and self.steps >= self.max_steps,
            feedback=feedback,
        )

    def describe(self) -> str:
        steps_left = LENGTH - 1 - self.position
        return f"You are in cell {self.position} of {LENGTH}. The door is {steps_left} steps right."

    def mission(self) -> str:
        return "reach the door"

    def render_image(self) -> np.ndarray:
        image = np.zeros((8, 8 * LENGTH, 3), np.uint8)
        image[:, 8 * (LENGTH - 1) :] = (0, 200, 0)
        image[2:6, 8 * self.position + 2 : 8 * self.position + 6] = 255
        return image

    def success(self) -> bool:
        return self.position == LENGTH - 1

    def progression(self) -> float:
        return self.position / (LENGTH - 1)

    def episode_metrics(self) -> dict[str, Any]:
        return {"success": self.success(), "steps": self.steps}

    def native_observation(self) -> dict[str, Any]:
        return {"position": self.position}

    def expert(self) -> GoRight:
        return GoRight()


class GoRight:
    def reset(self, obs: dict[str, Any], info: dict[str, Any]) -> None:
        pass

    def act(self, obs: dict[str, Any], info: dict[str, Any]) -> str:
        return "go right"


register_envs([EnvEntry(CORRIDOR_ID, "tests.textenvs.corridor_env:CorridorEnv", family="test")])
