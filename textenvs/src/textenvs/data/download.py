"""Downloads: into ``.<name>.part`` beside the target, under an exclusive lock on that file, resumed or
restarted on dropped connections (also by a later call, after a kill: the part file is where the next
download starts), size and sha256 checked, then renamed into place atomically (a reader never sees a
partial file). A part file whose bytes fail the check is deleted."""

from __future__ import annotations

import fcntl
import http.client
import os
import socket
import time
import urllib.error
import urllib.request
from pathlib import Path

from tqdm.auto import tqdm

from textenvs.data.assets import ASSETS, Asset, group_names
from textenvs.data.checksum import mismatch, read_checked
from textenvs.data.errors import ChecksumError, DataNotFoundError
from textenvs.data.settings import OFFLINE_ENV, cache_dir, download_url, offline

MAX_ATTEMPTS = 4
BACKOFF_S = 0.5
TIMEOUT_S = 30.0
_CHUNK = 1 << 16
_RETRY_STATUS = frozenset({408, 425, 429, 500, 502, 503, 504})


class _TransferIncomplete(ConnectionError):
    pass


def part_path(target: Path) -> Path:
    """Where the download of ``target`` accumulates until it is verified."""
    return target.with_name(f".{target.name}.part")


def _lock_part(part: Path) -> int:
    """An open descriptor holding the exclusive lock of ``part`` (waiting for another download of the same
    file to end), checked to still be the file at that path (the other download may have renamed it)."""
    while True:
        fd = os.open(part, os.O_RDWR | os.O_CREAT, 0o644)
        fcntl.flock(fd, fcntl.LOCK_EX)
        try:
            if os.fstat(fd).st_ino == os.stat(part).st_ino:
                return fd
        except FileNotFoundError:
            pass
        os.close(fd)


def fetch(asset: Asset, target: Path, *, progress: bool = True) -> Path:
    """Download ``asset`` to ``target``; raise ``DataNotFoundError`` or ``ChecksumError`` on failure."""
    download_verified(asset, target, progress=progress)
    return target


def download_verified(asset: Asset, target: Path, *, progress: bool = True) -> bytes:
    """``fetch``, returning the verified bytes that were put at ``target``.

    An earlier download's part file is resumed; if the result fails the check (its bytes were stale), the
    download starts afresh once. A part file that fails the check is deleted; one that holds bytes after a
    network failure is kept for the next call; an empty one is removed.
    """
    url = download_url(asset)
    target.parent.mkdir(parents=True, exist_ok=True)
    part = part_path(target)
    fd = _lock_part(part)
    try:
        if target.is_file():  # another process may have fetched it while this one waited for the lock
            data, reason = read_checked(target, asset)
            if reason is None:
                return data
        resumed = os.fstat(fd).st_size > 0
        data, reason = _download(url, part, asset, progress)
        if reason is not None and resumed:
            os.ftruncate(fd, 0)
            data, reason = _download(url, part, asset, progress)
        if reason is not None:
            raise ChecksumError(
                f"download of {asset.name!r} from {url} rejected ({reason}); nothing was saved. "
                "The server or a proxy returned different bytes: check TEXTENVS_DATA_URL or retry later."
            )
        os.replace(part, target)
        return data
    except ChecksumError:
        os.ftruncate(fd, 0)
        raise
    finally:
        if os.fstat(fd).st_size == 0:  # still at ``part``: only a file with bytes is ever renamed
            part.unlink(missing_ok=True)
        os.close(fd)


def _download(url: str, part: Path, asset: Asset, progress: bool) -> tuple[bytes, str | None]:
    with tqdm(
        total=asset.size, unit="B", unit_scale=True, unit_divisor=1024, desc=asset.name, disable=not progress
    ) as bar:
        _download_with_retries(url, part, asset.size, bar)
    return read_checked(part, asset)


def _download_with_retries(url: str, temp: Path, size: int, bar: tqdm) -> None:
    last_error: Exception | None = None
    for attempt in range(1, MAX_ATTEMPTS + 1):
        try:
            _transfer(url, temp, size, bar)
            return
        except urllib.error.HTTPError as err:
            if err.code not in _RETRY_STATUS:
                raise DataNotFoundError(f"could not download {url}: HTTP {err.code} {err.reason}") from err
            last_error = err
        except urllib.error.URLError as err:
            if isinstance(err.reason, socket.gaierror):  # no DNS: offline, retrying will not help
                raise DataNotFoundError(f"could not download {url}: {err.reason} (no network?)") from err
            last_error = err
        except (OSError, http.client.HTTPException) as err:
            last_error = err
        if attempt < MAX_ATTEMPTS:
            time.sleep(BACKOFF_S * 2 ** (attempt - 1))
    raise DataNotFoundError(
        f"could not download {url} after {MAX_ATTEMPTS} attempts: {type(last_error).__name__}: {last_error}"
    ) from last_error


def _transfer(url: str, temp: Path, size: int, bar: tqdm) -> None:
    """One request: resume from the bytes already in ``temp`` when the server honours Range."""
    have = temp.stat().st_size
    if have == size:
        return
    headers = {"User-Agent": "textenvs-data"}
    if 0 < have < size:
        headers["Range"] = f"bytes={have}-"
    request = urllib.request.Request(url, headers=headers)
    with urllib.request.urlopen(request, timeout=TIMEOUT_S) as response:
        resumed = "Range" in headers and response.status == 206 and _range_start(response) == have
        if not resumed:
            have = 0
        bar.reset(total=size)
        bar.update(have)
        with temp.open("ab" if resumed else "wb") as out:
            while chunk := response.read(_CHUNK):
                have += len(chunk)
                if have > size:
                    raise ChecksumError(f"{url} sent more than the expected {size} bytes; nothing was saved")
                out.write(chunk)
                bar.update(len(chunk))
    if have != size:
        raise _TransferIncomplete(f"connection closed after {have} of {size} bytes")


def _range_start(response: http.client.HTTPResponse) -> int | None:
    content_range = response.headers.get("Content-Range", "")
    unit, _, spec = content_range.partition(" ")
    start = spec.partition("-")[0]
    return int(start) if unit == "bytes" and start.isdigit() else None


def download_group(group: str, *, dest: str | os.PathLike[str] | None = None, progress: bool = True) -> list[Path]:
    """Download every file of ``group`` ("housekeep", "fastsim", "llm_personalize" or "all").

    Files go to ``dest`` (default: the user cache) under their asset names, so ``dest`` can serve as
    ``TEXTENVS_DATA_DIR`` on an offline machine. Files already there and verified are kept.
    """
    root = Path(dest).expanduser() if dest is not None else cache_dir()
    paths = []
    for name in group_names(group):
        asset = ASSETS[name]
        target = root / name
        if target.is_file() and mismatch(target, asset) is None:
            paths.append(target)
            continue
        if offline():
            raise DataNotFoundError(
                f"{target} is missing or corrupted and {OFFLINE_ENV}=1 forbids downloading it "
                f"from {download_url(asset)}"
            )
        paths.append(fetch(asset, target, progress=progress))
    return paths
