"""The safe YAML loader (bounded: alias bombs and huge files refused) on real Housekeep scenes, and pickled .npy
loaded only after its sha256 matched."""

from __future__ import annotations

import io
import os
import shutil
from pathlib import Path

import numpy as np
import pytest

from tests.yaml_bomb import alias_bomb
from textenvs.data import (
    ASSETS,
    ChecksumError,
    DataNotFoundError,
    YAMLInputError,
    asset_path,
    checksum,
    load_npy,
    load_yaml,
    loaders,
    parse_yaml,
    read_yaml,
)

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
    with pytest.raises(YAMLInputError, match="python/"):
        load_yaml(path)
    assert not marker.exists()


def test_an_alias_bomb_is_refused_before_it_expands(tmp_path: Path) -> None:
    path = tmp_path / "bomb.yaml"
    path.write_text(alias_bomb("seeds"))
    expected = f"{path}: refusing YAML whose aliases expand it past 2,097,152 characters"
    for read in (read_yaml, load_yaml):
        with pytest.raises(YAMLInputError) as caught:
            read(path)
        assert str(caught.value) == expected


@pytest.mark.parametrize(
    ("document", "refusal"),
    [
        ("a: &a [*a]", "with an alias inside the value it names"),
        ("a: &a {b: [1, *a]}", "with an alias inside the value it names"),
        ("s: &s " + "x" * 999_000 + "\nrepeated: [*s, *s, *s]", "whose aliases expand it past"),  # 3 long strings
    ],
)
def test_endless_and_over_expanding_aliases_are_refused(document: str, refusal: str) -> None:
    with pytest.raises(YAMLInputError, match=f"^doc: refusing YAML {refusal}"):
        parse_yaml(document, "doc")


def test_aliases_within_the_limits_still_work() -> None:
    document = "base: &base {lr: 0.1, layers: [64, 64]}\nruns: [*base, *base]\nname: &n run\nagain: *n\n"
    expected = {"lr": 0.1, "layers": [64, 64]}
    assert parse_yaml(document, "doc") == {
        "base": expected,
        "runs": [expected, expected],
        "name": "run",
        "again": "run",
    }


def test_a_file_over_the_byte_limit_is_refused_without_reading_it_all(tmp_path: Path) -> None:
    path = tmp_path / "large.yaml"
    path.write_bytes(b"#" * (loaders.MAX_YAML_BYTES + 1))
    with pytest.raises(YAMLInputError, match=r"large.yaml: larger than 1,048,576 bytes"):
        read_yaml(path)
    with pytest.raises(YAMLInputError, match=r"^text: larger than 1,048,576 bytes"):
        parse_yaml("#" * (loaders.MAX_YAML_BYTES + 1), "text")


@pytest.mark.parametrize(
    ("document", "problem"),
    [("n: " + "1" * 5000, "4300 digits"), ("d: 2024-13-01", "month"), ("s: \udcff", "surrogates not allowed")],
)
def test_values_python_cannot_read_are_not_valid_yaml(document: str, problem: str) -> None:
    with pytest.raises(YAMLInputError, match=f"^doc: not valid YAML: .*{problem}"):
        parse_yaml(document, "doc")


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
