"""Where data lives and whether the network may be used, read from the environment at each call."""

from __future__ import annotations

import os
from pathlib import Path

import platformdirs

from textenvs.data.assets import Asset

DATA_DIR_ENV = "TEXTENVS_DATA_DIR"
CACHE_DIR_ENV = "TEXTENVS_CACHE_DIR"
OFFLINE_ENV = "TEXTENVS_OFFLINE"
DATA_URL_ENV = "TEXTENVS_DATA_URL"

_TRUE_WORDS = ("1", "true", "yes", "on")


def cache_dir() -> Path:
    """The folder downloads go to: ``$TEXTENVS_CACHE_DIR`` or the user cache (``platformdirs``)."""
    override = os.environ.get(CACHE_DIR_ENV)
    if override:
        return Path(override).expanduser()
    return Path(platformdirs.user_cache_dir("textenvs", appauthor=False))


def env_data_dir() -> Path | None:
    value = os.environ.get(DATA_DIR_ENV)
    return Path(value).expanduser() if value else None


def offline() -> bool:
    return os.environ.get(OFFLINE_ENV, "").strip().lower() in _TRUE_WORDS


def download_url(asset: Asset) -> str:
    """The asset's pinned upstream URL, or ``{$TEXTENVS_DATA_URL}/{name}`` when a mirror is set."""
    mirror = os.environ.get(DATA_URL_ENV)
    return f"{mirror.rstrip('/')}/{asset.name}" if mirror else asset.url
