"""Lookup order, verification of local files, and the error users see when a file is nowhere."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest

from textenvs.data import (
    ASSETS,
    DATA_DIR_ENV,
    DATA_URL_ENV,
    OFFLINE_ENV,
    ChecksumError,
    DataNotFoundError,
    asset_path,
    cache_dir,
    read_asset,
)

from .conftest import Mirror

MAP = "fastsim/maps/maze_hard.pbm"
ANNOTATIONS = "housekeep/amt/data.npy"


def _place(data_dir: Path, root: Path, name: str = MAP) -> Path:
    target = root / name
    target.parent.mkdir(parents=True, exist_ok=True)
    shutil.copyfile(data_dir / name, target)
    return target


def _corrupt(path: Path) -> None:
    data = bytearray(path.read_bytes())
    data[len(data) // 2] ^= 0x01
    path.write_bytes(bytes(data))


def test_cache_dir_follows_env(cache: Path) -> None:
    assert cache_dir() == cache


def test_data_dir_beats_env_beats_cache(
    data_dir: Path, tmp_path: Path, cache: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    explicit, from_env = _place(data_dir, tmp_path / "explicit"), _place(data_dir, tmp_path / "env")
    cached = _place(data_dir, cache)
    monkeypatch.setenv(DATA_DIR_ENV, str(tmp_path / "env"))
    assert asset_path(MAP, data_dir=tmp_path / "explicit") == explicit
    assert asset_path(MAP, data_dir=str(tmp_path / "explicit")) == explicit
    assert asset_path(MAP) == from_env
    assert asset_path(MAP, data_dir=tmp_path / "empty") == from_env
    monkeypatch.delenv(DATA_DIR_ENV)
    assert asset_path(MAP) == cached


def test_offline_and_missing_names_file_places_and_command(
    tmp_path: Path, cache: Path, monkeypatch: pytest.MonkeyPatch, mirror: Mirror
) -> None:
    monkeypatch.setenv(OFFLINE_ENV, "1")
    monkeypatch.setenv(DATA_DIR_ENV, str(tmp_path / "env"))
    with pytest.raises(DataNotFoundError) as caught:
        asset_path(ANNOTATIONS, data_dir=tmp_path / "explicit")
    message = str(caught.value)
    assert isinstance(caught.value, FileNotFoundError)
    assert f"'{ANNOTATIONS}'" in message
    for place in (tmp_path / "explicit", tmp_path / "env", cache):
        assert str(place / ANNOTATIONS) in message
    assert "textenvs download housekeep" in message
    assert f"{OFFLINE_ENV}=1" in message
    assert mirror.requests == []
    assert not cache.exists()


def test_nothing_configured_says_so(cache: Path) -> None:
    with pytest.raises(DataNotFoundError) as caught:
        asset_path("llm_personalize/igib_v2_nav_sp.yaml")
    message = str(caught.value)
    assert "data_dir argument: not given" in message
    assert f"${DATA_DIR_ENV}: not set" in message
    assert str(cache / "llm_personalize/igib_v2_nav_sp.yaml") in message
    assert "textenvs download llm_personalize" in message


def test_unreachable_network_fails_with_the_same_guidance(
    cache: Path, monkeypatch: pytest.MonkeyPatch, unused_port_url: str
) -> None:
    monkeypatch.delenv(OFFLINE_ENV)
    monkeypatch.setenv(DATA_URL_ENV, unused_port_url)
    with pytest.raises(DataNotFoundError) as caught:
        asset_path(MAP)
    message = str(caught.value)
    assert f"{unused_port_url}/{MAP}" in message and "4 attempts" in message
    assert str(cache / MAP) in message and "textenvs download fastsim" in message
    assert [p for p in cache.rglob("*") if p.is_file()] == []


@pytest.fixture
def unused_port_url() -> str:
    import socket

    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    return f"http://127.0.0.1:{port}"


@pytest.mark.parametrize("where", ["data_dir", "env"])
def test_corrupted_local_file_is_refused_not_skipped(
    data_dir: Path, tmp_path: Path, cache: Path, monkeypatch: pytest.MonkeyPatch, where: str
) -> None:
    _place(data_dir, cache)  # a good copy further down the lookup order must not be used instead
    bad = _place(data_dir, tmp_path / "local")
    _corrupt(bad)
    kwargs = {"data_dir": tmp_path / "local"} if where == "data_dir" else {}
    if where == "env":
        monkeypatch.setenv(DATA_DIR_ENV, str(tmp_path / "local"))
    with pytest.raises(ChecksumError) as caught:
        asset_path(MAP, **kwargs)
    message = str(caught.value)
    assert isinstance(caught.value, ValueError)
    assert str(bad) in message and ASSETS[MAP].sha256 in message and "textenvs download fastsim" in message


def test_truncated_local_file_is_refused_by_size(data_dir: Path, tmp_path: Path) -> None:
    bad = _place(data_dir, tmp_path)
    bad.write_bytes(bad.read_bytes()[:100])
    with pytest.raises(ChecksumError, match=f"size 100 bytes, expected {ASSETS[MAP].size}"):
        asset_path(MAP, data_dir=tmp_path)


def test_a_file_swapped_with_the_same_size_and_time_is_refused(data_dir: Path, tmp_path: Path) -> None:
    good = _place(data_dir, tmp_path)
    assert read_asset(MAP, data_dir=tmp_path) == good.read_bytes()
    stat = good.stat()
    _corrupt(good)  # same size; the modification time put back: nothing but the content tells
    os.utime(good, ns=(stat.st_atime_ns, stat.st_mtime_ns))
    assert good.stat().st_mtime_ns == stat.st_mtime_ns and good.stat().st_size == stat.st_size
    with pytest.raises(ChecksumError, match="sha256"):
        asset_path(MAP, data_dir=tmp_path)
    with pytest.raises(ChecksumError, match="sha256"):
        read_asset(MAP, data_dir=tmp_path)


@pytest.mark.parametrize("spelling", [f"./{MAP}", MAP.replace("/", "//"), MAP.replace("/", "/./"), f"{MAP}/"])
def test_every_spelling_of_a_table_file_is_verified(data_dir: Path, tmp_path: Path, spelling: str) -> None:
    good = _place(data_dir, tmp_path)
    assert asset_path(spelling, data_dir=tmp_path) == good
    _corrupt(good)
    with pytest.raises(ChecksumError, match="sha256"):
        asset_path(spelling, data_dir=tmp_path)


def test_corrupted_cache_is_refused_offline(data_dir: Path, cache: Path) -> None:
    _corrupt(_place(data_dir, cache))
    with pytest.raises(ChecksumError, match="textenvs download fastsim"):
        asset_path(MAP)


def test_corrupted_cache_is_replaced_when_online(data_dir: Path, cache: Path, mirror: Mirror) -> None:
    cached = _place(data_dir, cache)
    _corrupt(cached)
    assert asset_path(MAP) == cached
    assert cached.read_bytes() == (data_dir / MAP).read_bytes()
    assert [name for name, _ in mirror.requests] == [MAP]


def test_files_outside_the_table_are_found_locally_unverified(data_dir: Path) -> None:
    name = "fastsim/golden/actions/curve.txt"
    assert asset_path(name, data_dir=data_dir) == data_dir / name


def test_unknown_name_suggests_close_assets(data_dir: Path) -> None:
    with pytest.raises(DataNotFoundError, match=r"(?s)not in textenvs' asset table.*housekeep/amt/data\.npy"):
        asset_path("housekeep/amt/data.np", data_dir=data_dir)


@pytest.mark.parametrize("name", ["", "/etc/passwd", "../secrets.txt", "housekeep/../../x", "a\\b", None])
def test_invalid_names_are_rejected(name: object) -> None:
    with pytest.raises(ValueError, match="invalid data file name"):
        asset_path(name)  # type: ignore[arg-type]
