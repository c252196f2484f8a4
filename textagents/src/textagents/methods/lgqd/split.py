"""``textagents lgqd split``: the described items (their item numbers) shuffled with the config's seed and
cut into train, val and test by ``split_fractions`` (train and val rounded down, test the rest):
``split/split.json``."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np

from textagents.bench.store import write_json_atomic
from textagents.methods.lgqd.artifacts import Pipeline
from textagents.methods.lgqd.describe import load_descriptions

STAGE = "split"
SPLITS = ("train", "val", "test")


def split_items(count: int, fractions: tuple[float, float, float], seed: int) -> dict[str, list[int]]:
    """Items ``0 .. count-1`` shuffled by ``seed`` and cut by ``fractions``; disjoint, covering them all."""
    order = np.random.default_rng(seed).permutation(count).tolist()
    train = int(fractions[0] * count)
    val = int(fractions[1] * count)
    return {"train": order[:train], "val": order[train : train + val], "test": order[train + val :]}


def run_split(out: str | Path) -> dict[str, Any]:
    pipeline = Pipeline(out)
    config = pipeline.config()
    described = list(load_descriptions(pipeline))
    positions = split_items(len(described), config.split_fractions, config.seed)
    splits = {name: [described[k] for k in chosen] for name, chosen in positions.items()}
    write_json_atomic(
        pipeline.stage(STAGE) / "split.json",
        {"seed": config.seed, "fractions": list(config.split_fractions), **splits},
    )
    return {"stage": STAGE, **{name: len(items) for name, items in splits.items()}}
