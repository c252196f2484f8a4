"""Episodes as Hugging Face ``datasets`` parquet: one row per episode, its steps in list columns.

The columns mirror a Minari ``EpisodeData`` (``observations``, ``actions``, ``rewards``, ``terminations``,
``truncations``, ``infos``) plus per-episode ones (``episode_id``, ``seed``, ``env_id``, ``policy``,
``episode_return``, ``length``, ``success``, ``episode_metrics``). Spaces map to features: ``Text`` ->
``string``, ``Discrete`` -> ``int64``, an RGB ``uint8`` image ``Box`` -> ``Image`` (PNG, lossless), any
other ``Box`` -> nested lists of its dtype. The parquet schema carries the features, so
``datasets.load_dataset`` restores them.
"""

from __future__ import annotations

import io
import json
from collections.abc import Callable, Iterable, Iterator
from pathlib import Path
from typing import Any

import gymnasium as gym
import numpy as np

from textenvs.trajectories.info import require
from textenvs.trajectories.record import RECORDED_INFO_KEYS, Episode, metrics_json, plain

#: The data file, at the path the Hub's parquet loader reads as the ``train`` split.
DATA_FILE = "data/train-00000-of-00001.parquet"

#: Column -> what it holds, for the dataset card.
COLUMNS = {
    "episode_id": "int64: the episode's index, 0 to episodes - 1",
    "seed": "int64: the seed of `env.reset` (episode i: --seed + i)",
    "env_id": "string: the environment id",
    "policy": "string: the policy that played (`expert`, `random`)",
    "observations": "struct: per observation key, the T + 1 observations (the reset one, then one per step)",
    "actions": "list: the T actions (command strings; numbers for continuous-control envs)",
    "rewards": "list<float64>: the T rewards",
    "terminations": "list<bool>: the T `terminated` flags",
    "truncations": "list<bool>: the T `truncated` flags",
    "infos": "struct: the T + 1 values of " + ", ".join(RECORDED_INFO_KEYS),
    "episode_return": "float64: the sum of the rewards",
    "length": "int64: T, the number of steps",
    "success": "bool: the last step's `info['success']`",
    "episode_metrics": "string: JSON of the last step's `info['episode_metrics']` (the family's paper metrics)",
}

INFO_FEATURES = {
    "admissible_commands": [["string"]],
    "invalid_action": ["bool"],
    "feedback": ["string"],
    "success": ["bool"],
    "progression": ["float64"],
}


def is_image_space(space: gym.Space) -> bool:
    return (
        isinstance(space, gym.spaces.Box) and space.dtype == np.uint8 and len(space.shape) == 3 and space.shape[-1] == 3
    )


def space_feature(space: gym.Space) -> Any:
    """The ``datasets`` feature of one value of ``space``."""
    datasets = require("datasets")
    if isinstance(space, gym.spaces.Text):
        return datasets.Value("string")
    if isinstance(space, gym.spaces.Discrete):
        return datasets.Value("int64")
    if is_image_space(space):
        return datasets.Image()
    if isinstance(space, gym.spaces.Box):
        feature: Any = datasets.Value(str(space.dtype))
        for _ in space.shape:
            feature = [feature]
        return feature
    if isinstance(space, gym.spaces.Dict):
        return {key: space_feature(sub) for key, sub in space.spaces.items()}
    raise ValueError(f"no parquet mapping for {space}; supported spaces: Text, Discrete, Box, Dict")


def _value(feature: Any) -> Any:
    if isinstance(feature, list):
        return [_value(feature[0])]
    return require("datasets").Value(feature)


def episode_features(observation_space: gym.spaces.Dict, action_space: gym.Space) -> Any:
    """The ``datasets.Features`` of a row (one episode)."""
    datasets = require("datasets")
    value = datasets.Value
    return datasets.Features(
        {
            "episode_id": value("int64"),
            "seed": value("int64"),
            "env_id": value("string"),
            "policy": value("string"),
            "observations": {key: [space_feature(sub)] for key, sub in observation_space.spaces.items()},
            "actions": [space_feature(action_space)],
            "rewards": [value("float64")],
            "terminations": [value("bool")],
            "truncations": [value("bool")],
            "infos": {key: _value(kind) for key, kind in INFO_FEATURES.items()},
            "episode_return": value("float64"),
            "length": value("int64"),
            "success": value("bool"),
            "episode_metrics": value("string"),
        }
    )


def _encoder(space: gym.Space) -> Callable[[Any], Any]:
    if is_image_space(space):
        return require("datasets").Image().encode_example
    return plain


def episode_row(index: int, episode: Episode, env_id: str, policy: str, env: gym.Env) -> dict[str, Any]:
    """The row of one episode, its images PNG-encoded."""
    spaces = env.observation_space.spaces
    encode_action = _encoder(env.action_space)
    return {
        "episode_id": index,
        "seed": episode.seed,
        "env_id": env_id,
        "policy": policy,
        "observations": {
            key: [_encoder(spaces[key])(v) for v in values] for key, values in episode.observations.items()
        },
        "actions": [encode_action(a) for a in episode.actions],
        "rewards": episode.rewards,
        "terminations": episode.terminations,
        "truncations": episode.truncations,
        "infos": {key: episode.infos[key] for key in INFO_FEATURES},
        "episode_return": episode.episode_return,
        "length": len(episode),
        "success": episode.success,
        "episode_metrics": metrics_json(episode.metrics),
    }


def write_hf(root: Path, env: gym.Env, env_id: str, policy: str, episodes: Iterable[Episode]) -> None:
    """Write ``episodes`` to ``root / DATA_FILE``, one row group per episode (one episode in memory at a time)."""
    pa = require("pyarrow")
    pq = require("pyarrow.parquet")
    features = episode_features(env.observation_space, env.action_space)
    path = root / DATA_FILE
    path.parent.mkdir(parents=True)
    with pq.ParquetWriter(path, features.arrow_schema) as writer:
        for index, episode in enumerate(episodes):
            row = features.encode_example(episode_row(index, episode, env_id, policy, env))
            writer.write_table(pa.Table.from_pylist([row], schema=features.arrow_schema))


def _innermost_numpy_dtype(arrow_type: Any) -> Any:
    pa = require("pyarrow")
    while pa.types.is_list(arrow_type) or pa.types.is_large_list(arrow_type) or pa.types.is_fixed_size_list(arrow_type):
        arrow_type = arrow_type.value_type
    return arrow_type.to_pandas_dtype()


def _step_decoder(arrow_type: Any) -> Callable[[Any], Any]:
    """How one step's value of a column of this Arrow type becomes what the env gave."""
    pa = require("pyarrow")
    if pa.types.is_struct(arrow_type) and {f.name for f in arrow_type} == {"bytes", "path"}:
        from PIL import Image

        return lambda value: np.asarray(Image.open(io.BytesIO(value["bytes"])).convert("RGB"))
    if pa.types.is_list(arrow_type) or pa.types.is_large_list(arrow_type) or pa.types.is_fixed_size_list(arrow_type):
        dtype = _innermost_numpy_dtype(arrow_type)
        return lambda value: np.asarray(value, dtype=dtype)
    return lambda value: value


def _list_decoder(arrow_list_type: Any) -> Callable[[list[Any]], list[Any]]:
    decode = _step_decoder(arrow_list_type.value_type)
    return lambda values: [decode(v) for v in values]


def read_hf(root: Path, limit: int | None = None) -> Iterator[Episode]:
    """The episodes of ``root / DATA_FILE`` in order, at most ``limit``."""
    pq = require("pyarrow.parquet")
    path = root / DATA_FILE
    if not path.is_file():
        raise FileNotFoundError(f"{root} holds no {DATA_FILE}: not a textenvs dataset in the hf format")
    parquet = pq.ParquetFile(path)
    schema = parquet.schema_arrow
    observation_type = schema.field("observations").type
    decode_observations = {f.name: _list_decoder(f.type) for f in observation_type}
    decode_actions = _list_decoder(schema.field("actions").type)
    count = 0
    for batch in parquet.iter_batches(batch_size=16):
        for row in batch.to_pylist():
            if limit is not None and count >= limit:
                return
            count += 1
            yield Episode(
                seed=row["seed"],
                observations={k: decode_observations[k](v) for k, v in row["observations"].items()},
                actions=decode_actions(row["actions"]),
                rewards=row["rewards"],
                terminations=row["terminations"],
                truncations=row["truncations"],
                infos={key: row["infos"][key] for key in RECORDED_INFO_KEYS},
                metrics=json.loads(row["episode_metrics"]),
            )
