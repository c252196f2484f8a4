"""Housekeep's human preference annotations (``data.npy``) and scene/object splits (``splits.yaml``).

``ranks[pair, object, annotator]``: positive = where the object belongs in a tidy house (1 = best),
negative = where it is found misplaced (-1 = most likely), 0 = implausible.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass

import numpy as np

from textenvs.data import load_npy, load_yaml, read_asset

#: Housekeep's agreement threshold: a pair counts when at least this many of the 10 annotators agree.
AGREEMENT_THRESHOLD = 6
#: Score given to neutral (neither correct nor misplaced) receptacles when sampling misplaced starts.
NEUTRAL_MISPLACE_SCORE = -5.0

SPLITS = ("train", "val", "test")
OBJECT_SPLITS = ("seen", "unseen")


@dataclass(frozen=True, eq=False)
class Annotations:
    """The annotation matrix with Housekeep's derived rules."""

    pairs: tuple[str, ...]  # "room|receptacle", e.g. "bathroom|bottom_cabinet"
    objects: tuple[str, ...]  # object categories, e.g. "tennis_ball"
    ranks: np.ndarray  # int [pairs, objects, annotators]

    @functools.cached_property
    def pair_index(self) -> dict[str, int]:
        return {pair: i for i, pair in enumerate(self.pairs)}

    @functools.cached_property
    def object_index(self) -> dict[str, int]:
        return {obj: i for i, obj in enumerate(self.objects)}

    @functools.cached_property
    def correct(self) -> np.ndarray:
        """bool [pairs, objects]: at least 6 of 10 annotators rank the pair positive."""
        return (self.ranks > 0).sum(-1) >= AGREEMENT_THRESHOLD

    @functools.cached_property
    def misplace_score(self) -> np.ndarray:
        """float [pairs, objects]: Housekeep's score for starting an object misplaced there.

        The mean negative rank where at least 6 annotators rank the pair negative, -5 for neutral pairs,
        NaN where the pair is correct (never a misplaced start).
        """
        negative = self.ranks < 0
        count = negative.sum(-1)
        mean_negative = np.where(negative, self.ranks, 0).sum(-1) / np.maximum(count, 1)
        score = np.where(count >= AGREEMENT_THRESHOLD, mean_negative, NEUTRAL_MISPLACE_SCORE)
        return np.where(self.correct, np.nan, score).astype(np.float64)

    @functools.cached_property
    def positive_fraction(self) -> np.ndarray:
        """float [pairs, objects]: the fraction of annotators ranking the pair positive (soft score)."""
        return (self.ranks > 0).mean(-1)

    @functools.cached_property
    def mean_reciprocal_rank(self) -> np.ndarray:
        """float [pairs, objects]: mean of 1/rank over the positive ranks (0 where none)."""
        positive = self.ranks > 0
        reciprocal = np.where(positive, 1.0 / np.where(positive, self.ranks, 1), 0.0)
        return reciprocal.sum(-1) / np.maximum(positive.sum(-1), 1)


@functools.lru_cache(maxsize=4)
def load_annotations(data_dir: str | None = None) -> Annotations:
    """The annotations of ``housekeep/amt/data.npy`` (sha256-checked before it is unpickled)."""
    pinned = load_npy("housekeep/amt/data.npy", allow_pickle=True, data_dir=data_dir)  # trusted: pinned sha256
    raw = pinned.item()
    ranks = np.asarray(raw["ranks"], dtype=np.int64)
    pairs = tuple(str(p) for p in raw["room_receptacles"])
    objects = tuple(str(o) for o in raw["objects"])
    if ranks.shape[:2] != (len(pairs), len(objects)):
        raise ValueError(f"data.npy ranks have shape {ranks.shape}, expected ({len(pairs)}, {len(objects)}, 10)")
    ranks.setflags(write=False)
    return Annotations(pairs=pairs, objects=objects, ranks=ranks)


@dataclass(frozen=True)
class Splits:
    """Housekeep's splits: scenes (8 train, 2 val, 4 test) and object categories."""

    scenes: dict[str, tuple[str, ...]]  # split -> scene names like "Pomaria_2_int"
    objects: dict[str, tuple[str, ...]]  # split -> object categories

    def scene_split(self, scene: str) -> str:
        for split, names in self.scenes.items():
            if scene in names:
                return split
        valid = sorted(n for names in self.scenes.values() for n in names)
        raise ValueError(f"unknown Housekeep scene {scene!r}; valid scenes: {', '.join(valid)}")

    def episode_objects(self, split: str, objects_split: str) -> tuple[str, ...]:
        """Object categories of a split's episodes: train categories for train and for seen val/test,
        the split's own (held-out) categories for unseen val/test (Housekeep's convention)."""
        if split == "train" or objects_split == "seen":
            return self.objects["train"]
        return self.objects[split]


@functools.lru_cache(maxsize=4)
def load_splits(data_dir: str | None = None) -> Splits:
    raw = load_yaml(read_asset("housekeep/amt/splits.yaml", data_dir))
    scenes = {s: tuple(p.rsplit("/", 1)[-1].removesuffix(".glb") for p in raw["scenes"][s]) for s in SPLITS}
    objects = {s: tuple(raw["objects"][s]) for s in SPLITS}
    return Splits(scenes=scenes, objects=objects)


def all_scenes(data_dir: str | None = None) -> tuple[str, ...]:
    """The 14 scene names, sorted."""
    return tuple(sorted(n for names in load_splits(data_dir).scenes.values() for n in names))
