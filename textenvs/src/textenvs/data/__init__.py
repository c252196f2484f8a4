"""Data files (Housekeep annotations, scenes and episodes; fastsim maps; LLM-Personalize prompts).

Nothing is shipped with the package: files are looked up in ``data_dir=``, ``$TEXTENVS_DATA_DIR``, the
user cache, and downloaded from their upstream repositories at pinned commits, sha256-checked.
"""

from textenvs.data.assets import ASSETS, GROUPS, Asset, Source
from textenvs.data.download import download_group
from textenvs.data.errors import ChecksumError, DataNotFoundError
from textenvs.data.loaders import (
    YAMLInputError,
    load_npy,
    load_yaml,
    parse_yaml,
    read_yaml,
    read_yaml_bytes,
)
from textenvs.data.locate import asset_path, read_asset
from textenvs.data.settings import CACHE_DIR_ENV, DATA_DIR_ENV, DATA_URL_ENV, OFFLINE_ENV, cache_dir

__all__ = [
    "ASSETS",
    "CACHE_DIR_ENV",
    "DATA_DIR_ENV",
    "DATA_URL_ENV",
    "GROUPS",
    "OFFLINE_ENV",
    "Asset",
    "ChecksumError",
    "DataNotFoundError",
    "Source",
    "YAMLInputError",
    "asset_path",
    "cache_dir",
    "download_group",
    "load_npy",
    "load_yaml",
    "parse_yaml",
    "read_asset",
    "read_yaml",
    "read_yaml_bytes",
]
