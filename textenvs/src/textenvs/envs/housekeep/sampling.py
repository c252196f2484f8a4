"""Choosing an episode at reset: a given one, one of a scene's original file, or a generated one."""

from __future__ import annotations

import functools
from typing import Any

import numpy as np

from textenvs.envs.housekeep.annotations import load_splits
from textenvs.envs.housekeep.episodes import Episode, load_original_episodes
from textenvs.envs.housekeep.generator import generate_episode

EPISODE_SOURCES = ("generated", "original")


@functools.lru_cache(maxsize=64)
def original_indices(scene: str, objects_split: str, data_dir: str | None = None) -> tuple[int, ...]:
    """Episodes of a scene's original file with seen (train) object categories only, or with unseen ones.

    Housekeep's val and test files hold both kinds (first half seen, second half unseen).
    """
    train = frozenset(load_splits(data_dir).objects["train"])
    episodes = load_original_episodes(scene, data_dir)
    indices = tuple(i for i, e in enumerate(episodes) if train.issuperset(e.categories) == (objects_split == "seen"))
    if not indices:
        raise ValueError(
            f"the original episodes of {scene} have no {objects_split!r} objects; use the other objects_split"
        )
    return indices


def choose_episode(
    scenes: tuple[str, ...],
    source: str,
    split: str,
    objects_split: str,
    rng: np.random.Generator,
    options: dict[str, Any],
    data_dir: str | None = None,
) -> Episode:
    """The episode for a reset; ``options`` may name ``episode`` (an ``Episode``), ``scene`` and
    ``episode_index`` (an index into the scene's original file)."""
    given = options.get("episode")
    if isinstance(given, Episode):
        if given.scene not in scenes:
            raise ValueError(f"episode of scene {given.scene!r}; this env's scenes: {', '.join(scenes)}")
        return given
    scene = options.get("scene")
    if scene is None:
        scene = scenes[int(rng.integers(len(scenes)))]
    elif scene not in scenes:
        raise ValueError(f"reset option scene={scene!r} is not one of this env's scenes: {', '.join(scenes)}")
    if source == "original":
        episodes = load_original_episodes(scene, data_dir)
        index = options.get("episode_index")
        if index is None:
            indices = original_indices(scene, objects_split, data_dir)
            index = indices[int(rng.integers(len(indices)))]
        if not 0 <= int(index) < len(episodes):
            raise ValueError(f"episode_index={index!r} is out of range 0..{len(episodes) - 1} for {scene}")
        return episodes[int(index)]
    return generate_episode(scene, split, objects_split, rng, data_dir=data_dir)
