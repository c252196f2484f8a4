"""The safe YAML loader on real Housekeep scenes, and pickled .npy loaded only after its sha256 matched."""

from __future__ import annotations

import io
import os
import shutil
from pathlib import Path

import numpy as np
import pytest
import yaml

from textenvs.data import ASSETS, ChecksumError, DataNotFoundError, asset_path, checksum, load_npy, load_yaml, loaders

ANNOTATIONS = "housekeep/amt/data.npy"


def test_scene_yaml_tuples(data_dir: Path) -> None:
    scene = load_yaml(asset_path("housekeep/scenes/Rs_int.yaml", data_dir=data_dir))
    mapping = scene["default_mapping"]
    assert len(mapping) == 5 and all(type(pair) is tuple for pair in mapping)
    assert mapping[0] == ("laptop_7_0.urdf", "coffee_table_5_0.urdf")
    assert scene["urdfs"]["bed_28_2.urdf"]["room"] == "bedroom_0"


def test_every_scene_parses(data_dir: Path) -> None:
    for path in sorted((data_dir / "housekeep/scenes").glob("*.yaml")):
        assert isinstance(load_yaml(path)["urdfs"], dict), path


@pytest.mark.parametrize(
    "document",
    [
        "!!python/object/apply:os.system ['touch {marker}']",
        "!!python/object/new:os.system ['touch {marker}']",
        "!!python/name:os.system",
        "!!python/module:os",
        "x: !!python/object:builtins.object {{}}",
    ],
)
def test_other_python_tags_are_refused(tmp_path: Path, document: str) -> None:
    marker = tmp_path / "executed"
    path = tmp_path / "evil.yaml"
    path.write_text(document.format(marker=marker))
    with pytest.raises(yaml.constructor.ConstructorError, match="python/"):
        load_yaml(path)
    assert not marker.exists()


def test_pickled_annotations_load_after_verification(data_dir: Path) -> None:
    annotations = load_npy(ANNOTATIONS, allow_pickle=True, data_dir=data_dir).item()
    assert annotations["ranks"].shape == (128, 269, 10)
    assert len(annotations["objects"]) == 269 and len(annotations["room_receptacles"]) == 128


@pytest.fixture
def np_load_forbidden(monkeypatch: pytest.MonkeyPatch) -> None:
    def forbidden(*args: object, **kwargs: object) -> None:
        raise AssertionError("np.load was called on an unverified file")

    monkeypatch.setattr(loaders.np, "load", forbidden)


def test_corrupted_pickle_is_never_parsed(data_dir: Path, tmp_path: Path, np_load_forbidden: None) -> None:
    bad = tmp_path / ANNOTATIONS
    bad.parent.mkdir(parents=True)
    shutil.copyfile(data_dir / ANNOTATIONS, bad)
    data = bytearray(bad.read_bytes())
    data[-10] ^= 0xFF
    bad.write_bytes(bytes(data))
    with pytest.raises(ChecksumError, match=str(bad)):
        load_npy(ANNOTATIONS, allow_pickle=True, data_dir=tmp_path)


def test_missing_pickle_is_never_parsed(tmp_path: Path, np_load_forbidden: None) -> None:
    with pytest.raises(DataNotFoundError, match="textenvs download housekeep"):
        load_npy(ANNOTATIONS, allow_pickle=True, data_dir=tmp_path)


def test_unpinned_files_are_never_unpickled(data_dir: Path, np_load_forbidden: None) -> None:
    with pytest.raises(ValueError, match=rf"refusing to unpickle 'mine\.npy'.*{ANNOTATIONS}"):
        load_npy("mine.npy", allow_pickle=True, data_dir=data_dir)


class Payload:
    """Unpickling this creates the folder ``marker``: proof that a forged pickle ran."""

    def __init__(self, marker: Path):
        self.marker = marker

    def __reduce__(self):
        return (os.mkdir, (str(self.marker),))


def test_the_pickle_unpickled_is_the_one_verified(data_dir: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    """A file swapped right after its check (time of check to time of use) is not what gets unpickled."""
    local = tmp_path / ANNOTATIONS
    local.parent.mkdir(parents=True)
    shutil.copyfile(data_dir / ANNOTATIONS, local)
    marker = tmp_path / "code_ran"
    forged = io.BytesIO()
    np.save(forged, np.array([Payload(marker)], dtype=object), allow_pickle=True)
    real_sha256 = checksum.sha256_of

    def sha256_then_swap(data: object) -> str:
        digest = real_sha256(data)
        local.write_bytes(forged.getvalue().ljust(ASSETS[ANNOTATIONS].size, b"\0"))
        return digest

    monkeypatch.setattr(checksum, "sha256_of", sha256_then_swap)
    annotations = load_npy(ANNOTATIONS, allow_pickle=True, data_dir=tmp_path).item()
    assert not marker.exists()
    assert annotations["ranks"].shape == (128, 269, 10)


def test_every_spelling_of_a_pinned_pickle_is_verified(data_dir: Path, tmp_path: Path, np_load_forbidden: None):
    bad = tmp_path / ANNOTATIONS
    bad.parent.mkdir(parents=True)
    shutil.copyfile(data_dir / ANNOTATIONS, bad)
    data = bytearray(bad.read_bytes())
    data[-10] ^= 0xFF
    bad.write_bytes(bytes(data))
    for spelling in (f"./{ANNOTATIONS}", ANNOTATIONS.replace("/", "//")):
        with pytest.raises(ChecksumError, match="sha256"):
            load_npy(spelling, allow_pickle=True, data_dir=tmp_path)
