"""Safe loaders for data files that need more than ``open``: Housekeep scene YAMLs and pickled ``.npy``."""

from __future__ import annotations

import os
from typing import Any

import numpy as np
import yaml

from textenvs.data.assets import ASSETS
from textenvs.data.locate import asset_path

_SafeBase = getattr(yaml, "CSafeLoader", yaml.SafeLoader)


class SceneLoader(_SafeBase):
    """``yaml.SafeLoader`` plus the one Python tag Housekeep scene files use: ``!!python/tuple``."""


def _construct_tuple(loader: yaml.SafeLoader, node: yaml.SequenceNode) -> tuple[Any, ...]:
    return tuple(loader.construct_sequence(node, deep=True))


SceneLoader.add_constructor("tag:yaml.org,2002:python/tuple", _construct_tuple)


def load_yaml(path: str | os.PathLike[str]) -> Any:
    """Parse a YAML file; ``!!python/tuple`` becomes a tuple, every other Python tag is refused."""
    with open(path, encoding="utf-8") as stream:
        return yaml.load(stream, Loader=SceneLoader)  # SceneLoader derives from SafeLoader


def load_npy(name: str, *, allow_pickle: bool = False, data_dir: str | os.PathLike[str] | None = None) -> Any:
    """``np.load`` a data file by asset name; with ``allow_pickle=True`` only pinned files are accepted.

    ``asset_path`` verifies the sha256 of every pinned file before it returns, so a pickle is only
    ever unpickled after its bytes matched the table.
    """
    if allow_pickle and name not in ASSETS:
        pinned = ", ".join(n for n in ASSETS if n.endswith(".npy"))
        raise ValueError(
            f"refusing to unpickle {name!r}: allow_pickle=True is only allowed for files whose sha256 "
            f"is pinned in textenvs.data.ASSETS ({pinned})"
        )
    return np.load(asset_path(name, data_dir), allow_pickle=allow_pickle)
