"""``BabyAITextEnv``: BabyAI levels (minigrid 3.x) observed through GLAM's captions and/or pixels."""

from __future__ import annotations

import contextlib
import io
from typing import Any, ClassVar

import numpy as np
from gymnasium import spaces
from minigrid.core.actions import Actions

from textenvs.core.commands import CommandVocabulary
from textenvs.core.spaces import check_choice
from textenvs.core.text_env import StepOutcome, TextEnv
from textenvs.envs.babyai_text.captioner import SEPARATOR, cached_caption, max_caption_length
from textenvs.envs.babyai_text.expert import BabyAIBotExpert
from textenvs.envs.babyai_text.levels import make_level
from textenvs.envs.babyai_text.renderer import PIXEL_VIEWS, image_shape, render_view
from textenvs.envs.babyai_text.view_cache import ViewCache

#: GLAM's commands, in minigrid's action order (``action_mode="discrete"`` indices = minigrid actions).
COMMANDS = ("turn left", "turn right", "go forward", "pick up", "drop", "toggle")
VOCABULARY = CommandVocabulary(
    COMMANDS,
    aliases={"left": "turn left", "right": "turn right", "forward": "go forward", "pickup": "pick up"},
)
COMMAND_ACTIONS = {command: Actions(index) for index, command in enumerate(COMMANDS)}


class BabyAITextEnv(TextEnv):
    """BabyAI with GLAM's text observations.

    ## Description
    A BabyAI level of minigrid 3.x (its own levels, GLAM's and background-knowledge-rl's re-created on
    it): the agent follows a language mission (go to, pick up, open, put next, sequences) in a grid of
    rooms. The observation text is GLAM's caption of the agent's 7x7 egocentric view.

    ## Action Space
    ``Text``: one of ``turn left, turn right, go forward, pick up, drop, toggle`` (case and spacing
    free; aliases ``left, right, forward, pickup``); ``action_mode="discrete"``: ``Discrete(6)`` in that
    order, which is minigrid's action order. Anything else is minigrid's no-op ``done`` action: it costs
    a step and sets ``info["invalid_action"]``.

    ## Observation Space
    ``Dict`` with ``"mission"`` (the instruction), ``"direction"`` (``Discrete(4)``, minigrid's agent
    direction: 0 right, 1 down, 2 left, 3 up), ``"text"`` (the caption, one sentence per line) unless
    ``obs_mode="pixels"``, and ``"image"`` (minigrid's rendering of the agent view or the full grid)
    when ``obs_mode`` asks for pixels. ``info["descriptions"]`` is the caption as GLAM's list.

    ## Rewards
    minigrid's: ``1 - 0.9 * steps / max_steps`` on success, 0 otherwise.

    ## Starting State
    A new level and mission drawn from the env's RNG at every reset (GLAM's Mixed levels also draw the
    task kind, unless ``task_kind_per_instance=True``).

    ## Episode End
    Terminated on success (or on a mission failure minigrid detects); truncated after the level's
    ``max_steps`` (``room_size**2 * rooms * navigations needed``, or the ``max_steps`` argument).

    ## Arguments
    - ``level``: the ``<Level>`` of ``BabyAI-Text-<Level>-v0``.
    - ``obs_mode``, ``action_mode``, ``render_mode``: see ``TextEnv``.
    - ``pixel_view``: ``"agent"`` (the 7x7 egocentric view, default) or ``"full"`` (the whole grid,
      zero-padded to the level's largest grid, agent's field of view highlighted).
    - ``tile_size``: pixels per grid cell (default 32).
    - ``task_kind_per_instance``: GLAM's behaviour on the Mixed levels: one task kind per env instance.
    - ``max_steps``: a fixed episode length instead of minigrid's (which the reward then uses).

    ## Version History
    - v0: first version (minigrid 3.2, GLAM's captioner of Grounding_LLMs_with_online_RL @ 31847fb).
    """

    metadata: ClassVar[dict[str, Any]] = {"render_modes": ["ansi", "rgb_array"], "render_fps": 10}

    def __init__(
        self,
        level: str = "GoToLocal",
        *,
        obs_mode: str = "text",
        action_mode: str = "text",
        render_mode: str | None = None,
        pixel_view: str = "agent",
        tile_size: int = 32,
        task_kind_per_instance: bool = False,
        max_steps: int | None = None,
    ):
        self.level_name = level
        self.level = make_level(level, task_kind_per_instance=task_kind_per_instance, max_steps=max_steps)
        self._views = ViewCache(self.level)
        self.pixel_view = check_choice("pixel_view", pixel_view, PIXEL_VIEWS)
        if not isinstance(tile_size, int) or isinstance(tile_size, bool) or tile_size < 1:
            raise ValueError(f"tile_size={tile_size!r} is not valid; use a positive int (default 32)")
        self.tile_size = tile_size
        super().__init__(
            vocabulary=VOCABULARY,
            text_max_length=max_caption_length(self.level.agent_view_size, SEPARATOR),
            image_shape=image_shape(self.level, pixel_view, tile_size),
            native_spaces={"direction": spaces.Discrete(4)},
            obs_mode=obs_mode,
            action_mode=action_mode,
            render_mode=render_mode,
        )
        self.descriptions: list[str] = []
        self._text = ""
        #: minigrid's encoding of the agent's view (``gen_obs()["image"]``) in the current state.
        self.view = np.zeros((0, 0, 3), dtype=np.uint8)
        #: The minigrid action executed by the last step (None after reset).
        self.last_action: Actions | None = None
        self._return = 0.0
        self._success = False

    # ----------------------------------------------------------------- world
    def _reset_world(self, options: dict[str, Any]) -> dict[str, Any]:
        self.level.np_random = self.np_random
        self._views.clear()
        with contextlib.redirect_stdout(io.StringIO()):  # minigrid prints each rejected mission
            obs, _ = self.level.reset()
        self.last_action = None
        self._return = 0.0
        self._success = False
        self.view = obs["image"]
        self.descriptions, self._text = cached_caption(self.view, self.level.carrying)
        return {"descriptions": self.descriptions}

    def _step_world(self, command: str | None) -> StepOutcome:
        action = Actions.done if command is None else COMMAND_ACTIONS[command]
        obs, reward, terminated, truncated, _ = self._views.step(action)
        self.last_action = action
        self._return += reward
        self._success = self._success or (terminated and reward > 0)
        self.view = obs["image"]
        self.descriptions, self._text = cached_caption(self.view, self.level.carrying)
        return StepOutcome(reward, terminated, truncated, info={"descriptions": self.descriptions})

    # ----------------------------------------------------------------- views
    def describe(self) -> str:
        return self._text

    def mission(self) -> str:
        return self.level.mission

    def render_image(self) -> np.ndarray:
        return render_view(self.level, self.pixel_view, self.tile_size)

    def native_observation(self) -> dict[str, Any]:
        return {"direction": int(self.level.agent_dir)}

    # ----------------------------------------------------------------- outcome
    def success(self) -> bool:
        return self._success

    def episode_metrics(self) -> dict[str, Any]:
        return {"success": self._success, "steps": int(self.level.step_count), "reward": float(self._return)}

    # ----------------------------------------------------------------- expert
    def expert(self) -> BabyAIBotExpert:
        return BabyAIBotExpert(self)

    def action_for(self, action: int) -> int | str:
        """The action of this env's action space that executes minigrid action ``action``."""
        if not 0 <= action < len(COMMANDS):
            raise ValueError(f"minigrid action {action!r} has no command; commands: {', '.join(COMMANDS)}")
        return action if self.action_mode == "discrete" else COMMANDS[action]
