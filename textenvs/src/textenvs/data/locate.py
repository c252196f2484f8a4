"""``asset_path``: find a data file (``data_dir=`` -> ``$TEXTENVS_DATA_DIR`` -> user cache -> download)."""

from __future__ import annotations

import difflib
import os
from pathlib import Path, PurePosixPath

from textenvs.data.assets import ASSETS, GROUPS, Asset
from textenvs.data.checksum import mismatch, verify
from textenvs.data.download import fetch
from textenvs.data.errors import DataNotFoundError
from textenvs.data.settings import DATA_DIR_ENV, OFFLINE_ENV, cache_dir, download_url, env_data_dir, offline


def asset_path(name: str, data_dir: str | os.PathLike[str] | None = None) -> Path:
    """A local, verified copy of data file ``name`` (its path relative to a data dir).

    Looks in ``data_dir``, then ``$TEXTENVS_DATA_DIR``, then the user cache, then downloads into the
    cache (unless ``TEXTENVS_OFFLINE=1``). Files of the asset table are sha256-checked wherever they are
    found; a mismatch raises ``ChecksumError`` and the file is never returned.
    """
    _check_name(name)
    asset = ASSETS.get(name)
    searched = []
    local_roots = (("data_dir argument", data_dir, "not given"), (f"${DATA_DIR_ENV}", env_data_dir(), "not set"))
    for label, root, absent in local_roots:
        if root is None:
            searched.append(f"{label}: {absent}")
            continue
        candidate = Path(root).expanduser() / name
        if candidate.is_file():
            if asset is not None:
                verify(candidate, asset)
            return candidate
        searched.append(f"{label}: {candidate} (missing)")
    if asset is None:
        raise DataNotFoundError(_unknown_name_message(name, searched))

    cached = cache_dir() / name
    if not cached.is_file():
        searched.append(f"user cache: {cached} (missing)")
    elif (reason := mismatch(cached, asset)) is None:
        return cached
    elif offline():
        verify(cached, asset)  # raises: a corrupted cache cannot be repaired offline
    else:
        searched.append(f"user cache: {cached} (corrupted: {reason}; downloading a fresh copy)")

    if offline():
        searched.append(f"download from {download_url(asset)}: skipped, {OFFLINE_ENV}=1")
        raise DataNotFoundError(_not_found_message(asset, searched))
    try:
        return fetch(asset, cached)
    except DataNotFoundError as err:
        searched.append(f"download: {err}")
        raise DataNotFoundError(_not_found_message(asset, searched)) from err


def _check_name(name: str) -> None:
    path = PurePosixPath(name) if isinstance(name, str) else None
    if path is None or not name or path.is_absolute() or ".." in path.parts or "\\" in name:
        raise ValueError(
            f"invalid data file name {name!r}: expected a relative path inside the data dir such as "
            "'housekeep/amt/data.npy'"
        )


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
