"""Housekeep episodes: the record the simulator starts from, and the original episode files
(``cos_eor_v11_pruned/<split>/<scene>.json.gz``, loaded once and cached in a compact form)."""

from __future__ import annotations

import functools
import gzip
import hashlib
import json
import os
import tempfile
from dataclasses import dataclass
from pathlib import Path

from textenvs.data import ASSETS, cache_dir, read_asset
from textenvs.envs.housekeep.annotations import load_splits

#: The compact cache's layout: two JSON lines, a header (this format, the source file's sha256, the sha256 of
#: the second line) and the records.
COMPACT_FORMAT = 2


@dataclass(frozen=True)
class Episode:
    """One rearrangement episode over a scene.

    ``receptacles`` are scene receptacle keys present in the episode (Housekeep sometimes drops the
    cabinets and shelves of a scene); ``objects`` are object keys (``"tennis_ball_1"``) with their
    categories; ``start[i]`` is the receptacle (index into ``receptacles``) object i starts on and
    ``correct[i]`` the receptacles it belongs on (the original files' ``start_matrix`` and
    ``end_matrix``). ``robot_start`` is the robot's (x, z) position.
    """

    scene: str
    episode_id: int
    receptacles: tuple[str, ...]
    objects: tuple[str, ...]
    categories: tuple[str, ...]
    start: tuple[int, ...]
    correct: tuple[tuple[int, ...], ...]
    robot_start: tuple[float, float]

    @property
    def misplaced(self) -> tuple[int, ...]:
        """Objects that start on a receptacle that is not correct for them."""
        return tuple(i for i, (s, c) in enumerate(zip(self.start, self.correct, strict=True)) if s not in c)

    @classmethod
    def from_dict(cls, raw: dict) -> Episode:
        return cls(
            scene=raw["scene"],
            episode_id=int(raw["episode_id"]),
            receptacles=tuple(raw["receptacles"]),
            objects=tuple(raw["objects"]),
            categories=tuple(raw["categories"]),
            start=tuple(raw["start"]),
            correct=tuple(tuple(c) for c in raw["correct"]),
            robot_start=(float(raw["robot_start"][0]), float(raw["robot_start"][1])),
        )


def original_episode_asset(scene: str) -> str | None:
    """The asset name of a scene's original episode file, or None when the file is not distributed."""
    split = load_splits().scene_split(scene)
    name = f"housekeep/episodes/{split}/{scene}.json.gz"
    return name if name in ASSETS else None


def scenes_with_original_episodes() -> tuple[str, ...]:
    return tuple(sorted(n.rsplit("/", 1)[-1].removesuffix(".json.gz") for n in ASSETS if "/episodes/" in n))


def _compact(raw: dict, scene: str) -> dict:
    objects = raw["objs_keys"]
    start_matrix = raw["start_matrix"]
    end_matrix = raw["end_matrix"]
    start = [next(r for r, row in enumerate(start_matrix) if row[o] == 1.0) for o in range(len(objects))]
    correct = [[r for r, row in enumerate(end_matrix) if row[o] == 1.0] for o in range(len(objects))]
    x, _, z = raw["start_position"]
    return {
        "scene": scene,
        "episode_id": raw["episode_id"],
        "receptacles": raw["recs_keys"],
        "objects": objects,
        "categories": raw["objs_cats"],
        "start": start,
        "correct": correct,
        "robot_start": [x, z],
    }


def _read_compact(asset_name: str, data_dir: str | None) -> list[dict]:
    """The compact records of an episode file, from the cache when it was converted before."""
    source_sha256 = ASSETS[asset_name].sha256
    cached = cache_dir() / "housekeep-compact" / f"{source_sha256}.jsonl"
    records = _read_cache(cached, source_sha256)
    if records is None:
        scene = Path(asset_name).name.removesuffix(".json.gz")
        raw = json.loads(gzip.decompress(read_asset(asset_name, data_dir)))
        records = [_compact(episode, scene) for episode in raw["episodes"]]
        body = json.dumps(records).encode()
        _write_atomically(cached, json.dumps(_cache_header(source_sha256, body)).encode() + b"\n" + body)
    return records


def _cache_header(source_sha256: str, body: bytes) -> dict:
    return {"format": COMPACT_FORMAT, "source_sha256": source_sha256, "sha256": hashlib.sha256(body).hexdigest()}


def _read_cache(path: Path, source_sha256: str) -> list[dict] | None:
    """The records of a compact cache file, or None when it is missing, cut short, corrupted or of another
    source or format (it is then converted again): its header line holds the sha256 of the records' bytes."""
    try:
        header_line, _, body = path.read_bytes().partition(b"\n")
        if json.loads(header_line) != _cache_header(source_sha256, body):
            return None
        records = json.loads(body)
    except (OSError, ValueError):
        return None
    return records if isinstance(records, list) and all(isinstance(r, dict) for r in records) else None


def _write_atomically(path: Path, data: bytes) -> None:
    """Write via a temporary file, fsync and a rename (and fsync the folder), so readers never see half a file,
    even after a crash; a read-only or full cache only costs speed."""
    tmp_name = None
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        with tempfile.NamedTemporaryFile("wb", dir=path.parent, delete=False, suffix=".tmp") as tmp:
            tmp_name = tmp.name
            tmp.write(data)
            tmp.flush()
            os.fsync(tmp.fileno())
        os.replace(tmp_name, path)
        folder = os.open(path.parent, os.O_RDONLY)
        try:
            os.fsync(folder)
        finally:
            os.close(folder)
    except OSError:
        if tmp_name is not None:
            Path(tmp_name).unlink(missing_ok=True)


@functools.lru_cache(maxsize=16)
def load_original_episodes(scene: str, data_dir: str | None = None) -> tuple[Episode, ...]:
    """Every episode of a scene's original file; raises naming the scenes that have one.

    The first load converts the 20 MB JSON to a compact cache file (keyed by the asset's sha256, its records
    checked against the sha256 its header holds at every load).
    """
    asset_name = original_episode_asset(scene)
    if asset_name is None:
        available = ", ".join(scenes_with_original_episodes())
        raise ValueError(
            f"no original Housekeep episode file is distributed for scene {scene!r}; "
            f"scenes with original episodes: {available} (use episode_source='generated' for the others)"
        )
    return tuple(Episode.from_dict(record) for record in _read_compact(asset_name, data_dir))
