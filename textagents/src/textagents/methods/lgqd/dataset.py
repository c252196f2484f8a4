"""A split of the described archive as the decision transformer's stages read it."""

from __future__ import annotations

import json
import os
from dataclasses import dataclass
from typing import Any

import numpy as np

from textagents.methods.lgqd.annotate import ANNOTATIONS
from textagents.methods.lgqd.artifacts import Pipeline, PipelineError, read_npz
from textagents.methods.lgqd.describe import load_descriptions, read_annotations
from textagents.methods.lgqd.split import SPLITS


@dataclass(frozen=True)
class Episodes:
    """The episodes of one split: ``items`` int64[n] (their rows in ``annotate/``), ``descriptions`` and
    their ``styles``, ``bd`` float64[n, 2] (final x, y, real units), ``observations`` float32[n, T, 5] (the
    policy's inputs: three lasers, two bumpers), ``actions`` float32[n, T, 2] (its outputs; rounded to
    0.1 with the config's ``round_actions``, as the original records them), ``positions``
    float32[n, T, 2] (after each step) and ``annotations`` (the env's, per episode)."""

    items: np.ndarray
    descriptions: list[str]
    styles: list[str]
    bd: np.ndarray
    observations: np.ndarray
    actions: np.ndarray
    positions: np.ndarray
    annotations: list[Any]


def learned_actions(actions: np.ndarray, round_actions: bool) -> np.ndarray:
    """The actions the DT's stages learn: with ``round_actions`` rounded to 0.1, as the original's
    ``NavigationEnv.__call__`` records them (the policies' float32 outputs rounded in float32, as the env
    steps them, before clipping)."""
    return np.round(actions.astype(np.float32), 1) if round_actions else actions


def load_split(out: str | os.PathLike[str], name: str) -> Episodes:
    """Split ``name`` (train, val or test) of the pipeline folder ``out``."""
    if name not in SPLITS:
        raise PipelineError(f"no split {name!r}: choose one of {', '.join(SPLITS)}")
    pipeline = Pipeline(out)
    items = np.asarray(json.loads(pipeline.require("split", "split.json").read_text())[name], np.int64)
    rollouts = read_npz(pipeline.require("annotate", "rollouts.npz"))
    descriptions = load_descriptions(pipeline)
    annotations = read_annotations(pipeline.require("annotate", ANNOTATIONS))
    return Episodes(
        items=items,
        descriptions=[descriptions[i]["description"] for i in items],
        styles=[descriptions[i]["style"] for i in items],
        bd=rollouts["bd"][items],
        observations=rollouts["observations"][items],
        actions=learned_actions(rollouts["actions"][items], pipeline.config().round_actions),
        positions=rollouts["positions"][items],
        annotations=[annotations[i] for i in items],
    )
