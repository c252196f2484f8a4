"""The asset table against ../shared/data/SOURCE.md and the reference files themselves."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from textenvs.data import ASSETS, GROUPS, asset_path, download_group

_RAW_URL = re.compile(r"https://raw\.githubusercontent\.com/[\w.-]+/[\w.-]+/[0-9a-f]{40}/\S+")


def _source_rows(data_dir: Path) -> dict[str, tuple[str, str, str, int, str]]:
    """SOURCE.md's rows as name -> (repo, commit, upstream path, bytes, sha256)."""
    text = (data_dir / "SOURCE.md").read_text()
    rows = {}
    housekeep = re.search(r"github\.com/(yashkant/housekeep) @ ([0-9a-f]{40})", text)
    assert housekeep is not None
    for name, path, size, sha in re.findall(r"^\| (housekeep/\S+) \| (\S+) \| (\d+) \| ([0-9a-f]{64}) \|", text, re.M):
        rows[name] = (housekeep[1], housekeep[2], path, int(size), sha)
    fastsim = r"^\| (fastsim/\S+) \| github\.com/(\S+) @ ([0-9a-f]{40}) (\S+) \| (\d+) \| ([0-9a-f]{64}) \|"
    for name, repo, commit, path, size, sha in re.findall(fastsim, text, re.M):
        rows[name] = (repo, commit, path, int(size), sha)
    return rows


def test_table_matches_source_md(data_dir: Path) -> None:
    rows = _source_rows(data_dir)
    assert len(rows) == 30  # 28 Housekeep files + 2 fastsim maps
    for name, (repo, commit, path, size, sha) in rows.items():
        asset = ASSETS[name]
        assert (asset.source.repo, asset.source.commit, asset.upstream_path) == (repo, commit, path), name
        assert (asset.size, asset.sha256) == (size, sha), name


def test_every_url_is_raw_github_at_a_full_commit() -> None:
    for asset in ASSETS.values():
        assert _RAW_URL.fullmatch(asset.url), asset.url
        assert asset.source.commit in asset.url and asset.url.endswith("/" + asset.upstream_path)


def test_every_asset_matches_its_reference_copy(data_dir: Path) -> None:
    for name in ASSETS:
        assert asset_path(name, data_dir=data_dir) == data_dir / name


def test_licenses() -> None:
    expected = {"housekeep": "MIT", "fastsim": "GPL-3.0-only", "llm_personalize": "MIT"}
    assert {a.name: a.license for a in ASSETS.values()} == {n: expected[n.split("/")[0]] for n in ASSETS}
    for group in expected:
        assert any(name.rsplit("/", 1)[-1].startswith("LICENSE") for name in GROUPS[group]), group


def test_groups_partition_the_table() -> None:
    assert set(GROUPS) == {"housekeep", "fastsim", "llm_personalize", "all"}
    families = [name for group in ("housekeep", "fastsim", "llm_personalize") for name in GROUPS[group]]
    assert sorted(families) == sorted(GROUPS["all"]) == sorted(ASSETS)
    assert len(families) == len(set(families))
    assert "llm_personalize/igib_v2_nav_sp.yaml" in GROUPS["llm_personalize"]


def test_test_only_files_are_not_assets() -> None:
    assert not any(name.startswith(("fastsim/golden/", "babyai_text/", "crafter_text/")) for name in ASSETS)


def test_unknown_group_lists_the_valid_ones() -> None:
    with pytest.raises(ValueError, match=r"'housekeeps'.*housekeep, fastsim, llm_personalize, all"):
        download_group("housekeeps")
