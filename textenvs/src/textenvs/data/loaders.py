"""Safe loaders for data files that need more than ``open``: Housekeep scene YAMLs and pickled ``.npy``."""

from __future__ import annotations

import io
import os
from typing import Any

import numpy as np
import yaml

from textenvs.data.assets import ASSETS
from textenvs.data.locate import normalised_name, read_asset

_SafeBase = getattr(yaml, "CSafeLoader", yaml.SafeLoader)


class SceneLoader(_SafeBase):
    """``yaml.SafeLoader`` plus the one Python tag Housekeep scene files use: ``!!python/tuple``."""


def _construct_tuple(loader: yaml.SafeLoader, node: yaml.SequenceNode) -> tuple[Any, ...]:
    return tuple(loader.construct_sequence(node, deep=True))


SceneLoader.add_constructor("tag:yaml.org,2002:python/tuple", _construct_tuple)


def load_yaml(source: str | os.PathLike[str] | bytes) -> Any:
    """Parse a YAML file, or its bytes (``read_asset``'s); ``!!python/tuple`` becomes a tuple, every other
    Python tag is refused."""
    if isinstance(source, bytes):
        return yaml.load(source, Loader=SceneLoader)  # trusted: SceneLoader is a SafeLoader (tuples only)
    with open(source, encoding="utf-8") as stream:
        return yaml.load(stream, Loader=SceneLoader)  # trusted: SceneLoader is a SafeLoader (tuples only)


def load_npy(  # trusted: pickle only for pinned, sha256-checked files
    name: str, *, allow_pickle: bool = False, data_dir: str | os.PathLike[str] | None = None
) -> Any:
    """``np.load`` a data file by asset name; with ``allow_pickle=True`` only pinned files are accepted.

    The bytes loaded are the bytes ``read_asset`` checked against the table's sha256 (the file is opened
    once), so a pickle is only ever unpickled after its bytes matched.
    """
    if allow_pickle and normalised_name(name) not in ASSETS:
        pinned = ", ".join(n for n in ASSETS if n.endswith(".npy"))
        raise ValueError(
            f"refusing to unpickle {name!r}: allow_pickle=True is only allowed for files whose sha256 "
            f"is pinned in textenvs.data.ASSETS ({pinned})"
        )
    return np.load(io.BytesIO(read_asset(name, data_dir)), allow_pickle=allow_pickle)
