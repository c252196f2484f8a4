"""Choosing an episode at reset: a given one, one of a scene's original file, a generated one, or one of
LLM-Personalize's fixed per-scene episode lists."""

from __future__ import annotations

import functools
import zlib
from typing import Any

import numpy as np

from textenvs.envs.housekeep.annotations import load_splits
from textenvs.envs.housekeep.episodes import Episode, load_original_episodes, original_episode_asset
from textenvs.envs.housekeep.generator import generate_episode

EPISODE_SOURCES = ("generated", "original", "llm_personalize")

#: LLM-Personalize's episodes per scene (indices 0..99) and its split: episode i is a test episode when
#: i mod 25 < 5 (the first 5 of every 25), a training one otherwise.
LLM_PERSONALIZE_EPISODES = 100
PAPER_SPLITS = ("train", "test")


def paper_split_indices(split: str) -> tuple[int, ...]:
    """The indices of LLM-Personalize's ``split`` (``"train"`` or ``"test"``) episodes of a scene."""
    return tuple(i for i in range(LLM_PERSONALIZE_EPISODES) if (i % 25 < 5) == (split == "test"))


def llm_personalize_origin(scene: str) -> str:
    """Where a scene's LLM-Personalize episodes come from: ``"original"`` when Housekeep distributes its
    episode file (Merom_1, Pomaria_2 among the paper's scenes), else ``"generated"``."""
    return "original" if original_episode_asset(scene) is not None else "generated"


def llm_personalize_episode(scene: str, index: int, data_dir: str | None = None) -> Episode:
    """Episode ``index`` of a scene's LLM-Personalize list: the index-th seen-object episode of the original
    file, or an episode generated from a generator seeded by (scene, index) alone, the same in every process."""
    if not 0 <= index < LLM_PERSONALIZE_EPISODES:
        raise ValueError(f"episode_index={index!r} is out of range 0..{LLM_PERSONALIZE_EPISODES - 1}")
    if llm_personalize_origin(scene) == "original":
        return load_original_episodes(scene, data_dir)[original_indices(scene, "seen", data_dir)[index]]
    rng = np.random.default_rng([zlib.crc32(scene.encode()), index])
    return generate_episode(scene, "train", "seen", rng, episode_id=index, data_dir=data_dir)


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
    if source == "llm_personalize":
        index = options.get("episode_index")
        if index is None:
            indices = paper_split_indices(split)
            index = indices[int(rng.integers(len(indices)))]
        return llm_personalize_episode(scene, int(index), data_dir)
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
