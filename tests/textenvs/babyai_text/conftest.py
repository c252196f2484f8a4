"""Fixtures of the BabyAI-Text tests: GLAM's recorded captions, and minigrid states rebuilt from them."""

from __future__ import annotations

import functools
import gzip
import json
from pathlib import Path

import numpy as np
import pytest

pytest.importorskip("minigrid", reason="BabyAI-Text needs minigrid: pip install 'textenvs[babyai]'")

from minigrid.core.constants import COLOR_TO_IDX, OBJECT_TO_IDX
from minigrid.core.grid import Grid
from minigrid.core.mission import MissionSpace
from minigrid.core.world_object import WorldObj
from minigrid.minigrid_env import MiniGridEnv

GLAM_CAPTIONS = "babyai_text/glam_captions.json.gz"


@pytest.fixture(scope="session")
def glam_captions(data_dir: Path) -> dict:
    """GLAM's recorded states and captions (see ../shared/data/SOURCE.md)."""
    with gzip.open(data_dir / GLAM_CAPTIONS, "rt") as f:
        return json.load(f)


@functools.cache
def _blank_env(width: int, height: int) -> MiniGridEnv:
    return MiniGridEnv(mission_space=MissionSpace(lambda: ""), width=width, height=height, max_steps=1)


def rebuild_state(sample: dict) -> MiniGridEnv:
    """A minigrid 3.x env in a recorded state: the decoded grid, the agent's pose and what it carries.

    Envs are reused per grid size, so a rebuilt state is valid until the next ``rebuild_state``.
    """
    env = _blank_env(sample["width"], sample["height"])
    env.grid, _ = Grid.decode(np.array(sample["grid"], dtype=np.uint8))
    env.agent_pos = tuple(sample["agent_pos"])
    env.agent_dir = sample["agent_dir"]
    carrying = sample["carrying"]
    env.carrying = (
        None if carrying is None else WorldObj.decode(OBJECT_TO_IDX[carrying[0]], COLOR_TO_IDX[carrying[1]], 0)
    )
    return env
