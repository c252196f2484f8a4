"""A run's files: ``episodes.jsonl`` (one line per finished episode, appended durably), ``run.json``, and
``.lock``, held by the one process that writes the run."""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np

from textenvs.core.files import write_bytes_atomic

EPISODES_FILE = "episodes.jsonl"
RUN_FILE = "run.json"
LOCK_FILE = ".lock"
TRAJECTORIES_DIR = "trajectories"


class RunLockedError(RuntimeError):
    """Another process is writing to the run folder."""


@contextlib.contextmanager
def run_lock(out: Path) -> Iterator[None]:
    """Hold the exclusive lock of the run folder ``out`` (``fcntl.flock`` on ``out/.lock``, released when the
    process ends however it ends); ``RunLockedError`` at once while another process holds it."""
    fd = os.open(out / LOCK_FILE, os.O_RDWR | os.O_CREAT, 0o644)
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            holder = os.pread(fd, 32, 0).decode(errors="replace").strip() or "unknown"
            raise RunLockedError(
                f"{out} is being written by another run (process {holder}): wait for it to end, or choose another "
                "--out (two runs appending to one folder would record episodes twice)"
            ) from None
        os.ftruncate(fd, 0)
        os.pwrite(fd, f"{os.getpid()}\n".encode(), 0)
        yield
    finally:
        os.close(fd)


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
    write_bytes_atomic(path, text.encode())


def write_json_atomic(path: Path, payload: Any) -> None:
    write_text_atomic(path, json.dumps(payload, indent=2, default=to_json) + "\n")


def trajectory_path(run_dir: Path, agent: str, env: str, seed: int) -> Path:
    """Where ``bench run --trajectories`` writes the steps of one episode."""
    return run_dir / TRAJECTORIES_DIR / agent / env / f"{seed}.json"


def episode_key(record: dict[str, Any]) -> tuple[str, str, int]:
    return (record["agent"], record["env"], int(record["seed"]))


def parse_episodes(path: Path, data: bytes) -> tuple[dict[tuple[str, str, int], dict[str, Any]], int, int]:
    """The records of ``data`` (the bytes of ``path``) by key, the first of each; how many lines repeated a
    key; and the length of the complete lines (a last line cut short by a kill is not a record)."""
    complete = data.rfind(b"\n") + 1
    records: dict[tuple[str, str, int], dict[str, Any]] = {}
    duplicates = 0
    for number, line in enumerate(data[:complete].splitlines(), 1):
        try:
            record = json.loads(line)
            key = episode_key(record)
        except (ValueError, KeyError, TypeError) as error:
            raise ValueError(f"{path}:{number}: not an episode record ({error}): {line[:200]!r}") from error
        if key in records:
            duplicates += 1
        else:
            records[key] = record
    return records, duplicates, complete


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
        self.records, self.duplicates, complete = parse_episodes(self.path, data)
        if complete < len(data):
            with open(self.path, "r+b") as f:
                f.truncate(complete)

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
    records, _, _ = parse_episodes(path, path.read_bytes())
    return list(records.values())
