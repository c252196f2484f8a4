"""Expert and random trajectories as datasets: Minari, or Hugging Face ``datasets`` parquet with a card.

``textenvs dataset create ID --episodes N --policy expert --out DIR [--format minari|hf] [--seed S]``;
in Python ``create_dataset`` and ``read_dataset``. The formats need ``pip install "textenvs[datasets]"``
(imported only when a dataset is written or read). ``docs/datasets.md`` describes the layouts.
"""

from textenvs.trajectories.create import TrajectoryDataset, create_dataset, read_dataset
from textenvs.trajectories.info import EXTRA, FORMATS, DatasetInfo
from textenvs.trajectories.record import (
    POLICIES,
    Episode,
    PolicyFactory,
    RandomPolicy,
    record_episode,
    record_episodes,
)

__all__ = [
    "EXTRA",
    "FORMATS",
    "POLICIES",
    "DatasetInfo",
    "Episode",
    "PolicyFactory",
    "RandomPolicy",
    "TrajectoryDataset",
    "create_dataset",
    "read_dataset",
    "record_episode",
    "record_episodes",
]
