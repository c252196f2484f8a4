"""Downloads for real, over HTTP from a loopback mirror (TEXTENVS_DATA_URL); never the real network."""

from __future__ import annotations

import socket
import threading
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
    download,
    download_group,
    read_asset,
)

from .conftest import Mirror, files_under

SCENE = "housekeep/scenes/Pomaria_2_int.yaml"


def test_good_download_lands_verified_in_the_cache(data_dir: Path, cache: Path, mirror: Mirror) -> None:
    path = asset_path(SCENE)
    assert path == cache / SCENE
    assert path.read_bytes() == (data_dir / SCENE).read_bytes()
    assert files_under(cache) == [path]  # no temp file left behind
    assert asset_path(SCENE) == path
    assert read_asset(SCENE) == path.read_bytes()
    assert mirror.requests == [(SCENE, None)]  # later lookups are served by the cache


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


def test_connection_that_keeps_dropping_gives_up_and_the_next_call_resumes(
    data_dir: Path, cache: Path, mirror: Mirror
) -> None:
    mirror.drop_always.add(SCENE)
    mirror.honour_range = False
    with pytest.raises(DataNotFoundError) as caught:
        asset_path(SCENE)
    message = str(caught.value)
    assert f"{download.MAX_ATTEMPTS} attempts" in message and "connection closed after" in message
    assert "textenvs download housekeep" in message
    assert len(mirror.requests) == download.MAX_ATTEMPTS
    part = download.part_path(cache / SCENE)
    assert files_under(cache) == [part]  # the bytes received so far, where only a download looks
    half = part.stat().st_size
    assert 0 < half < ASSETS[SCENE].size
    mirror.drop_always.clear()
    mirror.honour_range = True
    mirror.requests.clear()
    assert read_asset(SCENE) == (data_dir / SCENE).read_bytes()
    assert mirror.requests == [(SCENE, f"bytes={half}-")]
    assert files_under(cache) == [cache / SCENE]


def test_a_part_file_left_by_a_killed_download_is_resumed(data_dir: Path, cache: Path, mirror: Mirror) -> None:
    good = (data_dir / SCENE).read_bytes()
    part = download.part_path(cache / SCENE)
    part.parent.mkdir(parents=True)
    part.write_bytes(good[:1000])
    assert asset_path(SCENE).read_bytes() == good
    assert mirror.requests == [(SCENE, "bytes=1000-")]
    assert files_under(cache) == [cache / SCENE]


def test_a_stale_part_file_is_replaced_by_a_fresh_download(data_dir: Path, cache: Path, mirror: Mirror) -> None:
    part = download.part_path(cache / SCENE)
    part.parent.mkdir(parents=True)
    part.write_bytes(b"x" * 1000)  # bytes of something else: the resumed file fails its check
    assert asset_path(SCENE).read_bytes() == (data_dir / SCENE).read_bytes()
    assert mirror.requests == [(SCENE, "bytes=1000-"), (SCENE, None)]
    assert files_under(cache) == [cache / SCENE]


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


def test_concurrent_downloads_of_one_file_take_turns(data_dir: Path, cache: Path, mirror: Mirror) -> None:
    results: list[bytes] = []
    threads = [
        threading.Thread(target=lambda: results.append(download.download_verified(ASSETS[SCENE], cache / SCENE)))
        for _ in range(4)
    ]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert results == [(data_dir / SCENE).read_bytes()] * 4
    assert mirror.requests == [(SCENE, None)]  # the others found it verified once they had the lock
    assert files_under(cache) == [cache / SCENE]
