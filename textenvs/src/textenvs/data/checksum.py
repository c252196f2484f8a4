"""Size and sha256 checks, remembered per (path, size, mtime) so repeated lookups are cheap."""

from __future__ import annotations

import hashlib
from pathlib import Path

from textenvs.data.assets import Asset
from textenvs.data.errors import ChecksumError

_CHUNK = 1 << 20
_verified: dict[tuple[str, int, int], str] = {}


def sha256_of(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as stream:
        while chunk := stream.read(_CHUNK):
            digest.update(chunk)
    return digest.hexdigest()


def _stat_key(path: Path) -> tuple[str, int, int]:
    stat = path.stat()
    return str(path.resolve()), stat.st_size, stat.st_mtime_ns


def mismatch(path: Path, asset: Asset) -> str | None:
    """Why ``path`` is not the pinned ``asset`` (size, then sha256), or None when it is."""
    key = _stat_key(path)
    if _verified.get(key) == asset.sha256:
        return None
    if key[1] != asset.size:
        return f"size {key[1]} bytes, expected {asset.size}"
    digest = sha256_of(path)
    if digest != asset.sha256:
        return f"sha256 {digest}, expected {asset.sha256}"
    _verified[key] = asset.sha256
    return None


def record_verified(path: Path, asset: Asset) -> None:
    """Remember that ``path`` holds ``asset`` (a verified file renamed into place keeps size and mtime)."""
    _verified[_stat_key(path)] = asset.sha256


def verify(path: Path, asset: Asset) -> None:
    """Raise ``ChecksumError`` unless ``path`` holds exactly the pinned ``asset``."""
    reason = mismatch(path, asset)
    if reason is not None:
        raise ChecksumError(
            f"{path} is not textenvs' pinned copy of {asset.name!r} ({reason}); it was not used. "
            f"Delete it and fetch a verified copy with: textenvs download {asset.group} "
            f"(upstream: {asset.url})"
        )


def clear_verification_cache() -> None:
    _verified.clear()
