"""Running a method: create or resume its run directory, train with a progress bar, checkpoint, evaluate,
log (metrics.jsonl and TensorBoard) and write the report; and evaluating a run's checkpoint."""

from __future__ import annotations

import functools
import time
import warnings
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from tqdm.auto import tqdm

from textagents.llm.base import LLMBackend
from textagents.llm.key_hosts import key_host_refusal
from textagents.methods.core.config import ConfigError, config_from_dict, load_config
from textagents.methods.core.method import RunContext
from textagents.methods.core.report import write_report
from textagents.methods.core.run_dir import RunDir, RunDirError, RunDirWarning
from textagents.methods.core.tensorboard import ScalarWriter
from textagents.methods.registry import method_class


@dataclass(frozen=True)
class LLMChoice:
    """The command line's LLM settings: they override the config's, say where calls are recorded or
    replayed from (default: recorded to the run's ``llm_calls.jsonl``) and which hosts besides this machine
    an API key may go to (``key_hosts.normalise_host``'s form); ``--max-concurrency``, the requests a server
    gets at once; ``--device``, where the models run; and ``--llm-cache``, a ``ResponseCache`` file that answers
    the requests asked before (``CachedBackend``: seeded or greedy ones) in front of the live model."""

    model: str | None = None
    base_url: str | None = None
    api_key_env: str | None = None
    record: str | None = None
    replay: str | None = None
    allowed_hosts: tuple[str, ...] = ()
    device: str | None = None
    max_concurrency: int | None = None
    cache: str | None = None

    def __post_init__(self) -> None:
        if self.cache is not None and self.replay is not None:
            raise ConfigError("--llm-cache answers in front of a live model; a replay asks none: give one of them")

    def config_overrides(self) -> dict[str, Any]:
        return {
            "model": self.model,
            "base_url": self.base_url,
            "api_key_env": self.api_key_env,
            "device": self.device,
            "max_concurrency": self.max_concurrency,
        }


def _check_key_host(config: Any, choice: LLMChoice) -> None:
    """``ConfigError`` when the config's server would get an API key the user did not allow it."""
    if choice.replay is not None:
        return  # answers come from the recording, no server
    refusal = key_host_refusal(config.base_url, config.api_key_env, choice.allowed_hosts)
    if refusal is not None:
        raise ConfigError(f"base_url {config.base_url!r}: {refusal}")


def _llm_factory(config: Any, run: RunDir, choice: LLMChoice):
    @functools.cache
    def build() -> LLMBackend:
        from textagents.llm.cache import CachedBackend, ResponseCache
        from textagents.llm.record import RecordingBackend, ReplayBackend

        if choice.replay is not None:
            backend: LLMBackend = ReplayBackend(choice.replay)
        elif config.model is None:
            raise RunDirError("this config uses an LLM but names none: set `model:` or pass --model / --base-url")
        elif config.base_url is not None:
            from textagents.llm import OpenAIBackend

            _check_key_host(config, choice)
            backend = OpenAIBackend(
                config.model,
                base_url=config.base_url,
                api_key_env=config.api_key_env,
                max_concurrency=config.max_concurrency,
            )
        elif config.llm_backend == "llamacpp":
            from textagents.llm.llamacpp_backend import LlamaCppBackend

            backend = LlamaCppBackend(config.model, n_ctx=config.llm_context)
        else:
            from textagents.llm.transformers_backend import TransformersBackend

            device = config.torch_device()
            backend = TransformersBackend(config.model, device=device, dtype=config.torch_dtype())
        if choice.cache is not None:
            backend = CachedBackend(backend, ResponseCache(choice.cache))
        return RecordingBackend(backend, choice.record or run.llm_calls_path)

    return build


def _tensorboard(run: RunDir, start: int) -> ScalarWriter:
    return ScalarWriter(run.path / "tensorboard", purge_step=start + 1)


def _log(run: RunDir, writer: Any, record: dict[str, Any]) -> None:
    run.log(record)
    for key, value in record.items():
        if isinstance(value, int | float) and not isinstance(value, bool) and key not in ("iteration", "time"):
            writer.add_scalar(f"{record['kind']}/{key}", value, record["iteration"])
    writer.flush()


def run_method(
    name: str,
    config_path: str | Path,
    out: str | Path,
    *,
    resume: bool = False,
    llm: LLMChoice | None = None,
    progress: bool = True,
    unsafe_local_exec: bool = False,
) -> dict[str, Any]:
    """Train ``name`` with the config at ``config_path`` into ``out`` (or continue it with ``resume``);
    ``unsafe_local_exec``: the user accepts running LLM-written code with no OS boundary (BK-Code). A new run
    that fails before its first checkpoint is undone (``RunDir.undo_start``), so the same call can run again."""
    cls = method_class(name)
    llm = llm or LLMChoice()
    config = load_config(cls.config_class, config_path, llm.config_overrides())
    _check_key_host(config, llm)  # before the run folder is made
    run = RunDir(out)
    before = run.entries()
    method = cls(config, RunContext(run.path, _llm_factory(config, run, llm), unsafe_local_exec))
    finished = False
    try:
        start = 0
        if resume:
            checkpoint = run.resume(name, config.as_recorded(run.recorded()["config"]))
            if checkpoint is not None:
                method.restore(checkpoint)
                start = checkpoint.iteration
        else:
            run.create(name, config.as_dict())
        result = _train(name, config, run, method, start, progress)
        finished = True
        return result
    finally:
        method.close()
        if not finished and not resume and not run.checkpoints():
            _undo_start(run, before, Path(llm.record or run.llm_calls_path))


def _train(name: str, config: Any, run: RunDir, method: Any, start: int, progress: bool) -> dict[str, Any]:
    """Iterations ``start + 1`` to the config's last, with their evaluations and checkpoints; the report."""
    writer = _tensorboard(run, start)
    try:
        began = time.monotonic()
        bar = tqdm(total=config.iterations, initial=start, desc=name, unit="iter", disable=not progress)
        for iteration in range(start + 1, config.iterations + 1):
            metrics = method.train_iteration(iteration)
            _log(run, writer, {"kind": "train", "iteration": iteration, **metrics, "time": time.time()})
            last = iteration == config.iterations
            if (config.eval_every and iteration % config.eval_every == 0) or last:
                _log(run, writer, {"kind": "eval", "iteration": iteration, **method.evaluate(), "time": time.time()})
            if iteration % config.checkpoint_every == 0 or last:
                run.save_checkpoint(method.checkpoint(iteration), keep=config.keep_checkpoints)
            bar.update(1)
            bar.set_postfix({k: v for k, v in metrics.items() if isinstance(v, float)}, refresh=False)
        bar.close()
    finally:
        writer.close()
    records = run.metrics()
    report = write_report(run.path, name, config.as_dict(), records, method.report_sections(records))
    return {"run_dir": str(run.path), "report": str(report), "elapsed_s": time.monotonic() - began}


def _undo_start(run: RunDir, before: set[str] | None, calls: Path) -> None:
    """``RunDir.undo_start``, said in a ``RunDirWarning`` when it removed or kept something."""
    if run.entries() == before:
        return  # nothing was written (e.g. the folder was refused)
    try:
        kept = run.undo_start(before, calls)
    except OSError as error:  # the run's own error is the one to report
        message = f"{run.path}: the run stopped before its first checkpoint and could not be undone ({error}); "
        message += "remove what it wrote by hand before running the same command again"
        warnings.warn(message, RunDirWarning, stacklevel=3)
        return
    message = f"{run.path}: the run stopped before its first checkpoint; what it wrote is removed, so the same "
    message += "command starts it again"
    if kept is not None:
        message += f"; the LLM calls it recorded are kept in {kept}"
    warnings.warn(message, RunDirWarning, stacklevel=3)


def evaluate_run(
    name: str,
    out: str | Path,
    *,
    checkpoint: int | None = None,
    llm: LLMChoice | None = None,
    settings: dict[str, Any] | None = None,
    unsafe_local_exec: bool = False,
) -> dict:
    """Evaluate a run's checkpoint (default: its last; 0: the method as its config builds it, before any
    training) and append the result to its ``evals.jsonl``; ``settings`` change the run's config for this
    evaluation (e.g. ``{"temperature": 0}``) and are logged."""
    cls = method_class(name)
    run = RunDir(out)
    recorded = run.recorded()
    if recorded["method"] != name:
        raise RunDirError(f"{run.path} is a {recorded['method']!r} run, not {name!r}")
    llm = llm or LLMChoice()
    config = config_from_dict(
        cls.config_class,
        {**recorded["config"], **(settings or {})},
        str(run.path / "config.json"),
        llm.config_overrides(),
    )
    _check_key_host(config, llm)
    state = None if checkpoint == 0 else run.load_checkpoint(checkpoint)
    if state is None and checkpoint != 0:
        raise RunDirError(f"{run.path} has no checkpoint to evaluate yet")
    method = cls(config, RunContext(run.path, _llm_factory(config, run, llm), unsafe_local_exec))
    try:
        if state is not None:
            method.restore(state)
        iteration = 0 if state is None else state.iteration
        result = {"iteration": iteration, **method.evaluate(), "settings": settings or {}, "time": time.time()}
    finally:
        method.close()
    run.log_eval(result)
    return result


def report_run(name: str, out: str | Path, *, unsafe_local_exec: bool = False) -> Path:
    """Write a run's ``report.md`` again from its ``metrics.jsonl`` (after the report code changed, or for a
    run still in progress), with the method's last checkpoint restored for its sections."""
    cls = method_class(name)
    run = RunDir(out)
    recorded = run.recorded()
    if recorded["method"] != name:
        raise RunDirError(f"{run.path} is a {recorded['method']!r} run, not {name!r}")
    config = config_from_dict(cls.config_class, recorded["config"], str(run.path / "config.json"))
    method = cls(config, RunContext(run.path, _llm_factory(config, run, LLMChoice(replay=None)), unsafe_local_exec))
    try:
        state = run.load_checkpoint(None)
        if state is not None:
            method.restore(state)
        records = run.metrics()
        return write_report(run.path, name, config.as_dict(), records, method.report_sections(records))
    finally:
        method.close()
