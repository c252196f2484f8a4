"""``create_dataset``: seeded episodes of a policy written as a dataset folder; ``read_dataset`` reads one back."""

from __future__ import annotations

import os
import shutil
import tempfile
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from tqdm import tqdm

from textenvs import __version__
from textenvs.trajectories.card import CARD_FILE, dataset_card, read_card_info, summary
from textenvs.trajectories.hf_format import DATA_FILE, read_hf, write_hf
from textenvs.trajectories.info import DatasetInfo, check_format, require
from textenvs.trajectories.minari_format import (
    DATA_DIR,
    read_minari,
    read_minari_info,
    write_minari,
    write_minari_metadata,
)
from textenvs.trajectories.record import (
    Episode,
    PolicyFactory,
    make_env,
    policy_factory,
    policy_label,
    record_episodes,
)


@dataclass
class TrajectoryDataset:
    """A dataset read back: its provenance and (up to the limit asked) its episodes, in order."""

    info: DatasetInfo
    episodes: list[Episode]


def _check_out(out: Path) -> None:
    if out.exists() and (not out.is_dir() or any(out.iterdir())):
        raise FileExistsError(f"{out} already exists and is not an empty folder: choose a new --out")


def _publish(tmp: Path, out: Path) -> None:
    """Move the finished folder into place: readers never see a half-written dataset."""
    _check_out(out)
    if out.exists():
        out.rmdir()
    os.replace(tmp, out)


def _counted(episodes: Iterable[Episode], lengths: list[int], progress: bool, total: int) -> Iterator[Episode]:
    for episode in tqdm(episodes, total=total, desc="episodes", unit="ep", disable=not progress):
        lengths.append(len(episode))
        yield episode


def create_dataset(
    env_id: str,
    out: str | Path,
    *,
    episodes: int,
    policy: str | PolicyFactory = "expert",
    policy_name: str | None = None,
    format: str = "hf",
    seed: int = 0,
    env_kwargs: dict[str, Any] | None = None,
    progress: bool = False,
) -> DatasetInfo:
    """Play ``episodes`` episodes of ``policy`` on ``env_id``, episode i reset with seed ``seed + i``, and write
    them to the new folder ``out`` as a ``format`` dataset (``"hf"``: parquet with a dataset card;
    ``"minari"``: a Minari dataset, with the same card). The same arguments write the same bytes.

    ``policy`` is ``"expert"``, ``"random"``, or a factory ``(env, seed) -> policy`` of any agent that follows
    the expert protocol (``reset``, ``act``), named in the dataset by ``policy_name``. Needs
    ``pip install "textenvs[datasets]"``.
    """
    check_format(format)
    make_policy, policy_name = policy_factory(policy), policy_label(policy, policy_name)
    if episodes < 1:
        raise ValueError(f"episodes must be >= 1, got {episodes}")
    require("minari" if format == "minari" else "datasets")
    out = Path(out)
    _check_out(out)
    out.parent.mkdir(parents=True, exist_ok=True)
    env_kwargs = dict(env_kwargs or {})
    env = make_env(env_id, env_kwargs)
    seeds = tuple(range(seed, seed + episodes))
    lengths: list[int] = []
    stream = _counted(record_episodes(env, make_policy, seeds), lengths, progress, episodes)
    tmp = Path(tempfile.mkdtemp(dir=out.parent, prefix=f".{out.name}.", suffix=".tmp"))
    try:
        if format == "hf":
            write_hf(tmp, env, env_id, policy_name, stream)
        else:
            storage = write_minari(tmp, env, stream)
        info = DatasetInfo(env_id, policy_name, format, seeds, sum(lengths), env_kwargs, __version__)
        if format == "minari":
            write_minari_metadata(storage, info, summary(info))
        (tmp / CARD_FILE).write_text(dataset_card(info, env))
        tmp.chmod(0o755)  # mkdtemp's 0700 would hide the dataset from the rest of a team
        _publish(tmp, out)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    finally:
        env.close()
    return info


def dataset_format(path: Path) -> str:
    """``"hf"`` or ``"minari"``, from what the folder holds."""
    if (path / DATA_FILE).is_file():
        return "hf"
    if (path / DATA_DIR / "metadata.json").is_file():
        return "minari"
    raise FileNotFoundError(
        f"{path} is not a textenvs dataset: it has neither {DATA_FILE} (hf) nor {DATA_DIR}/metadata.json (minari); "
        "make one with `textenvs dataset create`"
    )


def read_dataset(path: str | Path, limit: int | None = None) -> TrajectoryDataset:
    """The dataset in folder ``path`` (either format): its info and its first ``limit`` episodes (all by
    default), with observations and actions as the env gave them."""
    path = Path(path)
    if limit is not None and limit < 0:
        raise ValueError(f"limit must be >= 0, got {limit}")
    kind = dataset_format(path)
    if kind == "hf":
        card = path / CARD_FILE
        info = DatasetInfo.from_dict(read_card_info(card.read_text(), str(card)), str(card))
        episodes = list(read_hf(path, limit))
    else:
        info = DatasetInfo.from_dict(read_minari_info(path), str(path / DATA_DIR))
        episodes = list(read_minari(path, limit))
    return TrajectoryDataset(info, episodes)
