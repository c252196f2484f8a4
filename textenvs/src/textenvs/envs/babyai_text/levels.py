"""``make_level``: a BabyAI level (a minigrid ``RoomGridLevel``) by name."""

from __future__ import annotations

from typing import Any

import gymnasium as gym
import minigrid  # noqa: F401  (registers minigrid's BabyAI ids, whose specs ``make_level`` reads)
from minigrid.envs.babyai.core.roomgrid_level import RoomGridLevel

from textenvs.core.registration import load_attr, unknown_id_error
from textenvs.envs.babyai_text.bkrl_levels import BKRL_LEVEL_CLASSES
from textenvs.envs.babyai_text.glam_levels import GLAM_LEVEL_CLASSES
from textenvs.envs.babyai_text.registration import (
    BKRL_LEVELS,
    GLAM_LEVELS,
    LEVEL_NAMES,
    MINIGRID_LEVELS,
    env_id,
)


def make_level(name: str, *, task_kind_per_instance: bool = False, max_steps: int | None = None) -> RoomGridLevel:
    """A fresh, unwrapped level. ``name`` is the ``<Level>`` of ``BabyAI-Text-<Level>-v0``.

    ``task_kind_per_instance`` (GLAM's Mixed levels only) keeps the task kind drawn at the first reset.
    ``max_steps`` fixes the episode length (default: minigrid's, from the room size and the mission).
    """
    if name not in LEVEL_NAMES:
        raise unknown_id_error(env_id(name), [env_id(level) for level in LEVEL_NAMES])
    several_kinds = [level for level, cls in GLAM_LEVEL_CLASSES.items() if len(cls.task_kinds) > 1]
    if task_kind_per_instance and name not in several_kinds:
        raise ValueError(
            f"task_kind_per_instance=True needs a level that draws task kinds; {name!r} has one kind. "
            f"Levels with several: {', '.join(several_kinds)}"
        )
    if max_steps is not None and (not isinstance(max_steps, int) or isinstance(max_steps, bool) or max_steps < 1):
        raise ValueError(f"max_steps={max_steps!r} is not valid; use a positive int or None (minigrid's limit)")
    limit = {} if max_steps is None else {"max_steps": max_steps}
    if name in GLAM_LEVELS:
        return GLAM_LEVEL_CLASSES[name](task_kind_per_instance=task_kind_per_instance, **limit)
    if name in BKRL_LEVELS:
        kwargs: dict[str, Any] = dict(BKRL_LEVELS[name])
        return BKRL_LEVEL_CLASSES[kwargs.pop("kind")](**kwargs, **limit)
    spec = gym.spec(MINIGRID_LEVELS[name])
    return load_attr(spec.entry_point)(**spec.kwargs, **limit)
