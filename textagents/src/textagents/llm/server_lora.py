"""LoRA adapters that ``textagents serve --enable-lora`` loads at run time, as vLLM does with
``VLLM_ALLOW_RUNTIME_LORA_UPDATING``: ``POST /v1/load_lora_adapter`` ``{"lora_name", "lora_path"}`` and
``POST /v1/unload_lora_adapter`` ``{"lora_name"}`` answer 200 with a line of text; a request whose ``model`` is a
loaded adapter's name is answered by the served model with that adapter.

An adapter folder is checked before anything is loaded (``lora_files.read_adapter``: JSON and safetensors only);
its weights are then injected with peft into the served model, each under a slot of its own, and checked against
the layers they go to (names and shapes) before they are copied. Loading, unloading and answering with an adapter
are jobs of the model's queue, so they never overlap. ``LoraLimits`` bounds how many adapters are held and their
rank (their memory).
"""

from __future__ import annotations

import itertools
import threading
from collections.abc import Iterator
from dataclasses import dataclass
from http import HTTPStatus
from pathlib import Path
from typing import TYPE_CHECKING, Any

from textagents.llm.lora_files import WEIGHT_PREFIX, AdapterError, LoraAdapter, read_adapter
from textagents.llm.server_api import Job, RequestError, quoted

if TYPE_CHECKING:
    from textagents.llm.transformers_backend import TransformersBackend

MAX_NAME_LENGTH = 256


@dataclass(frozen=True)
class LoraLimits:
    """``max_loras`` adapters loaded at once (one more is refused until one is unloaded), each of rank at most
    ``max_rank`` (vLLM's ``--max-loras`` and ``--max-lora-rank``)."""

    max_loras: int = 4
    max_rank: int = 64

    def __post_init__(self) -> None:
        if self.max_loras < 1 or self.max_rank < 1:
            raise ValueError(f"max_loras and max_rank must be >= 1, got {self.max_loras}, {self.max_rank}")


@dataclass(frozen=True)
class Loaded:
    slot: str  # the peft adapter name inside the model (a client's name may hold dots, which torch refuses)
    path: Path


def _text_field(body: dict[str, Any], name: str) -> str:
    value = body.get(name)
    if not isinstance(value, str) or not value or len(value) > MAX_NAME_LENGTH:
        message = f"'{name}' must be a non-empty string of at most {MAX_NAME_LENGTH} characters"
        raise RequestError(HTTPStatus.BAD_REQUEST, message, name)
    return value


class LoraAdapters:
    """The adapters loaded onto ``backend``'s model, by the names clients gave them (see the module)."""

    def __init__(self, backend: TransformersBackend, base_name: str, limits: LoraLimits = LoraLimits()):
        self.backend = backend
        self.base_name = base_name
        self.limits = limits
        self._loaded: dict[str, Loaded] = {}
        self._lock = threading.Lock()  # names are read by request threads and changed by the model's thread
        self._slots = itertools.count()

    def __contains__(self, name: object) -> bool:
        with self._lock:
            return name in self._loaded

    def cards(self, created: int) -> list[dict[str, Any]]:
        """``/v1/models`` entries of the loaded adapters, as vLLM lists them (``root``: the folder, ``parent``)."""
        with self._lock:
            loaded = list(self._loaded.items())
        return [
            {"id": name, "object": "model", "created": created, "owned_by": "textagents", "root": str(entry.path)}
            | {"parent": self.base_name}
            for name, entry in loaded
        ]

    # ------------------------------------------------------------------ requests
    def load(self, body: dict[str, Any]) -> Job:
        name = _text_field(body, "lora_name")
        path = _text_field(body, "lora_path")
        if name == self.base_name:
            raise RequestError(HTTPStatus.BAD_REQUEST, f"{quoted(name)} is the served model's name", "lora_name")
        self._check_room(name)
        try:
            adapter = read_adapter(path)
        except AdapterError as error:
            raise RequestError(HTTPStatus.BAD_REQUEST, str(error), "lora_path") from error
        if adapter.rank > self.limits.max_rank:
            message = f"the adapter's rank {adapter.rank} is over this server's limit of {self.limits.max_rank}"
            raise RequestError(HTTPStatus.BAD_REQUEST, message + " (--max-lora-rank)", "lora_path")

        def job() -> str:
            self._check_room(name)  # another load may have come first
            slot = f"adapter{next(self._slots)}"
            try:
                self._inject(adapter, slot)
            except (AdapterError, ValueError, RuntimeError) as error:
                self._delete(slot)
                message = f"the adapter at {path} does not fit the served model: {error}"
                raise RequestError(HTTPStatus.BAD_REQUEST, message, "lora_path") from error
            with self._lock:
                self._loaded[name] = Loaded(slot, adapter.path)
            return f"Success: LoRA adapter '{name}' added successfully."

        return job

    def unload(self, body: dict[str, Any]) -> Job:
        name = _text_field(body, "lora_name")
        self._find(name)

        def job() -> str:
            entry = self._find(name)  # it may have been unloaded since the request was checked
            with self._lock:
                del self._loaded[name]
            self._delete(entry.slot)
            return f"Success: LoRA adapter '{name}' removed successfully."

        return job

    def _check_room(self, name: str) -> None:
        with self._lock:
            if name in self._loaded:
                message = f"The lora adapter {quoted(name)} has already been loaded: unload it first"
                raise RequestError(HTTPStatus.BAD_REQUEST, message, "lora_name")
            if len(self._loaded) >= self.limits.max_loras:
                message = (
                    f"{len(self._loaded)} adapters are loaded, this server's limit (--max-loras): unload one first"
                )
                raise RequestError(HTTPStatus.BAD_REQUEST, message, "lora_name")

    def _find(self, name: str) -> Loaded:
        with self._lock:
            entry = self._loaded.get(name)
        if entry is None:
            message = f"The lora adapter {quoted(name)} cannot be found."
            raise RequestError(HTTPStatus.NOT_FOUND, message, "lora_name")
        return entry

    # ------------------------------------------------------------------ the model (in the model's thread)
    def _layers(self) -> Iterator[Any]:
        from peft.tuners.tuners_utils import BaseTunerLayer

        return (module for module in self.backend.model.modules() if isinstance(module, BaseTunerLayer))

    def _inject(self, adapter: LoraAdapter, slot: str) -> None:
        """Add ``adapter``'s layers under ``slot`` and copy its weights in, each checked against its layer."""
        import torch
        from peft import LoraConfig, inject_adapter_in_model
        from safetensors import safe_open

        config = adapter.config
        lora = LoraConfig(
            r=adapter.rank,
            lora_alpha=config["lora_alpha"],
            target_modules=list(adapter.target_modules),
            fan_in_fan_out=bool(config.get("fan_in_fan_out", False)),
            use_rslora=bool(config.get("use_rslora", False)),
        )
        inject_adapter_in_model(lora, self.backend.model, adapter_name=slot)
        params = dict(self.backend.model.named_parameters())
        missing = {name for name in params if f".{slot}." in name}
        with safe_open(adapter.weights, framework="pt") as weights:
            for key in weights.keys():  # noqa: SIM118 (safe_open is not a mapping)
                stem, _, last = key.removeprefix(WEIGHT_PREFIX).rpartition(".")
                target = f"{stem}.{slot}.{last}"
                if target not in missing:
                    raise AdapterError(f"its weight {key!r} has no place among the adapted layers")
                shape = tuple(weights.get_slice(key).get_shape())
                if shape != tuple(params[target].shape):
                    raise AdapterError(f"its weight {key!r} has shape {shape}, the layer {tuple(params[target].shape)}")
                with torch.no_grad():
                    params[target].copy_(weights.get_tensor(key))
                missing.discard(target)
        if missing:
            raise AdapterError(f"it has no weights for {len(missing)} of its layers, e.g. {sorted(missing)[0]!r}")

    def _delete(self, slot: str) -> None:
        for layer in self._layers():
            layer.enable_adapters(False)  # the next request selects what it asks for
            layer.delete_adapter(slot)

    def select(self, name: str | None) -> None:
        """Make the served model answer with adapter ``name`` (None: the model alone) until the next ``select``;
        404 when it was unloaded after the request was checked."""
        slot = None if name is None else self._find(name).slot
        for layer in self._layers():
            if slot is None:
                layer.enable_adapters(False)
            else:
                layer.set_adapter(slot)
                layer.enable_adapters(True)
