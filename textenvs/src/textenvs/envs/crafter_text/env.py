"""``CrafterTextEnv``: Crafter (Hafner 2021) with text observations in the styles of SmartPlay, ELLM, BALROG."""

from __future__ import annotations

from typing import Any, ClassVar

import numpy as np

from textenvs.core.commands import CommandVocabulary
from textenvs.core.expert import Expert
from textenvs.core.spaces import check_choice
from textenvs.core.text_env import StepOutcome, TextEnv
from textenvs.envs.crafter_text.captioner import CAPTION_STYLES, balrog_contexts, caption
from textenvs.envs.crafter_text.constants import ACHIEVEMENTS, COMMAND_ALIASES, COMMANDS, CRAFTER_ACTIONS
from textenvs.envs.crafter_text.game import DeterministicCrafter
from textenvs.envs.crafter_text.metrics import episode_metrics, unlocked_achievements
from textenvs.envs.crafter_text.tasks import FULL_GAME_MISSION, TASKS

#: Longest caption any style can produce is about 1,400 characters (every kind in view, every item held).
TEXT_MAX_LENGTH = 2048
_MAX_SEED = 2**31 - 1


def episode_seeds(np_random: np.random.Generator) -> tuple[int, int]:
    """The world seed and the night-noise seed of a new episode, drawn from the env's generator."""
    world_seed, noise_seed = np_random.integers(_MAX_SEED, size=2)
    return int(world_seed), int(noise_seed)


class CrafterTextEnv(TextEnv):
    """Crafter, the open-world survival game, played through text (and optionally pixels).

    ## Description
    The player lives on a 64x64 procedurally generated island: it gathers wood, builds a crafting table,
    makes tools, mines stone, coal, iron and diamonds, drinks, eats, sleeps and fights zombies and
    skeletons. Crafter counts 22 achievements. The game is PyPI ``crafter`` 1.8.x itself, adapted to be
    deterministic (see ``game.py``); the text is a caption of the 9x7 cells around the player.

    ## Action Space
    ``Text``: one of 17 commands under BALROG's and SmartPlay's names (``"Noop"``, ``"Move West"``,
    ``"Move East"``, ``"Move North"``, ``"Move South"``, ``"Do"``, ``"Sleep"``, ``"Place Stone"``,
    ``"Place Table"``, ``"Place Furnace"``, ``"Place Plant"``, ``"Make Wood Pickaxe"``, ...), matched
    case-insensitively; crafter's names (``"move_left"``, ``"place_table"``) are accepted too. With
    ``action_mode="discrete"``: ``Discrete(17)`` in crafter's action order. Every command is always
    admissible (one that cannot act now does nothing, as in crafter); an unknown command is a no-op step.

    ## Observation Space
    ``Dict`` with ``"text"`` (the caption, ``caption_style``), ``"mission"`` and, for ``obs_mode`` ``"pixels"``
    or ``"text+pixels"``, ``"image"``: crafter's frame (local view and inventory), ``image_size`` pixels.

    ## Rewards
    Full game: crafter's reward, +1 for each achievement unlocked for the first time in the episode and
    +-0.1 per health point gained or lost. Single-task variants: 1 when the task's achievement is unlocked.

    ## Starting State
    A new world generated from the seed; the player in its middle with full vitals and nothing held.

    ## Episode End
    ``terminated`` when the player dies (and, for a single task, when its achievement is unlocked);
    ``truncated`` after ``length`` steps.

    ## Arguments
    * ``task``: None (the full game) or one of ``TASKS`` (``"PlaceCraftingTable"``, ...).
    * ``caption_style``: ``"smartplay"`` (default), ``"ellm"`` or ``"balrog"`` (then ``info`` also holds
      ``long_term_context`` and ``short_term_context``).
    * ``length``: steps before truncation (crafter's ``length``; 10000).
    * ``image_size``: side of the square ``image``, or ``(height, width)``; 64 like crafter.
    * ``obs_mode``, ``action_mode``, ``render_mode``: see ``TextEnv``.

    ## Info
    ``achievements`` (crafter's counts of the 22), ``inventory``, ``player_pos``, ``sleeping``, and the
    standard keys; on the last step ``episode_metrics`` (``achievements`` unlocked, ``num_achievements``,
    ``progression`` = unlocked/22, ``length``, ``return``).

    ## Version History
    * v0: initial release, on crafter 1.8.3.
    """

    metadata: ClassVar[dict[str, Any]] = {"render_modes": ["ansi", "rgb_array"], "render_fps": 5}
    game_class: ClassVar[type[DeterministicCrafter]] = DeterministicCrafter

    def __init__(
        self,
        *,
        task: str | None = None,
        caption_style: str = "smartplay",
        length: int = 10000,
        image_size: int | tuple[int, int] = 64,
        obs_mode: str = "text",
        action_mode: str = "text",
        render_mode: str | None = None,
    ):
        if task is not None and task not in TASKS:
            raise ValueError(f"task={task!r} is not valid; choose None or one of {', '.join(map(repr, TASKS))}")
        self.task = TASKS[task] if task is not None else None
        self.caption_style = check_choice("caption_style", caption_style, CAPTION_STYLES)
        if isinstance(length, bool) or not isinstance(length, (int, np.integer)) or length < 1:
            raise ValueError(f"length={length!r} is not valid; it must be a positive number of steps")
        self.length = int(length)
        self.image_height, self.image_width = _image_shape(image_size)
        super().__init__(
            vocabulary=self._vocabulary(),
            text_max_length=TEXT_MAX_LENGTH,
            image_shape=(self.image_height, self.image_width),
            obs_mode=obs_mode,
            action_mode=action_mode,
            render_mode=render_mode,
        )
        self.game = self.game_class(length=self.length)
        self._semantic: np.ndarray | None = None
        self._last_action: str | None = None
        self._return = 0.0

    def _vocabulary(self) -> CommandVocabulary:
        return CommandVocabulary(COMMANDS, COMMAND_ALIASES)

    # ----------------------------------------------------------------- the world
    def _reset_world(self, options: dict[str, Any]) -> dict[str, Any]:
        world_seed, noise_seed = episode_seeds(self.np_random)
        self.game.start_episode(world_seed, noise_seed)
        self._semantic = self.game.semantic()
        self._last_action = None
        self._return = 0.0
        return self._family_info()

    def _step_world(self, command: Any) -> StepOutcome:
        action = COMMANDS.index(command) if command is not None else 0
        had_task = self.task is not None and self._task_unlocked()
        _obs, reward, _done, info = self.game.step(action)
        self._semantic = info["semantic"]
        self._last_action = CRAFTER_ACTIONS[action]
        dead = self.game.player.health <= 0
        if self.task is not None:
            reward = float(self._task_unlocked() and not had_task)
        self._return += reward
        terminated = dead or (self.task is not None and self._task_unlocked())
        truncated = not terminated and self.game.steps >= self.length
        return StepOutcome(reward=reward, terminated=terminated, truncated=truncated, info=self._family_info())

    def _task_unlocked(self) -> bool:
        assert self.task is not None
        return self.game.player.achievements[self.task.achievement] > 0

    def _family_info(self) -> dict[str, Any]:
        player = self.game.player
        info: dict[str, Any] = {
            "achievements": {name: int(player.achievements[name]) for name in ACHIEVEMENTS},
            "inventory": {name: int(n) for name, n in player.inventory.items()},
            "player_pos": [int(v) for v in player.pos],
            "sleeping": bool(player.sleeping),
        }
        if self.caption_style == "balrog":
            info["long_term_context"], info["short_term_context"] = balrog_contexts(self.game_state())
        return info

    def game_state(self) -> dict[str, Any]:
        """The state the captioners read: semantic map, player position and facing, inventory, ..."""
        player = self.game.player
        return {
            "semantic": self._semantic,
            "player_pos": (int(player.pos[0]), int(player.pos[1])),
            "facing": (int(player.facing[0]), int(player.facing[1])),
            "inventory": dict(player.inventory),
            "sleeping": bool(player.sleeping),
            "action": self._last_action,
        }

    # ----------------------------------------------------------------- views
    def describe(self) -> str:
        return caption(self.game_state(), self.caption_style)

    def mission(self) -> str:
        return self.task.mission if self.task is not None else FULL_GAME_MISSION

    def render_image(self) -> np.ndarray:
        return self.game.image(self.image_width, self.image_height)

    # ----------------------------------------------------------------- progress
    def success(self) -> bool:
        if self.task is not None:
            return self._task_unlocked()
        return len(unlocked_achievements(self.game.player.achievements)) == len(ACHIEVEMENTS)

    def progression(self) -> float:
        if self.task is not None:
            return float(self._task_unlocked())
        return len(unlocked_achievements(self.game.player.achievements)) / len(ACHIEVEMENTS)

    def episode_metrics(self) -> dict[str, Any]:
        return episode_metrics(self.game.player.achievements, self.game.steps, self._return)

    def expert(self) -> Expert:
        from textenvs.envs.crafter_text.expert import CrafterExpert

        return CrafterExpert(self)


def _image_shape(image_size: int | tuple[int, int]) -> tuple[int, int]:
    """``(height, width)`` from a side or a pair; crafter needs at least one pixel per view cell."""
    sides = (image_size, image_size) if isinstance(image_size, (int, np.integer)) else tuple(image_size)
    if len(sides) != 2 or not all(isinstance(s, (int, np.integer)) and s >= 9 for s in sides):
        raise ValueError(f"image_size={image_size!r} is not valid; give an int >= 9 or (height, width) of such")
    return int(sides[0]), int(sides[1])
