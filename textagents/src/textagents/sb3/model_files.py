"""A trained SB3 model on disk as data only, never as code.

SB3's own zip format stores Python objects that run code when loaded. Here a model is
two files beside each other: ``<stem>.pth``, the state dicts of its networks and optimizer (read with
``torch.load(weights_only=True)``, which refuses anything but tensors and plain containers), and
``<stem>.json``, its training counters. The model itself is rebuilt from the run's ``config.json`` before
the weights are loaded into it. The JSON file is written last: a model whose JSON exists is complete.
"""

from __future__ import annotations

import io
import json
from pathlib import Path
from typing import Any

import torch
from stable_baselines3.common.base_class import BaseAlgorithm

from textagents.bench.store import write_bytes_atomic, write_text_atomic

WEIGHTS_SUFFIX = ".pth"
STATE_SUFFIX = ".json"
#: The training counters a resumed run continues from (those of them the algorithm has).
COUNTERS = ("num_timesteps", "_n_updates", "_episode_num", "_n_calls")


class ModelFileError(ValueError):
    """Model files that are missing, malformed or do not fit the model rebuilt from the run's settings."""


def model_files(stem: Path) -> tuple[Path, Path]:
    """The weights and the counters of the model saved as ``stem``."""
    return stem.with_name(stem.name + WEIGHTS_SUFFIX), stem.with_name(stem.name + STATE_SUFFIX)


def save_model(model: BaseAlgorithm, stem: Path) -> None:
    """Save ``model``'s state dicts and counters as ``stem.pth`` and ``stem.json``."""
    weights, state = model_files(stem)
    stem.parent.mkdir(parents=True, exist_ok=True)
    buffer = io.BytesIO()
    torch.save(model.get_parameters(), buffer)
    write_bytes_atomic(weights, buffer.getvalue())
    counters = {name: int(getattr(model, name)) for name in COUNTERS if hasattr(model, name)}
    write_text_atomic(state, json.dumps(counters, indent=2) + "\n")


def load_model_state(model: BaseAlgorithm, stem: Path) -> None:
    """Load the weights and counters saved as ``stem`` into ``model``, an algorithm built with the same
    settings (architecture, spaces); nothing in the files can run code."""
    weights, state = model_files(stem)
    for path in (weights, state):
        if not path.is_file():
            raise ModelFileError(f"{stem}: no saved model ({path.name} is missing)")
    try:
        params = torch.load(weights, map_location=model.device, weights_only=True)
    except Exception as error:
        raise ModelFileError(f"{weights}: not a weights file ({type(error).__name__}: {error})") from error
    expected = set(model.get_parameters())
    if not isinstance(params, dict) or set(params) != expected:
        found = sorted(params) if isinstance(params, dict) else type(params).__name__
        raise ModelFileError(f"{weights}: expected the state dicts {sorted(expected)}, found {found}")
    try:
        model.set_parameters(params, exact_match=True, device=model.device)
    except (RuntimeError, ValueError, KeyError) as error:
        raise ModelFileError(f"{weights} does not fit the model of the run's config.json: {error}") from error
    _set_counters(model, state)


def _set_counters(model: BaseAlgorithm, path: Path) -> None:
    try:
        counters: Any = json.loads(path.read_text())
    except ValueError as error:
        raise ModelFileError(f"{path}: not valid JSON: {error}") from error
    names = [name for name in COUNTERS if hasattr(model, name)]
    if not isinstance(counters, dict) or set(counters) != set(names):
        raise ModelFileError(f"{path}: expected the counters {names}, found {counters!r}")
    for name in names:
        value = counters[name]
        if not isinstance(value, int) or isinstance(value, bool) or value < 0:
            raise ModelFileError(f"{path}: {name} must be an int >= 0, got {value!r}")
        setattr(model, name, value)
