"""Finding a data file (``data_dir=`` -> ``$TEXTENVS_DATA_DIR`` -> user cache -> download): ``read_asset`` gives
its verified bytes, ``asset_path`` where it is."""

from __future__ import annotations

import difflib
import os
from pathlib import Path, PurePosixPath

from textenvs.data.assets import ASSETS, GROUPS, Asset
from textenvs.data.checksum import read_checked, read_verified
from textenvs.data.download import download_verified
from textenvs.data.errors import DataNotFoundError
from textenvs.data.settings import DATA_DIR_ENV, OFFLINE_ENV, cache_dir, download_url, env_data_dir, offline


def read_asset(name: str, data_dir: str | os.PathLike[str] | None = None) -> bytes:
    """The bytes of data file ``name`` (its path relative to a data dir), found as ``asset_path`` says.

    A file of the asset table is opened once: the bytes returned are the bytes whose size and sha256 were
    checked, so nothing can swap the file between the check and its use. Parse what this returns rather
    than reopening ``asset_path``'s path.
    """
    return _locate(name, data_dir)[1]


def asset_path(name: str, data_dir: str | os.PathLike[str] | None = None) -> Path:
    """A local copy of data file ``name`` (its path relative to a data dir), verified when this returns.

    Looks in ``data_dir``, then ``$TEXTENVS_DATA_DIR``, then the user cache, then downloads into the
    cache (unless ``TEXTENVS_OFFLINE=1``). Files of the asset table are sha256-checked wherever they are
    found; a mismatch raises ``ChecksumError`` and the file is never returned. ``name`` is normalised first
    (``./a//b`` is ``a/b``), so no spelling of a table file escapes its check.
    """
    return _locate(name, data_dir)[0]


def _locate(name: str, data_dir: str | os.PathLike[str] | None) -> tuple[Path, bytes]:
    name = normalised_name(name)
    asset = ASSETS.get(name)
    searched = []
    local_roots = (("data_dir argument", data_dir, "not given"), (f"${DATA_DIR_ENV}", env_data_dir(), "not set"))
    for label, root, absent in local_roots:
        if root is None:
            searched.append(f"{label}: {absent}")
            continue
        candidate = Path(root).expanduser() / name
        if candidate.is_file():
            return candidate, candidate.read_bytes() if asset is None else read_verified(candidate, asset)
        searched.append(f"{label}: {candidate} (missing)")
    if asset is None:
        raise DataNotFoundError(_unknown_name_message(name, searched))

    cached = cache_dir() / name
    if not cached.is_file():
        searched.append(f"user cache: {cached} (missing)")
    elif offline():
        return cached, read_verified(cached, asset)  # a corrupted cache cannot be repaired offline
    else:
        data, reason = read_checked(cached, asset)
        if reason is None:
            return cached, data
        searched.append(f"user cache: {cached} (corrupted: {reason}; downloading a fresh copy)")

    if offline():
        searched.append(f"download from {download_url(asset)}: skipped, {OFFLINE_ENV}=1")
        raise DataNotFoundError(_not_found_message(asset, searched))
    try:
        return cached, download_verified(asset, cached)
    except DataNotFoundError as err:
        searched.append(f"download: {err}")
        raise DataNotFoundError(_not_found_message(asset, searched)) from err


def normalised_name(name: str) -> str:
    """``name`` as the asset table spells it (``./a//b`` -> ``a/b``); ``ValueError`` for a name that is not a
    relative path inside a data dir."""
    path = PurePosixPath(name) if isinstance(name, str) else None
    if path is None or not name or path.is_absolute() or ".." in path.parts or "\\" in name or not path.parts:
        raise ValueError(
            f"invalid data file name {name!r}: expected a relative path inside the data dir such as "
            "'housekeep/amt/data.npy'"
        )
    return str(path)


def _listing(searched: list[str]) -> str:
    return "\n".join(f"  {i}. {place}" for i, place in enumerate(searched, start=1))


def _not_found_message(asset: Asset, searched: list[str]) -> str:
    return (
        f"textenvs data file {asset.name!r} was not found. Searched:\n{_listing(searched)}\n"
        f"Fetch it with:\n    textenvs download {asset.group}\n"
        f"or, for an offline machine, run `textenvs download {asset.group} --dest DIR` where there is "
        f"network, copy DIR over and set {DATA_DIR_ENV}=DIR."
    )


def _unknown_name_message(name: str, searched: list[str]) -> str:
    close = difflib.get_close_matches(name, list(ASSETS), n=3)
    hint = f" Did you mean: {', '.join(close)}?" if close else f" Downloadable groups: {', '.join(GROUPS)}."
    return (
        f"data file {name!r} was not found and is not in textenvs' asset table, so it cannot be "
        f"downloaded. Searched:\n{_listing(searched)}\n{hint.strip()} "
        f"Test-only reference files are read from {DATA_DIR_ENV} (e.g. ../shared/data)."
    )
