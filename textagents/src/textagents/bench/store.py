"""A run's files: ``episodes.jsonl`` (one line per finished episode, appended durably) and ``run.json``."""

from __future__ import annotations

import json
import os
import tempfile
from pathlib import Path
from typing import Any

import numpy as np

EPISODES_FILE = "episodes.jsonl"
RUN_FILE = "run.json"


def to_json(value: Any) -> Any:
    """``json.dumps``'s ``default``: numpy scalars and arrays as plain numbers and lists."""
    if isinstance(value, np.generic):
        return value.item()
    if isinstance(value, np.ndarray):
        return value.tolist()
    if isinstance(value, (set, frozenset, tuple)):
        return list(value)
    raise TypeError(f"cannot write {type(value).__name__} {value!r} to JSON")


def write_text_atomic(path: Path, text: str) -> None:
    """Write ``path`` through a temporary file and a rename: readers see the old file or the new one."""
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        os.fchmod(fd, 0o644)  # mkstemp's 0600 would hide results from the rest of a team
        with os.fdopen(fd, "w") as f:
            f.write(text)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def write_json_atomic(path: Path, payload: Any) -> None:
    write_text_atomic(path, json.dumps(payload, indent=2, default=to_json) + "\n")


def episode_key(record: dict[str, Any]) -> tuple[str, str, int]:
    return (record["agent"], record["env"], int(record["seed"]))


class EpisodeLog:
    """The episodes of a run, one JSON object per line, each written with one ``write`` then flushed and
    fsynced, so that a run killed at any moment keeps every episode it finished.

    Opening it drops a last line that a kill cut short (it was not finished, so it is played again).
    """

    def __init__(self, path: Path):
        self.path = path
        self.records: dict[tuple[str, str, int], dict[str, Any]] = {}
        self.duplicates = 0
        if path.exists():
            self._load()
        self._file = open(path, "ab")  # noqa: SIM115  (kept open for the whole run; closed by close())

    def _load(self) -> None:
        data = self.path.read_bytes()
        complete = data.rfind(b"\n") + 1
        if complete < len(data):
            with open(self.path, "r+b") as f:
                f.truncate(complete)
        for number, line in enumerate(data[:complete].splitlines(), 1):
            try:
                record = json.loads(line)
                key = episode_key(record)
            except (ValueError, KeyError, TypeError) as error:
                raise ValueError(f"{self.path}:{number}: not an episode record ({error}): {line[:200]!r}") from error
            if key in self.records:
                self.duplicates += 1
            else:
                self.records[key] = record

    def __contains__(self, key: tuple[str, str, int]) -> bool:
        return key in self.records

    def __len__(self) -> int:
        return len(self.records)

    def append(self, record: dict[str, Any]) -> None:
        key = episode_key(record)
        if key in self.records:
            raise ValueError(f"episode {key} is already recorded in {self.path}")
        line = json.dumps(record, sort_keys=True, default=to_json).encode() + b"\n"
        self._file.write(line)
        self._file.flush()
        os.fsync(self._file.fileno())
        self.records[key] = record

    def close(self) -> None:
        self._file.close()

    def __enter__(self) -> EpisodeLog:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def read_episodes(run_dir: Path) -> list[dict[str, Any]]:
    """The complete episode records of a run (a last line cut short by a kill is left out), first of each key."""
    path = run_dir / EPISODES_FILE
    if not path.is_file():
        raise FileNotFoundError(f"{run_dir} holds no {EPISODES_FILE}: run `textagents bench run SUITE --out {run_dir}`")
    records: dict[tuple[str, str, int], dict[str, Any]] = {}
    for line in path.read_bytes().split(b"\n")[:-1]:
        record = json.loads(line)
        records.setdefault(episode_key(record), record)
    return list(records.values())
