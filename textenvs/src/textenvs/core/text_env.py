"""``TextEnv``: the environment contract of DESIGN.md as a base class.

A family implements the world (``_reset_world``, ``_step_world``, ``describe``, ``mission``,
``render_image``, ``admissible_commands``, ``episode_metrics``, ...); this class turns it into a Gymnasium
env with the shared observation modes, text/discrete actions, invalid-command handling, standard info keys
and render modes, so every family behaves the same at the edges.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, ClassVar

import gymnasium as gym
import numpy as np
from gymnasium import spaces

from textenvs.core.commands import CommandVocabulary, invalid_command_feedback
from textenvs.core.expert import Expert
from textenvs.core.spaces import (
    ACTION_MODES,
    OBS_MODES,
    check_choice,
    check_text_fits,
    image_space,
    text_space,
)

#: The contract's mission space: ``Text(512)`` in every family.
MISSION_MAX_LENGTH = 512

#: Info keys present after every ``reset`` and ``step``.
STANDARD_INFO_KEYS = ("admissible_commands", "invalid_action", "feedback", "success", "progression")


@dataclass
class StepOutcome:
    """What the world reports for one step; ``TextEnv.step`` adds the standard parts."""

    reward: float = 0.0
    terminated: bool = False
    truncated: bool = False
    feedback: str = ""
    info: dict[str, Any] = field(default_factory=dict)


def check_reset_options(options: Mapping[str, Any] | None, valid: tuple[str, ...]) -> dict[str, Any]:
    """``options`` as a new dict, or a ValueError naming the unknown keys and the ``valid`` ones."""
    if options is None:
        return {}
    if not isinstance(options, Mapping):
        raise ValueError(f"reset options must be a dict, got {options!r}")
    unknown = sorted(map(repr, set(options) - set(valid)))
    if unknown:
        accepted = ", ".join(map(repr, valid)) if valid else "none (this env takes no reset options)"
        raise ValueError(f"unknown reset option(s) {', '.join(unknown)}; valid options: {accepted}")
    return dict(options)


class TextEnv(gym.Env[dict[str, Any], Any]):
    """Base class of every textenvs environment.

    Arguments (shared by every family):
        obs_mode: ``"text"`` (default; never renders), ``"pixels"`` or ``"text+pixels"``.
        action_mode: ``"text"`` (default; a command string) or ``"discrete"`` (an index into
            ``discrete_commands()``). Families with native continuous actions pass ``action_space``.
        render_mode: ``None``, ``"ansi"`` (the text view) or ``"rgb_array"``.
    """

    metadata: ClassVar[dict[str, Any]] = {"render_modes": ["ansi", "rgb_array"], "render_fps": 4}
    #: The keys ``reset(options=...)`` accepts; any other is rejected before the env changes.
    reset_options: ClassVar[tuple[str, ...]] = ()

    def __init__(
        self,
        *,
        vocabulary: CommandVocabulary | None,
        text_max_length: int,
        image_shape: tuple[int, int],
        native_spaces: Mapping[str, spaces.Space] | None = None,
        obs_mode: str = "text",
        action_mode: str = "text",
        render_mode: str | None = None,
        action_space: spaces.Space | None = None,
        command_max_length: int = 256,
    ):
        self.obs_mode = check_choice("obs_mode", obs_mode, OBS_MODES)
        self.render_mode = render_mode
        if render_mode is not None:
            check_choice("render_mode", render_mode, tuple(self.metadata["render_modes"]))
        self.vocabulary = vocabulary
        self._last_checked_text: dict[str, str] = {}
        self.wants_text = obs_mode != "pixels"
        self.wants_pixels = obs_mode != "text"

        obs_spaces: dict[str, spaces.Space] = dict(native_spaces or {})
        obs_spaces["mission"] = text_space(MISSION_MAX_LENGTH)
        if self.wants_text:
            obs_spaces["text"] = text_space(text_max_length)
        if self.wants_pixels:
            obs_spaces["image"] = image_space(*image_shape)
        self.observation_space = spaces.Dict(obs_spaces)

        if action_space is not None:
            self.action_mode = "native"
            self.action_space = action_space
        else:
            self.action_mode = check_choice("action_mode", action_mode, ACTION_MODES)
            if self.action_mode == "text":
                self.action_space = text_space(command_max_length)
            else:
                self.action_space = spaces.Discrete(self.discrete_action_count())

    # ----------------------------------------------------------------- what a family implements
    def _reset_world(self, options: dict[str, Any]) -> dict[str, Any]:
        """Start a new episode using ``self.np_random``; return family info keys."""
        raise NotImplementedError

    def _step_world(self, command: Any) -> StepOutcome:
        """Advance one step. ``command`` is a canonical command, a native action, or None (invalid:
        a no-op that still costs a step)."""
        raise NotImplementedError

    def describe(self) -> str:
        """The current observation as natural language."""
        raise NotImplementedError

    def mission(self) -> str:
        """The goal as text ("" when the env has none)."""
        return ""

    def render_image(self) -> np.ndarray:
        """The current state as an RGB uint8 image of the ``image`` space's shape."""
        raise NotImplementedError

    def admissible_commands(self) -> list[str]:
        """The commands valid now."""
        return list(self.vocabulary) if self.vocabulary is not None else []

    def success(self) -> bool:
        raise NotImplementedError

    def progression(self) -> float:
        """Progress toward the goal in [0, 1], for cross-env normalization."""
        return float(self.success())

    def episode_metrics(self) -> dict[str, Any]:
        """The metrics the family's paper reports, added to ``info`` on the last step."""
        raise NotImplementedError

    def native_observation(self) -> dict[str, Any]:
        """Family-specific observation parts (declared through ``native_spaces``)."""
        return {}

    def expert(self) -> Expert:
        """A fresh expert policy for this environment."""
        raise NotImplementedError

    # ----------------------------------------------------------------- commands
    def discrete_commands(self) -> list[str]:
        """The commands that ``action_mode="discrete"`` indices refer to (now)."""
        if self.vocabulary is None:
            raise ValueError(f"{type(self).__name__} has no command vocabulary for action_mode='discrete'")
        return list(self.vocabulary.commands)

    def discrete_action_count(self) -> int:
        """Size of the ``Discrete`` action space."""
        return len(self.discrete_commands())

    def parse_command(self, text: str) -> Any | None:
        """The command ``text`` names, or None when it names none."""
        assert self.vocabulary is not None
        return self.vocabulary.parse(text)

    def decode_action(self, action: Any) -> tuple[Any | None, str]:
        """Turn an action of the action space into a command; ``(None, feedback)`` when it is invalid."""
        if self.action_mode == "native":
            return action, ""
        if self.action_mode == "discrete":
            options = self.discrete_commands()
            is_index = isinstance(action, (int, np.integer)) and not isinstance(action, bool)
            if is_index and 0 <= int(action) < len(options):
                return options[int(action)], ""
            valid = f"an integer in 0..{len(options) - 1}" if options else "no action (none available now)"
            return None, f"{action!r} is not a valid action index; valid: {valid}."
        if isinstance(action, str):
            command = self.parse_command(action)
            if command is not None:
                return command, ""
        return None, invalid_command_feedback(action, self.admissible_commands())

    # ----------------------------------------------------------------- Gymnasium API
    def reset(
        self, *, seed: int | None = None, options: dict[str, Any] | None = None
    ) -> tuple[dict[str, Any], dict[str, Any]]:
        options = check_reset_options(options, self.reset_options)
        super().reset(seed=seed)
        family_info = self._reset_world(options)
        return self._observation(), self._info(False, "", family_info)

    def step(self, action: Any) -> tuple[dict[str, Any], float, bool, bool, dict[str, Any]]:
        command, feedback = self.decode_action(action)
        outcome = self._step_world(command)
        info = self._info(command is None, feedback or outcome.feedback, outcome.info)
        if outcome.terminated or outcome.truncated:
            info["episode_metrics"] = self.episode_metrics()
        return self._observation(), float(outcome.reward), outcome.terminated, outcome.truncated, info

    def render(self) -> str | np.ndarray | None:
        if self.render_mode == "ansi":
            return self.ansi()
        if self.render_mode == "rgb_array":
            return self.render_image()
        return None

    def ansi(self) -> str:
        """The text view shown by ``render_mode="ansi"``: mission then observation."""
        mission = self.mission()
        return f"Mission: {mission}\n{self.describe()}" if mission else self.describe()

    # ----------------------------------------------------------------- assembly
    def _observation(self) -> dict[str, Any]:
        obs = dict(self.native_observation())
        obs["mission"] = self._checked_text("mission", self.mission())
        if self.wants_text:
            obs["text"] = self._checked_text("text", self.describe())
        if self.wants_pixels:
            obs["image"] = self.render_image()
        return obs

    def _checked_text(self, key: str, text: str) -> str:
        # A family that returns the very same string object again (an unchanged, cached view) skips the
        # re-check, which costs tens of microseconds for a few thousand characters.
        if self._last_checked_text.get(key) is not text:
            check_text_fits(text, self.observation_space[key], f"{key} observation")
            self._last_checked_text[key] = text
        return text

    def _info(self, invalid: bool, feedback: str, family_info: Mapping[str, Any]) -> dict[str, Any]:
        return {
            "admissible_commands": self.admissible_commands(),
            "invalid_action": invalid,
            "feedback": feedback,
            "success": bool(self.success()),
            "progression": float(self.progression()),
            **family_info,
        }
