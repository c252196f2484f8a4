"""The compact cache of Housekeep's original episode files: checked at every load (a corrupted or cut file is
converted again, never trusted) and written durably (fsync before the rename)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from textenvs.data import CACHE_DIR_ENV
from textenvs.envs.housekeep import episodes
from textenvs.envs.housekeep.episodes import load_original_episodes

SCENE = "Ihlen_0_int"  # the smallest original episode file


@pytest.fixture
def cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv(CACHE_DIR_ENV, str(tmp_path))
    load_original_episodes.cache_clear()
    yield tmp_path / "housekeep-compact"
    load_original_episodes.cache_clear()


def load_again() -> tuple[episodes.Episode, ...]:
    load_original_episodes.cache_clear()
    return load_original_episodes(SCENE)


def flip_a_robot_start(data: bytes) -> bytes:
    return data.replace(b'"robot_start": [', b'"robot_start": [9', 1)


@pytest.mark.parametrize(
    "corrupt",
    [flip_a_robot_start, lambda data: b"", lambda data: data[: len(data) // 2]],
    ids=["edited", "empty after a crash", "cut short"],
)
def test_a_corrupted_cache_is_converted_again(cache: Path, corrupt) -> None:
    first = load_original_episodes(SCENE)
    [cached] = cache.iterdir()
    good = cached.read_bytes()
    cached.write_bytes(corrupt(good))
    assert load_again() == first
    assert cached.read_bytes() == good


def test_the_cache_is_used_when_intact(cache: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    first = load_original_episodes(SCENE)
    monkeypatch.setattr(episodes, "read_asset", lambda *args: pytest.fail("the intact cache was not used"))
    assert load_again() == first


def test_the_cache_is_fsynced_before_it_is_renamed(cache: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    synced: list[str] = []
    real_fsync, real_replace = os.fsync, os.replace
    monkeypatch.setattr(os, "fsync", lambda fd: synced.append(os.readlink(f"/proc/self/fd/{fd}")) or real_fsync(fd))
    monkeypatch.setattr(os, "replace", lambda a, b: synced.append("rename") or real_replace(a, b))
    load_original_episodes(SCENE)
    assert len(synced) == 3 and synced[0].endswith(".tmp") and synced[1:] == ["rename", str(cache)], synced
