"""Safe loaders for data files that need more than ``open``: Housekeep scene YAMLs and object-array ``.npy``."""

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


def load_npy(
    name: str,
    *,
    allow_pickle: bool = False,  # trusted: honoured only for files pinned in ASSETS, after their sha256 check
    data_dir: str | os.PathLike[str] | None = None,
) -> Any:
    """A ``.npy`` data file by asset name; object arrays only from files pinned in ``ASSETS``.

    The bytes parsed are the bytes ``read_asset`` checked against the table's sha256 (the file is opened
    once), so an object array is only ever read after its bytes matched.
    """
    if allow_pickle and normalised_name(name) not in ASSETS:  # trusted: the check that refuses unpinned files
        pinned = ", ".join(n for n in ASSETS if n.endswith(".npy"))
        raise ValueError(
            f"refusing to unpickle {name!r}: object arrays are only read from files whose sha256 "  # trusted: a refusal
            f"is pinned in textenvs.data.ASSETS ({pinned})"
        )
    array_bytes = io.BytesIO(read_asset(name, data_dir))
    return np.load(array_bytes, allow_pickle=allow_pickle)  # trusted: sha256-checked bytes, pinned files only
