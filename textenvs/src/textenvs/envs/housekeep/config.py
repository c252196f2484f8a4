"""The arguments shared by the single- and multi-robot envs, checked once, and what follows from them."""

from __future__ import annotations

import functools
from dataclasses import dataclass
from typing import Any

import numpy as np

from textenvs.core.spaces import check_choice
from textenvs.envs.housekeep import captioner
from textenvs.envs.housekeep.annotations import OBJECT_SPLITS, SPLITS, Annotations, load_annotations, load_splits
from textenvs.envs.housekeep.episodes import Episode, scenes_with_original_episodes
from textenvs.envs.housekeep.generator import OBJECT_COUNTS
from textenvs.envs.housekeep.sampling import EPISODE_SOURCES, PAPER_SPLITS, choose_episode, original_indices
from textenvs.envs.housekeep.scenes import Scene, load_scene


@dataclass(frozen=True, eq=False)
class HousekeepConfig:
    scenes: tuple[Scene, ...]
    split: str
    episode_source: str
    objects_split: str
    text_style: str
    annotations: Annotations
    data_dir: str | None

    @classmethod
    def create(
        cls,
        scenes: list[str] | tuple[str, ...] | None,
        split: str,
        episode_source: str,
        objects_split: str,
        text_style: str,
        data_dir: str | None,
    ) -> HousekeepConfig:
        """Check every argument; bad ones raise naming the valid values. ``split`` is Housekeep's scene split,
        except with ``episode_source="llm_personalize"``, where it is LLM-Personalize's episode split."""
        check_choice("episode_source", episode_source, EPISODE_SOURCES)
        if episode_source == "llm_personalize":
            check_choice("split (LLM-Personalize's episode split)", split, PAPER_SPLITS)
            if objects_split != "seen" or scenes is None:
                raise ValueError(
                    "episode_source='llm_personalize' needs scenes= and objects_split='seen' (its episodes use "
                    f"the training object categories), got scenes={scenes!r}, objects_split={objects_split!r}"
                )
        else:
            check_choice("split", split, SPLITS)
        check_choice("objects_split", objects_split, OBJECT_SPLITS)
        check_choice("text_style", text_style, captioner.TEXT_STYLES)
        if split == "train" and objects_split == "unseen":
            raise ValueError(
                "objects_split='unseen' needs split='val' or 'test': Housekeep holds out object categories there only"
            )
        data_dir = None if data_dir is None else str(data_dir)
        if scenes is None:
            scenes = load_splits(data_dir).scenes[split]
            if episode_source == "original":
                scenes = [s for s in scenes if s in scenes_with_original_episodes()]
        if isinstance(scenes, str) or not scenes:
            raise ValueError(f"scenes must be a non-empty list of scene names, got {scenes!r}")
        loaded = tuple(load_scene(name, data_dir) for name in scenes)
        if episode_source == "original":
            for scene in loaded:  # fail now, naming the scenes that have files or the objects_split to use
                original_indices(scene.name, objects_split, data_dir)
        return cls(loaded, split, episode_source, objects_split, text_style, load_annotations(data_dir), data_dir)

    def text_bound(self) -> int:
        """The longest text view any of the scenes can produce."""
        longest_object = max(len(o) for o in self.annotations.objects) + 3
        return max(captioner.text_length_bound(s, max(OBJECT_COUNTS), longest_object) for s in self.scenes)

    def admissible_bound(self) -> int:
        """More than the number of commands ever admissible at once (the discrete action count)."""
        most_places = max(len(s.rooms) + 2 * len(s.reachable) for s in self.scenes)
        return most_places + 2 * max(OBJECT_COUNTS) + 4

    def choose_episode(self, rng: np.random.Generator, options: dict[str, Any]) -> Episode:
        return choose_episode(
            self.scene_names, self.episode_source, self.split, self.objects_split, rng, options, self.data_dir
        )

    def scene(self, name: str) -> Scene:
        return self.scene_by_name[name]

    @functools.cached_property
    def scene_names(self) -> tuple[str, ...]:
        return tuple(s.name for s in self.scenes)

    @functools.cached_property
    def scene_by_name(self) -> dict[str, Scene]:
        return {s.name: s for s in self.scenes}
