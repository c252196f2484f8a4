"""GLAM's captioner: every recorded state captions exactly as GLAM's own code did."""

from __future__ import annotations

import gymnasium as gym
import numpy as np
from minigrid.core.constants import COLOR_TO_IDX, OBJECT_TO_IDX
from minigrid.core.world_object import Ball

import textenvs  # noqa: F401
from textenvs.envs.babyai_text import caption, caption_view
from textenvs.envs.babyai_text.captioner import max_caption_length

from .conftest import rebuild_state


def test_recorded_tables_are_minigrids(glam_captions):
    assert glam_captions["object_to_idx"] == OBJECT_TO_IDX
    assert glam_captions["color_to_idx"] == COLOR_TO_IDX


def test_every_recorded_state_captions_as_glam_did(glam_captions):
    samples = glam_captions["samples"]
    assert len(samples) == 2138
    mismatches = []
    for index, sample in enumerate(samples):
        got = caption(rebuild_state(sample))
        if got != sample["descriptions"]:
            mismatches.append((index, sample["level"], got, sample["descriptions"]))
    assert not mismatches, f"{len(mismatches)} of {len(samples)} differ; first: {mismatches[0]}"


def test_recorded_states_cover_the_captioners_cases(glam_captions):
    """The golden set exercises carrying, walls in three directions, both axes and doors."""
    sentences = [d for s in glam_captions["samples"] for d in s["descriptions"]]
    for fragment in ("You carry a", "wall 1 step forward", "steps left", "step right", " and ", "locked"):
        assert any(fragment in d for d in sentences), fragment


def _view(cells: dict[tuple[int, int], tuple[str, str, int]], size: int = 7) -> np.ndarray:
    """An encoded view, every cell visible and empty except ``cells`` ((i, j) -> (type, color, state))."""
    view = np.zeros((size, size, 3), dtype=np.uint8)
    view[:, :, 0] = OBJECT_TO_IDX["empty"]
    for (i, j), (kind, color, state) in cells.items():
        view[i, j] = (OBJECT_TO_IDX[kind], COLOR_TO_IDX[color], state)
    return view


def test_walls_only_when_nothing_stands_between():
    wall = ("wall", "grey", 0)
    view = _view({(3, 2): wall, (3, 4): ("ball", "red", 0), (0, 6): wall, (6, 6): wall})
    view[1, 6, 0] = OBJECT_TO_IDX["unseen"]  # unseen cells do not hide a wall behind them
    assert caption_view(view) == [
        "You see a wall 3 steps left",
        "You see a wall 3 steps right",
        "You see a red ball 2 steps forward",
    ]


def test_objects_column_by_column_and_doors_with_their_state():
    view = _view({(4, 1): ("door", "blue", 0), (2, 6): ("key", "yellow", 0), (2, 3): ("door", "red", 2)})
    assert caption_view(view, Ball("green")) == [
        "You carry a green ball",
        "You see a locked red door 1 step left and 3 steps forward",
        "You see a yellow key 1 step left",
        "You see a open blue door 1 step right and 5 steps forward",
    ]


def test_env_text_and_info_are_the_captioners_output():
    env = gym.make("BabyAI-Text-MixedTrainLocal-v0")
    obs, info = env.reset(seed=3)
    for command in ["go forward", "turn left", "go forward", "pick up", "turn right", "go forward"]:
        assert info["descriptions"] == caption(env)
        assert obs["text"] == "\n".join(info["descriptions"])
        obs, _, _, _, info = env.step(command)


def test_no_caption_exceeds_the_text_space():
    """The densest possible view (a locked purple door in every cell, a carried object) still fits."""
    view = _view({(i, j): ("door", "purple", 2) for i in range(7) for j in range(7) if (i, j) != (3, 6)})
    text = "\n".join(caption_view(view, Ball("purple")))
    space = gym.make("BabyAI-Text-GoToLocal-v0").observation_space["text"]
    assert len(text) <= max_caption_length(7, "\n") == space.max_length
