"""A lamorel-style LLM caller: the LLM lives in N worker processes, the RL loop in the main one.

lamorel (Carta et al.) serves an LLM to an RL loop: ``score`` the candidates of each context,
``generate``, run named *custom module functions* on the LLM's hidden states (GLAM's value head), and
*custom updaters* that fine-tune the LLM where it lives (GLAM's PPO loss). ``Caller`` mirrors it:

``docs/methods/glam.md`` maps every lamorel concept to its name here.

With ``processes=1`` the model is in this process. With N > 1 each worker holds an identical replica (same
seed), a call's contexts are split evenly across the workers, and an update runs the updater on each
worker's share with gradients averaged before every optimizer step, so the replicas stay identical. The
workers are started with ``spawn`` and talk to the main process over pipes (our own objects only).

``score_cache`` (default on): each process serves repeated (functions, context, candidates) calls from a cache
that is emptied whenever a weight changes (``score_cache.py``), so a frozen policy's repeated states cost
one forward pass; the numbers are the ones the model computed for that pair under the same weights.
"""

from __future__ import annotations

import os
import socket
import time
from abc import ABC, abstractmethod
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import torch
from torch import nn

from textagents.device import autocast, rank_device, resolve_device, resolve_dtype
from textagents.llm.accounting import TokenUsage
from textagents.llm.base import Message, chat_batch
from textagents.llm.score_cache import ScoreCache, weights_state

ModuleFactory = Callable[[int], nn.Module]  # the LLM's hidden size -> a module function


@dataclass
class LLMHandle:
    """What an updater works with: the backend (``backend.model``, ``backend.module_functions``,
    ``backend.forward_candidates``), this process's rank among ``world_size``."""

    backend: Any
    rank: int = 0
    world_size: int = 1

    def trainable_parameters(self) -> list[nn.Parameter]:
        params = [*self.backend.model.parameters(), *self.backend.module_functions.parameters()]
        return [p for p in params if p.requires_grad]

    def all_reduce_gradients(self) -> None:
        """Average the gradients over the LLM processes (nothing to do in one process)."""
        if self.world_size == 1:
            return
        import torch.distributed as dist

        for param in self.trainable_parameters():
            grad = param.grad if param.grad is not None else torch.zeros_like(param)
            dist.all_reduce(grad, op=dist.ReduceOp.SUM)
            param.grad = grad / self.world_size


class Updater(ABC):
    """A custom updater (lamorel's ``BaseUpdater``): runs where the LLM lives, on that process's share."""

    @abstractmethod
    def perform_update(
        self, llm: LLMHandle, contexts: Sequence[str], candidates: Sequence[Sequence[str]], **kwargs: Any
    ) -> dict[str, float]: ...

    def state_dict(self) -> dict[str, torch.Tensor]:
        """The updater's state (optimizer moments ...) as named tensors, for checkpoints."""
        return {}

    def load_state_dict(self, state: Mapping[str, torch.Tensor], llm: LLMHandle) -> None:  # noqa: B027
        """Restore ``state_dict()``'s tensors."""


@dataclass(frozen=True)
class LLMSpec:
    """How every process builds the same LLM: ``model`` (path or downloaded name), ``module_functions``,
    ``lora_r`` (0: full fine-tuning), ``pretrained`` (False: the same architecture with fresh random weights,
    GLAM's NPAE baseline), ``load_embedding`` (with ``pretrained`` False: copy the pretrained embedding
    weights into the fresh model, as GLAM's NPAE runs did), ``seed``, the ``device`` setting
    (``textagents.device``: with several processes on CUDA each gets its own GPU) and ``dtype``, the precision
    of the forward passes (autocast; the trained weights stay float32), and options for ``TransformersBackend``
    (``batch_size`` ...)."""

    model: str
    module_functions: Mapping[str, ModuleFactory]
    lora_r: int = 0
    pretrained: bool = True
    load_embedding: bool = False
    seed: int = 0
    device: str = "cpu"
    dtype: str = "float32"
    backend_options: Mapping[str, Any] | None = None

    def torch_device(self, rank: int = 0) -> torch.device:
        return rank_device(resolve_device(self.device), rank)

    def build(self, rank: int = 0) -> Any:
        from textagents.llm.transformers_backend import TransformersBackend

        device = self.torch_device(rank)
        torch.manual_seed(self.seed)
        backend = TransformersBackend(self.model, device=device, **dict(self.backend_options or {}))
        if not self.pretrained:
            fresh = _fresh_like(backend.model)
            if self.load_embedding:
                fresh.load_state_dict(embedding_state(backend.model), strict=False)
            backend.model = fresh.to(device).eval()
        hidden = backend.model.config.get_text_config().hidden_size
        torch.manual_seed(self.seed + 1)
        modules = {k: f(hidden) for k, f in self.module_functions.items()}
        backend.module_functions = nn.ModuleDict(modules).to(device).eval()
        if self.lora_r:
            from peft import LoraConfig, get_peft_model

            task = "SEQ_2_SEQ_LM" if backend.seq2seq else "CAUSAL_LM"
            config = LoraConfig(r=self.lora_r, lora_alpha=2 * self.lora_r, task_type=task, target_modules="all-linear")
            torch.manual_seed(self.seed + 2)
            # get_peft_model leaves every module in training mode: eval mode, as the model was loaded (no dropout)
            backend.model = get_peft_model(backend.model, config).eval()
        return backend


def _fresh_like(model: nn.Module) -> nn.Module:
    from transformers import AutoModelForCausalLM, AutoModelForSeq2SeqLM

    loader = AutoModelForSeq2SeqLM if model.config.is_encoder_decoder else AutoModelForCausalLM
    return loader.from_config(model.config)


def embedding_state(model: nn.Module) -> dict[str, torch.Tensor]:
    """The weights GLAM's NPAE loads from the pretrained model: those whose names contain "embed" or "shared"
    (the original's filter; with tied weights, what shares them follows), plus the input embedding's when
    named otherwise (GPT-2's ``wte``, which that filter misses)."""
    embedding = model.get_input_embeddings().weight.data_ptr()
    return {
        name: value
        for name, value in model.state_dict().items()
        if "embed" in name or "shared" in name or value.data_ptr() == embedding
    }


class Caller:
    """The LLM for an RL loop (see the module docstring). Also an ``LLMBackend`` (``generate``, ``chat``,
    ``score``), so agents and methods can use it like any backend. ``score_cache``: serve repeated calls
    under unchanged weights from each process's cache (see the module docstring)."""

    def __init__(self, spec: LLMSpec, updater: Updater | None = None, processes: int = 1, score_cache: bool = True):
        if processes < 1:
            raise ValueError(f"processes must be >= 1, got {processes}")
        self.spec, self.processes, self.score_cache = spec, processes, score_cache
        self.model_name = Path(str(spec.model)).name
        self.usage = TokenUsage()
        self._local: _Worker | None = None
        self._pipes: list[Any] = []
        self._workers: list[Any] = []
        if processes == 1:
            self._local = _Worker(spec, updater, 0, 1, score_cache)
        else:
            self._start(updater)

    def _start(self, updater: Updater | None) -> None:
        import multiprocessing

        context = multiprocessing.get_context("spawn")
        port = _free_port()
        threads = max(1, (os.cpu_count() or 1) // self.processes)
        for rank in range(self.processes):
            parent, child = context.Pipe()
            process = context.Process(
                target=_serve_worker,
                args=(child, self.spec, updater, rank, self.processes, port, threads, self.score_cache),
                daemon=True,
            )
            process.start()
            self._pipes.append(parent)
            self._workers.append(process)
        for pipe in self._pipes:
            self._receive(pipe)  # "ready", or the worker's error

    @staticmethod
    def _receive(pipe: Any) -> Any:
        try:
            status, value = pipe.recv()
        except EOFError as error:
            raise RuntimeError("an LLM worker process died (out of memory?); see its output above") from error
        if status == "error":
            raise RuntimeError(f"LLM worker failed: {value}")
        return value

    def _call(self, name: str, contexts: Sequence[Any], *args: Any, shard: Sequence[Any] = (), **kwargs: Any) -> list:
        """``name`` on every process with its even share of ``contexts`` (and of each ``shard`` sequence);
        one result per process."""
        if self._local is not None:
            return [getattr(self._local, name)(list(contexts), *shard, *args, **kwargs)]
        parts = np.array_split(np.arange(len(contexts)), self.processes)
        for pipe, part in zip(self._pipes, parts, strict=True):
            pieces = [_take(seq, part) for seq in (contexts, *shard)]
            pipe.send((name, (*pieces, *args), kwargs))
        return [self._receive(pipe) for pipe in self._pipes]

    # ------------------------------------------------------------------ lamorel's calls
    def custom_module_fns(
        self, module_function_keys: Sequence[str], contexts: Sequence[str], candidates: Sequence[Sequence[str]]
    ) -> list[dict[str, list[float]]]:
        """Per context ``{"__score": [...], key: [...]}``: the candidates' scores and each module function's
        output, one value per candidate."""
        start = time.perf_counter()
        results = self._call("forward", contexts, list(module_function_keys), shard=[candidates])
        merged = [row for part in results for row in part]
        self.usage.add(sum(len(c) for c in contexts), 0, seconds=time.perf_counter() - start)
        return merged

    def update(self, contexts: Sequence[str], candidates: Sequence[Sequence[str]], **kwargs: Any) -> list[dict]:
        """Run the updater on every process with its share of the contexts and of every sequence in
        ``kwargs`` of the same length; one result per process."""
        keys = [k for k, v in kwargs.items() if _is_per_context(v, len(contexts))]
        shared = {k: v for k, v in kwargs.items() if k not in keys}
        shards = [candidates, *(kwargs[k] for k in keys)]
        return self._call("update", contexts, keys, shared, shard=shards)

    def trainable_state(self) -> dict[str, torch.Tensor]:
        """The trainable weights, module functions and updater state (identical on every process)."""
        return self._call("state", [])[0]

    def load_trainable_state(self, state: Mapping[str, torch.Tensor]) -> None:
        self._call("load_state", [], dict(state))

    def cache_stats(self) -> dict[str, int]:
        """The score cache's ``hits`` and ``misses`` (context rows) summed over the processes."""
        parts = self._call("cache_stats", [])
        return {key: sum(part[key] for part in parts) for key in ("hits", "misses")}

    # ------------------------------------------------------------------ LLMBackend
    def score(self, contexts: Sequence[str], candidates: Sequence[Sequence[str]]) -> list[list[float]]:
        return [row["__score"] for row in self.custom_module_fns([], contexts, candidates)]

    def generate(self, prompts: Sequence[str], **sampling: Any) -> list[str]:
        return [text for part in self._call("generate", prompts, sampling) for text in part]

    def chat(self, messages: Sequence[Message], **sampling: Any) -> str:
        return self.chat_batch([messages], **sampling)[0]

    def chat_batch(self, conversations: Sequence[Sequence[Message]], **sampling: Any) -> list[str]:
        """One answer per conversation, the conversations split across the processes, each share one batch."""
        return [text for part in self._call("chat", [list(m) for m in conversations], sampling) for text in part]

    def close(self) -> None:
        for pipe in self._pipes:
            pipe.send(("close", (), {}))
        for process in self._workers:
            process.join(timeout=30)
        self._pipes, self._workers = [], []

    def __enter__(self) -> Caller:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def _take(seq: Any, indices: np.ndarray) -> Any:
    """The elements of ``seq`` at ``indices``, of the same kind (tensor, array or list)."""
    if isinstance(seq, torch.Tensor):
        return seq[torch.as_tensor(indices, dtype=torch.long)]
    if isinstance(seq, np.ndarray):
        return seq[indices]
    return [seq[i] for i in indices]


def _is_per_context(value: Any, count: int) -> bool:
    return (
        isinstance(value, Sequence | np.ndarray | torch.Tensor) and not isinstance(value, str) and len(value) == count
    )


class _Worker:
    """One process's LLM and updater."""

    def __init__(self, spec: LLMSpec, updater: Updater | None, rank: int, world_size: int, score_cache: bool = True):
        self.llm = LLMHandle(spec.build(rank), rank, world_size)
        self.updater = updater
        self.dtype = resolve_dtype(spec.dtype, self.llm.backend.device)
        self.cache = ScoreCache() if score_cache else None

    def precision(self) -> Any:
        return autocast(self.llm.backend.device, self.dtype)

    def forward(self, contexts: list[str], candidates: list[list[str]], keys: list[str]) -> list[dict]:
        if not contexts:
            return []
        backend = self.llm.backend
        state = weights_state([backend.model, backend.module_functions]) if self.cache is not None else None
        if state is None:
            return self._forward(contexts, candidates, keys)
        return self.cache.rows(keys, contexts, candidates, state, lambda c, o: self._forward(c, o, keys))

    def _forward(self, contexts: list[str], candidates: list[list[str]], keys: list[str]) -> list[dict]:
        with torch.no_grad(), self.precision():
            outputs = self.llm.backend.forward_candidates(contexts, candidates, functions=keys)
        return [
            {("__score" if k == "score" else k): outputs[k][i].tolist() for k in outputs} for i in range(len(contexts))
        ]

    def cache_stats(self, _: list) -> dict[str, int]:
        cache = self.cache
        return {"hits": cache.hits, "misses": cache.misses} if cache is not None else {"hits": 0, "misses": 0}

    def update(self, contexts: list[str], candidates: list, *rest: Any) -> dict[str, float]:
        *sharded, keys, shared = rest
        if self.updater is None:
            raise RuntimeError("this Caller has no updater")
        with self.precision():
            result = self.updater.perform_update(
                self.llm, contexts, candidates, **dict(zip(keys, sharded, strict=True)), **shared
            )
        if self.cache is not None:
            self.cache.clear()  # also for updaters that write the weights through .data, unseen by their versions
        self.llm.backend.kept_prefix.clear()  # the same
        return result

    def state(self, _: list) -> dict[str, torch.Tensor]:
        backend = self.llm.backend
        names = dict(backend.model.named_parameters())
        # on the CPU: the state crosses to the main process and into safetensors
        state = {f"model.{k}": v.detach().cpu().clone() for k, v in names.items() if v.requires_grad}
        modules = backend.module_functions.state_dict()
        state.update({f"modules.{k}": v.detach().cpu().clone() for k, v in modules.items()})
        if self.updater is not None:
            state.update({f"updater.{k}": v for k, v in self.updater.state_dict().items()})
        return state

    def load_state(self, _: list, state: dict[str, torch.Tensor]) -> None:
        if self.cache is not None:
            self.cache.clear()
        backend = self.llm.backend
        params = dict(backend.model.named_parameters())
        with torch.no_grad():
            for key, value in state.items():
                if key.startswith("model."):
                    params[key[len("model.") :]].copy_(value)
        backend.module_functions.load_state_dict(
            {k[len("modules.") :]: v for k, v in state.items() if k.startswith("modules.")}
        )
        if self.updater is not None:
            self.updater.load_state_dict(
                {k[len("updater.") :]: v for k, v in state.items() if k.startswith("updater.")}, self.llm
            )

    def generate(self, prompts: list[str], sampling: dict[str, Any]) -> list[str]:
        return self.llm.backend.generate(prompts, **sampling) if prompts else []

    def chat(self, conversations: list, sampling: dict[str, Any]) -> list[str]:
        return chat_batch(self.llm.backend, conversations, **sampling) if conversations else []


def _serve_worker(
    pipe: Any,
    spec: LLMSpec,
    updater: Updater | None,
    rank: int,
    world_size: int,
    port: int,
    threads: int,
    score_cache: bool,
) -> None:
    os.environ.update(
        MASTER_ADDR="127.0.0.1",
        MASTER_PORT=str(port),
        RANK=str(rank),
        WORLD_SIZE=str(world_size),
        LOCAL_RANK=str(rank),
        OMP_NUM_THREADS=str(threads),  # accelerate would set 2 per process: N x 2 threads oversubscribe the cores
    )
    try:
        from accelerate import PartialState

        on_gpu = spec.torch_device(rank).type == "cuda"
        # the process group the gradients are averaged over: NCCL between GPUs, as lamorel's accelerate launch
        PartialState(cpu=not on_gpu, backend="nccl" if on_gpu else "gloo")
        torch.set_num_threads(threads)
        worker = _Worker(spec, updater, rank, world_size, score_cache)
    except Exception as error:  # reported to the main process, which raises it
        pipe.send(("error", f"rank {rank}: {type(error).__name__}: {error}"))
        return
    pipe.send(("ok", "ready"))
    while True:
        name, args, kwargs = pipe.recv()
        if name == "close":
            break
        try:
            pipe.send(("ok", getattr(worker, name)(*args, **kwargs)))
        except Exception as error:
            pipe.send(("error", f"rank {rank}: {name}: {type(error).__name__}: {error}"))


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]
