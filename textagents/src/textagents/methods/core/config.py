"""A method's configuration: a frozen dataclass read from YAML (safe loader), every key and type checked."""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Collection
from dataclasses import dataclass, fields
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

from textagents.bench.suite import unknown_choice
from textagents.bench.typecheck import describe, matches, parameter_hints
from textagents.device import check_device, check_dtype, resolve_device, resolve_dtype
from textagents.llm.openai_backend import check_api_key_env, server_address
from textenvs.core.messages import short_repr, type_and_repr
from textenvs.data import YAMLInputError, read_yaml

if TYPE_CHECKING:
    import torch

LLM_BACKENDS = ("transformers", "llamacpp")


class ConfigError(ValueError):
    """A bad configuration: the message names the file, the key and what is valid."""


@dataclass(frozen=True)
class MethodConfig:
    """What every method's config holds.

    ``iterations`` of training, a checkpoint every ``checkpoint_every`` iterations (and at the end), an
    evaluation every ``eval_every`` (0: only at the end), ``keep_checkpoints`` kept on disk, the ``seed`` of
    everything random, and the LLM: ``model`` (a local transformers directory, a downloaded model's name such
    as ``smollm2-135m-instruct``, or a name at ``base_url``, an OpenAI-compatible server whose key is read
    from ``api_key_env``, a variable named ``*_API_KEY``, and that gets at most ``max_concurrency`` requests at
    once); ``None`` where the method runs without one. A local
    model runs on ``llm_backend``: ``transformers``, or ``llamacpp`` (a downloaded model's GGUF through
    llama.cpp: several times faster generation on a CPU, for methods that only generate or score, holding
    ``llm_context`` tokens: a conversation and its answer must fit, and its logits buffer is this × the
    vocabulary). Every model the method trains or runs is on ``device`` (``auto``: CUDA when there is a GPU,
    else the CPU; ``cpu``, ``cuda``, ``cuda:N``) with its LLMs in ``dtype`` (``auto``: bfloat16 on CUDA,
    float32 on the CPU; ``float32``, ``bfloat16``, ``float16``): ``textagents.device``.
    """

    iterations: int = 10
    checkpoint_every: int = 1
    eval_every: int = 0
    keep_checkpoints: int = 2
    seed: int = 0
    model: str | None = None
    llm_backend: str = "transformers"
    llm_context: int = 4096
    base_url: str | None = None
    api_key_env: str = "OPENAI_API_KEY"
    max_concurrency: int = 8
    device: str = "auto"
    dtype: str = "auto"

    def __post_init__(self) -> None:
        self.require_positive("iterations", "checkpoint_every", "keep_checkpoints", "max_concurrency", "llm_context")
        check_device(self.device)
        check_dtype(self.dtype)
        check_api_key_env(self.api_key_env)
        self.require_choice("llm_backend", LLM_BACKENDS)
        if self.base_url is not None:
            server_address(self.base_url)
        if self.eval_every < 0:
            raise ValueError(f"eval_every must be >= 0 (0: only at the end), got {self.eval_every}")
        for field in fields(self):
            value = getattr(self, field.name)
            if isinstance(value, float) and not math.isfinite(value):
                raise ValueError(f"{field.name} must be a finite number, got {value}")

    def require_positive(self, *names: str) -> None:
        """A clear error for the first setting of ``names`` below 1."""
        for name in names:
            if getattr(self, name) < 1:
                raise ValueError(f"{name} must be >= 1, got {getattr(self, name)}")

    def require_choice(self, name: str, choices: Collection[str]) -> None:
        """A clear error when setting ``name`` is not one of ``choices``."""
        value = getattr(self, name)
        if value not in choices:
            raise ValueError(f"{name} must be one of {list(choices)}, got {short_repr(value)}")

    def torch_device(self) -> torch.device:
        """``device`` on this machine (``DeviceError`` for a GPU it does not have)."""
        return resolve_device(self.device)

    def torch_dtype(self) -> torch.dtype:
        """``dtype`` for the models on ``torch_device()``."""
        return resolve_dtype(self.dtype, self.torch_device())

    def as_dict(self) -> dict[str, Any]:
        return dataclasses.asdict(self)

    def as_recorded(self, recorded: dict[str, Any]) -> dict[str, Any]:
        """This config as a run recorded before some of its settings existed holds it: a setting missing from
        ``recorded`` is left out while it has its default value, so such a run still resumes."""
        defaults = {f.name: f.default for f in fields(self) if f.default is not dataclasses.MISSING}
        return {k: v for k, v in self.as_dict().items() if k in recorded or k not in defaults or v != defaults[k]}


C = TypeVar("C", bound=MethodConfig)


def config_from_dict(cls: type[C], raw: Any, source: str, overrides: dict[str, Any] | None = None) -> C:
    """``cls`` from a mapping; unknown keys, wrong types and bad values raise ``ConfigError`` naming them."""
    if not isinstance(raw, dict):
        raise ConfigError(f"{source}: expected a mapping of settings, got {type(raw).__name__}")
    valid = [f.name for f in fields(cls)]
    hints = parameter_hints(cls)
    values = {**raw, **{k: v for k, v in (overrides or {}).items() if v is not None}}
    for key, value in values.items():
        if key not in valid:
            raise ConfigError(f"{source}: {unknown_choice('setting', key, valid)}")
        if key in hints and not matches(value, hints[key]):
            raise ConfigError(f"{source}: {key}: expected {describe(hints[key])}, got {type_and_repr(value)}")
    try:
        return cls(**values)
    except (TypeError, ValueError) as error:
        raise ConfigError(f"{source}: {error}") from error


def read_config_file(path: str | Path) -> Any:
    """The settings in ``path``, unchecked (YAML read by ``textenvs.data.read_yaml``: safe loader, bounded
    size); a ``ConfigError`` when there is no such file or it cannot be read."""
    path = Path(path)
    if not path.is_file():
        raise ConfigError(f"{path}: no such config file")
    try:
        return read_yaml(path) or {}
    except YAMLInputError as error:
        raise ConfigError(str(error)) from error


def load_config(cls: type[C], path: str | Path, overrides: dict[str, Any] | None = None) -> C:
    """Read ``path`` (``read_config_file``) into ``cls``; ``overrides`` (e.g. ``--model``) win over the file."""
    return config_from_dict(cls, read_config_file(path), str(Path(path)), overrides)
