"""One id per registered family, with kwargs that keep its episodes short enough for agent tests."""

from __future__ import annotations

from pathlib import Path

import textenvs

FAMILIES = sorted({e.family for e in textenvs.ENV_TABLE})
FIRST_ID = {f: next(e.id for e in textenvs.ENV_TABLE if e.family == f) for f in FAMILIES}


def entry_of(family: str) -> textenvs.EnvEntry:
    return next(e for e in textenvs.ENV_TABLE if e.id == FIRST_ID[family])


def short_episode_kwargs(family: str, data_dir: Path) -> dict:
    return {
        "crafter_text": {"length": 25},
        "fastsim": {"max_steps": 20, "data_dir": str(data_dir)},
        "housekeep": {"max_commands": 12, "data_dir": str(data_dir)},
    }.get(family, {})
