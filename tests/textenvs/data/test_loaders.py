"""The safe YAML loader on real Housekeep scenes, and pickled .npy loaded only after its sha256 matched."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
import yaml

from textenvs.data import ChecksumError, DataNotFoundError, asset_path, load_npy, load_yaml, loaders

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
