"""The Crafter-Text ids (imports no optional dependency)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from textenvs.core.registration import EnvEntry
from textenvs.envs.crafter_text.tasks import TASKS, CrafterTask

_ENTRY_POINT = "textenvs.envs.crafter_text.env:CrafterTextEnv"

ENV_ENTRIES: tuple[EnvEntry, ...] = (
    EnvEntry(
        id="Crafter-Text-v0",
        entry_point=_ENTRY_POINT,
        vector_entry_point="textenvs.envs.crafter_text.vector_env:CrafterTextVectorEnv",
        family="crafter_text",
        requires=("crafter",),
        extra="crafter",
        summary="Crafter's full game (22 achievements) with SmartPlay/ELLM/BALROG captions",
    ),
    *(
        EnvEntry(
            id=f"Crafter-Text-{task.name}-v0",
            entry_point=_ENTRY_POINT,
            family="crafter_text",
            kwargs={"task": task.name},
            requires=("crafter",),
            extra="crafter",
            summary=f"Crafter until {task.achievement}: {task.mission}",
        )
        for task in TASKS.values()
    ),
    *(
        EnvEntry(
            id=f"Crafter-Text-ELLM{suffix}-v0",
            entry_point="textenvs.envs.crafter_text.ellm_env:CrafterTextEllmEnv",
            family="crafter_text",
            kwargs={"hard": hard},
            requires=("crafter",),
            extra="crafter",
            summary=f"ELLM's modified Crafter (400 steps, one-hit kills, 1-wood table), its {count} action names",
        )
        for suffix, hard, count in (("", False, 27), ("-Hard", True, 139))
    ),
)


def single_task(env_id: str, kwargs: Mapping[str, Any]) -> CrafterTask | None:
    """The task a Crafter-Text env made as ``gym.make(env_id, **kwargs)`` plays: its ``task`` kwarg, given or set
    by a single-task id; None for the open game and for ids that are not Crafter-Text's."""
    entry = next((e for e in ENV_ENTRIES if e.id == env_id and e.entry_point == _ENTRY_POINT), None)
    if entry is None:
        return None
    task = kwargs.get("task", entry.kwargs.get("task"))
    return TASKS[task] if task is not None else None
