"""``method compare --backend ray``: each run of a comparison as a Ray task with its CPUs (its torch threads) and
GPUs, started or resumed in its folder under ``--out`` (which every worker must see: a shared filesystem), one
progress line per finished run. A failed run is named with its error and does not stop the others."""

from __future__ import annotations

import math
import os
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from textagents.methods.core.config import ConfigError
from textagents.ray_session import ray_session


@dataclass(frozen=True)
class RunResources:
    """What Ray reserves for each run: ``cpus`` (also the run's torch threads) and ``gpus`` (a fraction below 1
    shares a GPU between runs; 0 hides every GPU from the run, so its ``device: auto`` is the CPU)."""

    cpus: int = 1
    gpus: float = 0.0

    def __post_init__(self) -> None:
        if isinstance(self.cpus, bool) or not isinstance(self.cpus, int) or self.cpus < 1:
            raise ConfigError(f"--cpus-per-run must be a whole number >= 1, got {self.cpus!r}")
        if not math.isfinite(self.gpus) or self.gpus < 0 or (self.gpus > 1 and self.gpus != int(self.gpus)):
            raise ConfigError(f"--gpus-per-run must be 0, a fraction of 1 or a whole number, got {self.gpus!r}")

    def check_device(self, name: str, device: str) -> None:
        """``ConfigError`` when the run's ``device`` names a GPU its task does not reserve (Ray numbers a task's
        GPUs from 0)."""
        if not device.startswith("cuda"):
            return
        if self.gpus == 0:
            raise ConfigError(
                f"{name}: device {device!r} needs a GPU, and --gpus-per-run 0 gives its Ray task none: use "
                "--gpus-per-run 1 (or a fraction, to share one), or device auto/cpu to train on the CPU"
            )
        index = int(device.partition(":")[2] or 0)
        if index >= max(1, int(self.gpus)):
            raise ConfigError(
                f"{name}: device {device!r}: its Ray task sees only the GPU(s) it reserves (--gpus-per-run "
                f"{self.gpus:g}), numbered from cuda:0"
            )


def run_on_ray(
    method: str,
    runs: list[tuple[str, Path]],
    out: Path,
    resources: RunResources,
    address: str | None,
    options: dict[str, Any],
    progress: bool,
) -> dict[str, str]:
    """Run each ``(name, config path)`` of ``runs`` in ``out / name`` as a Ray task; ``options`` are
    ``run_one``'s (``llm``, ``unsafe_local_exec``). Returns the failed runs' errors, one line each, by name."""
    failed: dict[str, str] = {}
    if not runs:
        return failed
    with ray_session(address) as ray:
        remote = ray.remote(num_cpus=resources.cpus, num_gpus=resources.gpus, max_retries=2)(run_task)
        pending = {
            remote.remote(method, path, out / name, resources.cpus, resources.gpus == 0, options): name
            for name, path in runs
        }
        try:
            while pending:
                (ref,), _ = ray.wait(list(pending), num_returns=1)
                name = pending.pop(ref)
                try:
                    error = ray.get(ref)
                except ray.exceptions.RayError as crash:  # the worker died (out of memory, killed) after retries
                    error = f"{type(crash).__name__}: {_first_line(str(crash))}"
                if error is not None:
                    failed[name] = error
                if progress:
                    outcome = f"failed: {error}" if error is not None else "finished"
                    print(f"[{len(runs) - len(pending)}/{len(runs)}] {name} {outcome}", file=sys.stderr, flush=True)
        finally:
            for ref in pending:
                ray.cancel(ref)
    return failed


def run_task(
    method: str, path: Path, run_dir: Path, threads: int, hide_gpus: bool, options: dict[str, Any]
) -> str | None:
    """One run, in a Ray worker, on ``threads`` torch threads: None when it finished, else its error in one
    line. ``hide_gpus``: the task reserved no GPU (Ray leaves such a task every GPU of its node visible)."""
    from textagents.methods.core.compare import run_one
    from textagents.sb3.threads import training_threads

    if hide_gpus:
        os.environ["CUDA_VISIBLE_DEVICES"] = ""  # before torch first looks for CUDA in this worker
    try:
        with training_threads(threads):
            run_one(method, path, run_dir, progress=False, **options)
    except Exception as error:  # the run's own failure: reported by name, the other runs go on
        return f"{type(error).__name__}: {_first_line(str(error))}"
    return None


def _first_line(text: str) -> str:
    return text.strip().splitlines()[0] if text.strip() else "(no message)"
