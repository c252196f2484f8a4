"""LLM-Personalize's planner behind an OpenAI-compatible server (``served_weights``): the planner's calls
(evaluations, baselines, self-training rollouts) go to the server, fine-tuning is local (trl on the config's
``device``), and after each fine-tune the server answers with the new weights — the paper's loop without
OpenAI's fine-tuning API.

- ``lora_adapter``: a server with runtime LoRA loading (vLLM with ``VLLM_ALLOW_RUNTIME_LORA_UPDATING=True`` and
  ``--enable-lora``, or ``textagents serve --enable-lora``) at the run's ``base_url``, serving the run's
  ``model`` under that name. After each fine-tune the adapter of the rounds so far (``lora_files.
  stack_adapters``: each round's LoRA is trained on the weights merged with the rounds before, so their stack on
  the base model is the fine-tuned model) is saved in ``models/iter_N/served_adapter``, loaded with
  ``POST /v1/load_lora_adapter`` and asked for by name; the previous one is unloaded.
- ``restart``: the method runs the server itself from ``serve_command`` (an argument list, no shell; ``{model}``
  becomes the weights' folder, ``{port}`` the port) and waits for ``/v1/models``; it stops the server before each
  fine-tune and starts it again on the merged weights (``models/iter_N``) when the planner next asks.

The run's recording holds the answers under the run's model name, as for ``fine_tuning: openai``, so a served
run replays like any other (``--llm-replay``: nothing is served then). A resumed run serves its last
checkpoint's weights again.
"""

from __future__ import annotations

import warnings
from abc import ABC, abstractmethod
from pathlib import Path
from typing import Any

from textagents.llm.base import LLMBackend
from textagents.llm.lora_files import stack_adapters
from textagents.llm.server_process import ServerProcess, free_port
from textagents.methods.core.method import RunContext
from textagents.methods.llm_personalize.config import LLMPersonalizeConfig
from textagents.methods.llm_personalize.finetune import ADAPTER

#: The subfolder of ``models/iter_N`` that holds the adapter served for that round (the rounds' stack).
SERVED_ADAPTER = "served_adapter"
#: The file in the run folder that a started server's output is appended to.
SERVER_LOG = "server.log"


class ServedPlannerError(RuntimeError):
    """The server refused or could not be reached: the message says which request and what it answered."""


class ServedPlanner(ABC):
    """The planner's LLM for the current round, and the model that fine-tuning trains."""

    def __init__(self, config: LLMPersonalizeConfig, context: RunContext):
        self.config = config
        self.context = context

    @abstractmethod
    def trained(self) -> Any:
        """The local ``TransformersBackend`` that fine-tuning changes."""

    @abstractmethod
    def llm(self) -> LLMBackend:
        """What the planner asks: the server, answering with the last weights given to ``serve`` or ``resume``."""

    def pause(self) -> None:  # noqa: B027 (only the restart frees anything)
        """Before a fine-tune: free what serving holds that training needs."""

    @abstractmethod
    def serve(self, model_dir: Path) -> None:
        """After a fine-tune into ``model_dir``: the next ``llm()`` answers with those weights."""

    @abstractmethod
    def resume(self, model_dir: Path) -> None:
        """After a checkpoint is restored: serve ``model_dir``, fine-tuned before the run stopped."""

    @abstractmethod
    def close(self) -> None:
        """Leave the server as the run found it (or stop the one it started)."""


def served_planner(config: LLMPersonalizeConfig, context: RunContext) -> ServedPlanner:
    """The ``ServedPlanner`` of ``config.served_weights``."""
    kinds: dict[str, type[ServedPlanner]] = {"lora_adapter": AdapterServing, "restart": RestartServing}
    return kinds[config.served_weights](config, context)


class AdapterServing(ServedPlanner):
    """``served_weights: lora_adapter`` (module docstring). The run's LLM is the server (``base_url``); the
    trained model is ``model`` loaded here."""

    def __init__(self, config: LLMPersonalizeConfig, context: RunContext):
        super().__init__(config, context)
        self.recorder = context.llm()
        self.server = self.recorder.backend  # the OpenAIBackend the runner built for base_url
        self.base_name = self.server.model_name
        self._trained: Any = None
        self.adapter: Path | None = None  # the stacked adapter to serve
        self.loaded: str | None = None  # its name on the server once loaded
        self.checked = False

    def trained(self) -> Any:
        if self._trained is None:
            from textagents.llm.transformers_backend import TransformersBackend

            device = self.config.torch_device()
            self._trained = TransformersBackend(self.config.model, device=device, dtype=self.config.torch_dtype())
            self.server.tokenizer = self._trained.tokenizer  # scores go to the server as token ids: exact
        return self._trained

    def llm(self) -> LLMBackend:
        if not self.checked:
            self._check_base_model()
            self.checked = True
        if self.adapter is not None and self.loaded != self._name(self.adapter):
            self._load(self.adapter)
        return self.recorder

    def serve(self, model_dir: Path) -> None:
        rounds = [self.adapter, model_dir / ADAPTER] if self.adapter is not None else [model_dir / ADAPTER]
        self.adapter = stack_adapters(rounds, model_dir / SERVED_ADAPTER).path

    def resume(self, model_dir: Path) -> None:
        adapter = model_dir / SERVED_ADAPTER
        if not adapter.is_dir():
            raise ServedPlannerError(f"{adapter} is missing: the run's last fine-tuned adapter cannot be served")
        self.adapter = adapter

    def close(self) -> None:
        if self.loaded is None:
            return
        try:
            self._post("unload_lora_adapter", {"lora_name": self.loaded}, missing_ok=True)
        except ServedPlannerError as error:  # the run's own error, if any, is the one to report
            warnings.warn(f"the adapter {self.loaded!r} stays loaded: {error}", RuntimeWarning, stacklevel=2)
        self.loaded = None
        self.server.model_name = self.base_name

    def _name(self, adapter: Path) -> str:
        """The adapter's name on the server: the run's folder and the round, so that runs sharing a server
        do not clash."""
        return f"llm_personalize-{self.context.run_dir.name}-{adapter.parent.name}"

    def _check_base_model(self) -> None:
        import openai

        try:
            served = [card.id for card in self.server.client.models.list().data]
        except openai.OpenAIError as error:
            message = f"the server at {self.server.client.base_url} did not list its models: {error}"
            raise ServedPlannerError(message) from error
        if self.base_name not in served:
            raise ServedPlannerError(
                f"the server at {self.server.client.base_url} serves {served}, not the run's model {self.base_name!r}: "
                "start it under that name (vLLM --served-model-name, textagents serve --model-name)"
            )

    def _load(self, adapter: Path) -> None:
        name = self._name(adapter)
        for stale in {self.loaded, name} - {None}:  # the last round's, and this run's own from a stopped attempt
            self._post("unload_lora_adapter", {"lora_name": stale}, missing_ok=True)
        self.loaded = None
        self._post("load_lora_adapter", {"lora_name": name, "lora_path": str(adapter.resolve())})
        self.loaded = name
        self.server.model_name = name

    def _post(self, route: str, body: dict[str, str], missing_ok: bool = False) -> None:
        import httpx
        import openai

        where = f"{self.server.client.base_url}{route}"
        try:
            self.server.client.post(f"/{route}", body=body, cast_to=httpx.Response)
        except openai.NotFoundError as error:
            if missing_ok:
                return
            raise ServedPlannerError(
                f"{where} answered 404 ({error.message}): start vLLM with VLLM_ALLOW_RUNTIME_LORA_UPDATING=True and "
                "--enable-lora, or textagents serve with --enable-lora"
            ) from error
        except openai.APIStatusError as error:
            raise ServedPlannerError(f"{where} refused {body}: HTTP {error.status_code}: {error.message}") from error
        except openai.APIConnectionError as error:
            raise ServedPlannerError(f"{where} could not be reached: {error}") from error


class RestartServing(ServedPlanner):
    """``served_weights: restart`` (module docstring). The run's LLM is the local model that is trained; the
    planner asks the server started from ``serve_command``."""

    def __init__(self, config: LLMPersonalizeConfig, context: RunContext):
        from textagents.llm.models import resolve_model

        super().__init__(config, context)
        self.recorder = context.llm()
        self.weights = resolve_model(config.model)  # the base model's folder (or a hub id the server resolves)
        self.process: ServerProcess | None = None
        self._llm: LLMBackend | None = None

    def trained(self) -> Any:
        return self.recorder.backend

    def llm(self) -> LLMBackend:
        if self.process is None:
            self._start()
        assert self._llm is not None
        return self._llm

    def pause(self) -> None:
        self.close()

    def serve(self, model_dir: Path) -> None:
        self.close()
        self.weights = str(model_dir.resolve())

    resume = serve

    def close(self) -> None:
        if self.process is not None:
            self.process.stop()
            self.process = None
            self._llm = None

    def _start(self) -> None:
        from textagents.llm import OpenAIBackend
        from textagents.llm.record import RecordingBackend

        port = self.config.serve_port or free_port()
        argv = [arg.replace("{model}", self.weights).replace("{port}", str(port)) for arg in self.config.serve_command]
        url = f"http://127.0.0.1:{port}/v1"
        backend = OpenAIBackend("pending", base_url=url, api_key_env=self.config.api_key_env)
        headers = {"Authorization": f"Bearer {backend.client.api_key}"}
        self.process = ServerProcess.start(
            argv, url, self.context.run_dir / SERVER_LOG, self.config.serve_timeout_s, headers
        )
        backend.model_name = self.process.models[0]
        backend.tokenizer = self.trained().tokenizer  # scores go to the server as token ids: exact
        recorder = RecordingBackend(backend, self.recorder.path)
        recorder.model_name = self.recorder.model_name  # recorded under the run's model, whatever the round
        self._llm = recorder
