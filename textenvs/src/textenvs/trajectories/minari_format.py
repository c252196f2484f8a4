"""Episodes as a Minari dataset (Arrow storage), loadable with ``minari.MinariDataset(DIR / "data")``.

Minari stores the spaces as they are: ``Text`` observations and actions as Arrow strings (Minari supports
``Text`` spaces natively), ``Discrete`` as int64, ``Box`` as fixed-size lists, images uncompressed
(``jpeg_encoding=False``: lossless). Minari needs every step's infos to have the same shape, so
``infos["admissible_commands"]`` holds each step's list as a JSON string; ``episode_metrics`` (only on the
last step) goes to each episode's metadata. The dataset's metadata has a ``textenvs`` entry (env id,
kwargs, policy, seeds) and the env spec, so ``dataset.recover_environment()`` rebuilds the env.
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any

import gymnasium as gym
import numpy as np
from gymnasium.envs.registration import EnvSpec

from textenvs.core.registration import LazyEntryPoint
from textenvs.trajectories.info import DatasetInfo, require
from textenvs.trajectories.record import RECORDED_INFO_KEYS, Episode, plain

#: Minari's data folder inside a dataset folder (``minari.load_dataset`` reads ``<root>/<id>/data``).
DATA_DIR = "data"
STORAGE_FORMAT = "arrow"


def serializable_spec(env: gym.Env) -> EnvSpec | None:
    """``env``'s spec with its lazy entry points as the ``module:Class`` strings Gymnasium can serialize;
    None when it still cannot (a kwarg that is not JSON): the dataset then cannot recover its env."""
    spec = env.spec
    if spec is None:
        return None
    lazy = {
        name: point.path
        for name in ("entry_point", "vector_entry_point")
        if isinstance(point := getattr(spec, name), LazyEntryPoint)
    }
    spec = dataclasses.replace(spec, **lazy)
    try:
        spec.to_json()
    except (TypeError, ValueError):
        return None
    return spec


def _buffer(index: int, episode: Episode) -> Any:
    from minari.data_collector import EpisodeBuffer

    infos = {key: list(values) for key, values in episode.infos.items()}
    infos["admissible_commands"] = [json.dumps(c) for c in infos["admissible_commands"]]
    return EpisodeBuffer(
        id=index,
        seed=episode.seed,
        observations=episode.observations,
        actions=episode.actions,
        rewards=episode.rewards,
        terminations=episode.terminations,
        truncations=episode.truncations,
        infos=infos,
    )


def write_minari(root: Path, env: gym.Env, episodes: Iterable[Episode]) -> Any:
    """Write ``episodes`` to ``root / DATA_DIR`` one at a time; return the Minari storage (for its
    metadata, written by ``write_minari_metadata`` once every episode is in)."""
    require("minari")
    require("pyarrow")
    from minari.dataset.minari_storage import MinariStorage

    storage = MinariStorage.new(
        (root / DATA_DIR).absolute(),  # Minari's size count joins a relative path twice
        observation_space=env.observation_space,
        action_space=env.action_space,
        env_spec=serializable_spec(env),
        data_format=STORAGE_FORMAT,
        jpeg_encoding=False,
    )
    for index, episode in enumerate(episodes):
        storage.update_episodes([_buffer(index, episode)])
        storage.update_episode_metadata([{"episode_metrics": plain(episode.metrics)}], [index])
    return storage


def write_minari_metadata(storage: Any, info: DatasetInfo, description: str) -> None:
    minari = require("minari")
    storage.update_metadata(
        {
            "dataset_id": info.minari_id,
            "minari_version": minari.__version__,
            "algorithm_name": info.policy,
            "description": description,
            "requirements": [f"textenvs=={info.textenvs_version}"],
            "textenvs": info.as_dict(),
        }
    )


def read_minari_info(root: Path) -> dict[str, Any]:
    """The ``textenvs`` entry of the dataset's metadata."""
    path = root / DATA_DIR / "metadata.json"
    metadata = json.loads(path.read_text())
    if "textenvs" not in metadata:
        raise ValueError(f"{path} has no 'textenvs' entry: a Minari dataset not made by textenvs")
    return metadata["textenvs"]


def _values(space: gym.Space, values: Any) -> list[Any]:
    """Minari's decoded column as the env's values: str, int, or arrays of the space's dtype."""
    if isinstance(space, gym.spaces.Text):
        return [str(v) for v in values]
    if isinstance(space, gym.spaces.Discrete):
        return [int(v) for v in values]
    if isinstance(space, gym.spaces.Box):
        return [np.asarray(v, dtype=space.dtype) for v in values]
    raise ValueError(f"no Minari mapping for {space}; supported spaces: Text, Discrete, Box, Dict")


def _infos(raw: dict[str, Any]) -> dict[str, list[Any]]:
    infos = {key: plain(raw[key]) for key in RECORDED_INFO_KEYS}
    infos["admissible_commands"] = [json.loads(c) for c in infos["admissible_commands"]]
    return infos


def read_minari(root: Path, limit: int | None = None) -> Iterator[Episode]:
    """The episodes of the Minari dataset in ``root / DATA_DIR``, in order, at most ``limit``."""
    require("minari")
    from minari import MinariDataset

    dataset = MinariDataset((root / DATA_DIR).absolute())
    indices = list(dataset.episode_indices)[:limit]
    metadata = list(dataset.storage.get_episode_metadata(indices))
    observation_space, action_space = dataset.observation_space, dataset.action_space
    for data, meta in zip(dataset.iterate_episodes(indices), metadata, strict=True):
        yield Episode(
            seed=int(meta["seed"]),
            observations={key: _values(observation_space[key], values) for key, values in data.observations.items()},
            actions=_values(action_space, data.actions),
            rewards=[float(r) for r in data.rewards],
            terminations=[bool(t) for t in data.terminations],
            truncations=[bool(t) for t in data.truncations],
            infos=_infos(data.infos),
            metrics=meta.get("episode_metrics", {}),
        )
