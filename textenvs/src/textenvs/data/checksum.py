"""Size and sha256 checks of a data file's content, every time it is read.

Nothing is remembered between reads (a file swapped for another of the same size and modification time is
caught), and the bytes checked are the bytes returned: a caller parses exactly what was verified, never a
file reopened after the check.
"""

from __future__ import annotations

import hashlib
import os
from pathlib import Path

from textenvs.data.assets import Asset
from textenvs.data.errors import ChecksumError


def sha256_of(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def read_checked(path: Path, asset: Asset) -> tuple[bytes, str | None]:
    """The bytes of ``path`` (opened once) and why they are not the pinned ``asset`` (size, then sha256), or
    None when they are. A file of the wrong size is not read."""
    with path.open("rb") as stream:
        size = os.fstat(stream.fileno()).st_size
        if size != asset.size:
            return b"", f"size {size} bytes, expected {asset.size}"
        data = stream.read(asset.size + 1)
    if len(data) != asset.size:
        return b"", f"size {len(data)} bytes when read, expected {asset.size} (the file changed while it was read)"
    digest = sha256_of(data)
    return data, None if digest == asset.sha256 else f"sha256 {digest}, expected {asset.sha256}"


def mismatch(path: Path, asset: Asset) -> str | None:
    """Why ``path`` is not the pinned ``asset`` (size, then sha256), or None when it is."""
    return read_checked(path, asset)[1]


def read_verified(path: Path, asset: Asset) -> bytes:
    """The bytes of ``path``; ``ChecksumError`` unless they are exactly the pinned ``asset``."""
    data, reason = read_checked(path, asset)
    if reason is not None:
        raise ChecksumError(
            f"{path} is not textenvs' pinned copy of {asset.name!r} ({reason}); it was not used. "
            f"Delete it and fetch a verified copy with: textenvs download {asset.group} "
            f"(upstream: {asset.url})"
        )
    return data


def verify(path: Path, asset: Asset) -> None:
    """Raise ``ChecksumError`` unless ``path`` holds exactly the pinned ``asset``."""
    read_verified(path, asset)
