"""Isolation from the user's data setup, and a loopback HTTP mirror of the reference data."""

from __future__ import annotations

import shutil
import threading
from collections.abc import Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from urllib.parse import unquote

import pytest

from textenvs.data import CACHE_DIR_ENV, DATA_DIR_ENV, DATA_URL_ENV, OFFLINE_ENV, download


@pytest.fixture(autouse=True)
def cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """Every test gets an empty cache, no data dir, no mirror, no network and no retry delays."""
    monkeypatch.delenv(DATA_DIR_ENV, raising=False)
    monkeypatch.delenv(DATA_URL_ENV, raising=False)
    monkeypatch.setenv(CACHE_DIR_ENV, str(tmp_path / "cache"))
    monkeypatch.setenv(OFFLINE_ENV, "1")
    monkeypatch.setattr(download, "BACKOFF_S", 0.0)
    return tmp_path / "cache"


@dataclass
class Mirror:
    """What the loopback server does per asset name, and what it was asked."""

    root: Path
    url: str = ""
    corrupt: set[str] = field(default_factory=set)
    drop_first: set[str] = field(default_factory=set)
    drop_always: set[str] = field(default_factory=set)
    honour_range: bool = True
    watch: Path | None = None
    requests: list[tuple[str, str | None]] = field(default_factory=list)
    watch_existed: list[bool] = field(default_factory=list)

    def body(self, name: str) -> bytes | None:
        path = self.root / name
        if not path.is_file():
            return None
        data = path.read_bytes()
        return bytes([data[0] ^ 0xFF]) + data[1:] if name in self.corrupt else data

    def should_drop(self, name: str) -> bool:
        first = name in self.drop_first and sum(n == name for n, _ in self.requests) == 1
        return first or name in self.drop_always


class _MirrorHandler(BaseHTTPRequestHandler):
    server: _MirrorServer

    def do_GET(self) -> None:
        mirror = self.server.mirror
        name = unquote(self.path.lstrip("/"))
        requested_range = self.headers.get("Range")
        mirror.requests.append((name, requested_range))
        if mirror.watch is not None:
            mirror.watch_existed.append(mirror.watch.exists())
        data = mirror.body(name)
        if data is None:
            self.send_error(404)
            return
        start = 0
        if requested_range and mirror.honour_range:
            start = int(requested_range.removeprefix("bytes=").split("-")[0])
            self.send_response(206)
            self.send_header("Content-Range", f"bytes {start}-{len(data) - 1}/{len(data)}")
        else:
            self.send_response(200)
        body = data[start:]
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        if mirror.should_drop(name):
            self.wfile.write(body[: len(body) // 2])
            self.close_connection = True
            return
        self.wfile.write(body)

    def log_message(self, format: str, *args: object) -> None:
        pass


class _MirrorServer(ThreadingHTTPServer):
    daemon_threads = True

    def __init__(self, mirror: Mirror) -> None:
        super().__init__(("127.0.0.1", 0), _MirrorHandler)
        self.mirror = mirror


@pytest.fixture(scope="session")
def mirror_root(data_dir: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A copy of the reference data folder, served by the loopback mirror."""
    root = tmp_path_factory.mktemp("mirror") / "data"
    shutil.copytree(data_dir, root)
    return root


@pytest.fixture
def mirror(mirror_root: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Mirror]:
    """A threading HTTP server on 127.0.0.1 that TEXTENVS_DATA_URL points at; the network is allowed."""
    state = Mirror(root=mirror_root)
    server = _MirrorServer(state)
    thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.01}, daemon=True)
    thread.start()
    state.url = f"http://127.0.0.1:{server.server_address[1]}"
    monkeypatch.setenv(DATA_URL_ENV, state.url)
    monkeypatch.delenv(OFFLINE_ENV)
    for proxy in ("http_proxy", "HTTP_PROXY", "all_proxy", "ALL_PROXY"):
        monkeypatch.delenv(proxy, raising=False)
    try:
        yield state
    finally:
        server.shutdown()
        server.server_close()
        thread.join()


def files_under(folder: Path) -> list[Path]:
    return sorted(p for p in folder.rglob("*") if p.is_file()) if folder.exists() else []
