"""Downloads for real, over HTTP from a loopback mirror (TEXTENVS_DATA_URL); never the real network."""

from __future__ import annotations

import socket
from pathlib import Path

import pytest

from textenvs.data import (
    ASSETS,
    DATA_URL_ENV,
    GROUPS,
    OFFLINE_ENV,
    ChecksumError,
    DataNotFoundError,
    asset_path,
    checksum,
    download,
    download_group,
)

from .conftest import Mirror, files_under

SCENE = "housekeep/scenes/Pomaria_2_int.yaml"


def test_good_download_lands_verified_in_the_cache(
    data_dir: Path, cache: Path, mirror: Mirror, monkeypatch: pytest.MonkeyPatch
) -> None:
    hashed = []
    real_sha256 = checksum.sha256_of
    monkeypatch.setattr(checksum, "sha256_of", lambda path: hashed.append(path) or real_sha256(path))
    path = asset_path(SCENE)
    assert path == cache / SCENE
    assert path.read_bytes() == (data_dir / SCENE).read_bytes()
    assert files_under(cache) == [path]  # no temp file left behind
    assert asset_path(SCENE) == path
    assert mirror.requests == [(SCENE, None)]  # the second lookup is served by the cache
    assert len(hashed) == 1  # the downloaded bytes were hashed once, before the rename


def test_corrupted_download_is_rejected_and_not_saved(cache: Path, mirror: Mirror) -> None:
    mirror.corrupt.add(SCENE)
    with pytest.raises(ChecksumError, match=f"download of '{SCENE}' from {mirror.url}/{SCENE} rejected"):
        asset_path(SCENE)
    assert files_under(cache) == []


@pytest.mark.parametrize("honour_range", [True, False], ids=["resumed", "restarted"])
def test_connection_dropped_half_way_is_retried(
    data_dir: Path, cache: Path, mirror: Mirror, honour_range: bool
) -> None:
    mirror.drop_first.add(SCENE)
    mirror.honour_range = honour_range
    mirror.watch = cache / SCENE
    path = asset_path(SCENE)
    assert path.read_bytes() == (data_dir / SCENE).read_bytes()
    half = ASSETS[SCENE].size // 2
    assert mirror.requests == [(SCENE, None), (SCENE, f"bytes={half}-")]
    assert mirror.watch_existed == [False, False]  # the partial bytes were never where a reader looks
    assert files_under(cache) == [path]


def test_connection_that_keeps_dropping_gives_up_cleanly(cache: Path, mirror: Mirror) -> None:
    mirror.drop_always.add(SCENE)
    mirror.honour_range = False
    with pytest.raises(DataNotFoundError) as caught:
        asset_path(SCENE)
    message = str(caught.value)
    assert f"{download.MAX_ATTEMPTS} attempts" in message and "connection closed after" in message
    assert "textenvs download housekeep" in message
    assert len(mirror.requests) == download.MAX_ATTEMPTS
    assert files_under(cache) == []


def test_missing_on_the_mirror_fails_without_retrying(
    cache: Path, mirror: Mirror, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(mirror, "root", tmp_path / "empty-mirror")
    with pytest.raises(DataNotFoundError, match="HTTP 404"):
        asset_path(SCENE)
    assert len(mirror.requests) == 1
    assert files_under(cache) == []


def test_download_group_fills_dest_usable_as_a_data_dir(
    data_dir: Path, tmp_path: Path, mirror: Mirror, monkeypatch: pytest.MonkeyPatch
) -> None:
    dest = tmp_path / "offline-data"
    paths = download_group("llm_personalize", dest=dest, progress=False)
    names = GROUPS["llm_personalize"]
    assert paths == [dest / name for name in names]
    assert all(p.read_bytes() == (data_dir / n).read_bytes() for p, n in zip(paths, names, strict=True))
    assert files_under(dest) == sorted(paths)
    monkeypatch.setenv(OFFLINE_ENV, "1")
    assert download_group("llm_personalize", dest=dest, progress=False) == paths
    assert asset_path(names[1], data_dir=dest) == paths[1]
    assert len(mirror.requests) == len(names)


def test_download_group_defaults_to_the_cache_and_shows_progress(
    cache: Path, mirror: Mirror, capsys: pytest.CaptureFixture[str]
) -> None:
    paths = download_group("fastsim")
    assert paths == [cache / name for name in GROUPS["fastsim"]]
    assert "fastsim/maps/maze_hard.pbm" in capsys.readouterr().err


def test_download_group_offline_and_missing(tmp_path: Path) -> None:
    with pytest.raises(DataNotFoundError, match=f"{OFFLINE_ENV}=1"):
        download_group("fastsim", dest=tmp_path)
    assert files_under(tmp_path) == []


def test_no_dns_fails_at_once(cache: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    def no_dns(*args: object, **kwargs: object) -> None:
        raise socket.gaierror(socket.EAI_NONAME, "Name or service not known")

    monkeypatch.delenv(OFFLINE_ENV)
    monkeypatch.setenv(DATA_URL_ENV, "http://mirror.invalid")
    monkeypatch.setattr(socket, "getaddrinfo", no_dns)
    attempts = []
    monkeypatch.setattr(download.time, "sleep", attempts.append)
    with pytest.raises(DataNotFoundError, match=r"(?s)no network\?.*textenvs download housekeep"):
        asset_path(SCENE)
    assert attempts == []  # not retried
    assert files_under(cache) == []


def test_cli_download_uses_download_group(data_dir: Path, tmp_path: Path, mirror: Mirror) -> None:
    from textenvs.cli import main

    assert main(["download", "fastsim", "--dest", str(tmp_path)]) == 0
    assert files_under(tmp_path) == sorted(tmp_path / name for name in GROUPS["fastsim"])
    for name in GROUPS["fastsim"]:
        assert (tmp_path / name).read_bytes() == (data_dir / name).read_bytes()
