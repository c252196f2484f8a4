"""Housekeep's episode generator (``build_cos_eor_dataset_v3.py``), on the symbolic scene.

Per episode: 7-10 objects, 3-5 of them misplaced; objects are the split's categories in random order;
a misplaced object tries the scene's misplace candidates (pairs at least 6 of 10 annotators rank negative,
neutral pairs at score -5) in an order drawn by softmax over their scores (tau = 3) without replacement,
a correctly placed one tries its correct pairs best-ranked first; a receptacle takes at most 2 objects;
every start receptacle and at least one correct receptacle of a misplaced object must be reachable; with
probability 0.25 the scene's cabinets and shelves are left out of the episode.
"""

from __future__ import annotations

import functools
import operator
from collections.abc import Iterator
from dataclasses import dataclass

import numpy as np

from textenvs.core.spaces import check_choice
from textenvs.envs.housekeep.annotations import OBJECT_SPLITS, SPLITS, Annotations, load_annotations, load_splits
from textenvs.envs.housekeep.episodes import Episode
from textenvs.envs.housekeep.scenes import Scene, load_scene

OBJECT_COUNTS = (7, 8, 9, 10)
MISPLACED_COUNTS = (3, 4, 5)
SOFTMAX_TAU = 3.0
MAX_OBJECTS_PER_RECEPTACLE = 2
RECEPTACLE_DROPOUT = 0.25
DROPOUT_CATEGORIES = frozenset({"bottom_cabinet", "shelf", "top_cabinet", "bottom_cabinet_no_top"})
MAX_ATTEMPTS = 100
NOISE_ROWS_PER_DRAW = 6


@dataclass(frozen=True)
class ObjectCandidates:
    """Where one object category can start in one scene."""

    category: str
    misplace_pairs: tuple[int, ...]  # annotation pair indices, misplaced or neutral
    misplace_logits: tuple[float, ...]  # their scores (mean negative rank, or -5) over tau
    correct_pairs: tuple[int, ...]  # correct pairs, best mean rank first
    correct_instances: frozenset[int]  # scene receptacle indices where the object is correct


@dataclass(frozen=True, eq=False)
class SceneTables:
    """Per (scene, object categories): candidates and the receptacle instances of each pair."""

    scene: Scene
    candidates: tuple[ObjectCandidates, ...]
    instances: dict[int, tuple[int, ...]]  # pair -> reachable scene receptacle indices it covers

    def correct_positions(self, candidate: ObjectCandidates, dropout: bool) -> tuple[int, ...]:
        """The candidate's correct receptacles as indices into the episode's receptacle list."""
        key = (candidate.category, dropout)
        cached = self._correct_positions.get(key)
        if cached is None:
            _, present, position = self.receptacle_sets[dropout]
            cached = self._correct_positions[key] = tuple(
                position[i] for i in sorted(candidate.correct_instances & present)
            )
        return cached

    @functools.cached_property
    def _correct_positions(self) -> dict[tuple[str, bool], tuple[int, ...]]:
        return {}

    @functools.cached_property
    def most_misplace_pairs(self) -> int:
        return max(len(c.misplace_pairs) for c in self.candidates)

    @functools.cached_property
    def receptacle_sets(self) -> dict[bool, tuple[tuple[str, ...], frozenset[int], dict[int, int]]]:
        """Without and with dropout: the episode's receptacle keys, their scene indices and positions."""
        sets = {}
        for dropout in (False, True):
            present = [
                i for i, r in enumerate(self.scene.receptacles) if not (dropout and r.category in DROPOUT_CATEGORIES)
            ]
            keys = tuple(self.scene.receptacles[i].key for i in present)
            sets[dropout] = (keys, frozenset(present), {index: i for i, index in enumerate(present)})
        return sets


def _mean_positive_rank(ranks: np.ndarray) -> float:
    positive = ranks[ranks > 0]
    return float(positive.mean())


@functools.lru_cache(maxsize=64)
def scene_tables(scene_name: str, categories: tuple[str, ...], data_dir: str | None = None) -> SceneTables:
    scene = load_scene(scene_name, data_dir)
    annotations: Annotations = load_annotations(data_dir)
    instances: dict[int, list[int]] = {}
    for index in scene.reachable:
        for pair in scene.receptacles[index].pairs:
            instances.setdefault(pair, []).append(index)
    scene_pairs = sorted(instances)
    candidates = []
    for category in categories:
        column = annotations.object_index[category]
        correct = [p for p in scene_pairs if annotations.correct[p, column]]
        misplace = [p for p in scene_pairs if not annotations.correct[p, column]]
        if not correct or not misplace:
            continue
        correct.sort(key=lambda p: _mean_positive_rank(annotations.ranks[p, column]))
        correct_instances = frozenset(i for p in correct for i in instances[p])
        candidates.append(
            ObjectCandidates(
                category=category,
                misplace_pairs=tuple(misplace),
                misplace_logits=tuple(float(annotations.misplace_score[p, column]) / SOFTMAX_TAU for p in misplace),
                correct_pairs=tuple(correct),
                correct_instances=correct_instances,
            )
        )
    return SceneTables(scene=scene, candidates=tuple(candidates), instances={p: tuple(v) for p, v in instances.items()})


def _softmax_order(candidate: ObjectCandidates, gumbel_noise: list[float]) -> Iterator[int]:
    """All misplace pairs in an order drawn by softmax(score / tau) without replacement, lazily.

    Sorting Gumbel-perturbed logits draws exactly that order (Plackett-Luce); ``gumbel_noise`` is a row
    of standard Gumbel noise at least as long as the candidate's pairs. (Plain Python: for ~20 pairs it
    is faster than numpy's per-call overhead.) The first pair is nearly always free, so it comes from a
    ``max`` (the first of equal keys, as the stable descending sort puts it) and the rest is sorted only
    when asked for.
    """
    keys = list(map(operator.add, candidate.misplace_logits, gumbel_noise))
    pairs = candidate.misplace_pairs
    yield pairs[keys.index(max(keys))]
    order = sorted(range(len(keys)), key=keys.__getitem__, reverse=True)
    for i in order[1:]:
        yield pairs[i]


def generate_episode(
    scene_name: str,
    split: str,
    objects_split: str,
    rng: np.random.Generator,
    episode_id: int = 0,
    data_dir: str | None = None,
) -> Episode:
    """One episode drawn with Housekeep's procedure; all randomness from ``rng``."""
    check_choice("split", split, SPLITS)
    check_choice("objects_split", objects_split, OBJECT_SPLITS)
    categories = load_splits(data_dir).episode_objects(split, objects_split)
    tables = scene_tables(scene_name, categories, data_dir)
    for _ in range(MAX_ATTEMPTS):
        episode = _attempt(tables, rng, episode_id)
        if episode is not None:
            return episode
    raise RuntimeError(f"could not generate a Housekeep episode for scene {scene_name!r} ({split}/{objects_split})")


def _attempt(tables: SceneTables, rng: np.random.Generator, episode_id: int) -> Episode | None:
    scene = tables.scene
    n_objects = OBJECT_COUNTS[int(rng.integers(len(OBJECT_COUNTS)))]
    n_misplaced = MISPLACED_COUNTS[int(rng.integers(len(MISPLACED_COUNTS)))]
    dropout = bool(rng.random() < RECEPTACLE_DROPOUT)
    keys, present_set, position = tables.receptacle_sets[dropout]
    load: dict[int, int] = {}
    placed: list[tuple[ObjectCandidates, int]] = []
    misplaced = 0
    # Gumbel noise for the candidates tried as misplaced, drawn a few rows per numpy call.
    noise: list[list[float]] = []
    for index in rng.permutation(len(tables.candidates)).tolist():
        if len(placed) == n_objects and misplaced == n_misplaced:
            break
        candidate = tables.candidates[index]
        if dropout and candidate.correct_instances.isdisjoint(present_set):
            continue
        wants_misplaced = misplaced < n_misplaced
        if wants_misplaced:
            if not noise:
                noise = rng.gumbel(size=(NOISE_ROWS_PER_DRAW, tables.most_misplace_pairs)).tolist()
            pairs = _softmax_order(candidate, noise.pop())
        else:
            pairs = candidate.correct_pairs
        start = _first_free(pairs, tables, present_set, load, candidate, wants_misplaced)
        if start is None:
            continue
        load[start] = load.get(start, 0) + 1
        placed.append((candidate, start))
        misplaced += wants_misplaced
    if len(placed) != n_objects or misplaced != n_misplaced:
        return None
    return Episode(
        scene=scene.name,
        episode_id=episode_id,
        receptacles=keys,
        objects=tuple(f"{c.category}_1" for c, _ in placed),
        categories=tuple(c.category for c, _ in placed),
        start=tuple(position[s] for _, s in placed),
        correct=tuple(tables.correct_positions(c, dropout) for c, _ in placed),
        robot_start=scene.rooms[int(rng.integers(len(scene.rooms)))].center,
    )


def _first_free(
    pairs, tables: SceneTables, present: frozenset[int], load: dict[int, int], candidate: ObjectCandidates, misplace
) -> int | None:
    for pair in pairs:
        for instance in tables.instances.get(int(pair), ()):
            if instance not in present or load.get(instance, 0) >= MAX_OBJECTS_PER_RECEPTACLE:
                continue
            if misplace and instance in candidate.correct_instances:
                continue
            return instance
    return None
