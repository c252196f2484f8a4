"""The Crafter-Text ids (imports no optional dependency)."""

from __future__ import annotations

from textenvs.core.registration import EnvEntry
from textenvs.envs.crafter_text.tasks import TASKS

_ENTRY_POINT = "textenvs.envs.crafter_text.env:CrafterTextEnv"

ENV_ENTRIES: tuple[EnvEntry, ...] = (
    EnvEntry(
        id="Crafter-Text-v0",
        entry_point=_ENTRY_POINT,
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
