"""A method's run directory: what it holds, and the rules that keep it whole through kills and resumes.

```
config.json        the resolved config, the method, package versions, git commit, machine
metrics.jsonl      one line per training iteration ("kind": "train") or evaluation ("kind": "eval")
checkpoints/       iter_000012/ {state.json, tensors.safetensors}: written to a temporary folder, renamed
tensorboard/       the same metrics for TensorBoard
llm_calls.jsonl    every LLM request and answer (textagents.llm.record), replayable
evals.jsonl        ``textagents method eval`` results
report.md, *.png   written at the end
```

A run is created only in an empty (or new) folder. ``resume`` needs the same config (it names the keys that
differ otherwise) and a checkpoint; it drops the metrics lines logged after that checkpoint, so no iteration
is counted twice, and the run continues from the checkpoint's iteration. Only ``iterations`` may change: a
larger value extends the run (a finished one too: training goes on from its last checkpoint, and
``config.json`` records the new length under ``extended``), a value below the checkpoint's is refused.
"""

from __future__ import annotations

import json
import os
import shutil
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from textagents.bench.metadata import machine, package_versions, project_commit
from textagents.bench.store import to_json, write_json_atomic, write_text_atomic
from textagents.jsonl import append_records, read_jsonl

CONFIG_FILE = "config.json"
METRICS_FILE = "metrics.jsonl"
EVALS_FILE = "evals.jsonl"
LLM_CALLS_FILE = "llm_calls.jsonl"
CHECKPOINTS = "checkpoints"
STATE_FILE = "state.json"
TENSORS_FILE = "tensors.safetensors"
EXTENDABLE = "iterations"  # the one setting a resume may change (upwards: see RunDir.resume)


class RunDirError(RuntimeError):
    """A run directory that cannot be used as asked (not empty, nothing to resume, another config)."""


@dataclass
class Checkpoint:
    """What a method saves: JSON-able ``state`` (counters, RNG states, tables) and named ``tensors``."""

    iteration: int
    state: dict[str, Any]
    tensors: dict[str, Any] = field(default_factory=dict)


class RunDir:
    def __init__(self, path: str | os.PathLike[str]):
        self.path = Path(path)

    @property
    def metrics_path(self) -> Path:
        return self.path / METRICS_FILE

    @property
    def llm_calls_path(self) -> Path:
        return self.path / LLM_CALLS_FILE

    # ------------------------------------------------------------------ creating and resuming
    def create(self, method: str, config: dict[str, Any]) -> None:
        if self.path.exists() and any(self.path.iterdir()):
            raise RunDirError(
                f"{self.path} is not empty: pass --resume to continue the run there, or choose another --out"
            )
        self.path.mkdir(parents=True, exist_ok=True)
        write_json_atomic(
            self.path / CONFIG_FILE,
            {
                "method": method,
                "config": config,
                "created": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
                "versions": package_versions(),
                "git": project_commit(),
                "machine": machine(),
            },
        )

    def recorded(self) -> dict[str, Any]:
        path = self.path / CONFIG_FILE
        if not path.is_file():
            raise RunDirError(f"{self.path} holds no run ({CONFIG_FILE} is missing): nothing to resume or evaluate")
        return json.loads(path.read_text())

    def check_same(self, method: str, config: dict[str, Any]) -> None:
        recorded = self.recorded()
        if recorded["method"] != method:
            raise RunDirError(f"{self.path} is a {recorded['method']!r} run, not {method!r}")
        old = recorded["config"]
        config = json.loads(json.dumps(config, default=to_json))  # as recorded: tuples are lists in JSON
        differ = sorted(k for k in set(old) | set(config) if k != EXTENDABLE and old.get(k) != config.get(k))
        if differ:
            changes = ", ".join(f"{k}: {old.get(k)!r} -> {config.get(k)!r}" for k in differ)
            raise RunDirError(f"{self.path} was run with another config ({changes}); resume with the same one")

    def resume(self, method: str, config: dict[str, Any]) -> Checkpoint:
        """The last checkpoint of a run with this config; metrics logged after it are dropped."""
        self.check_same(method, config)
        checkpoint = self.load_checkpoint()
        if checkpoint is None:
            raise RunDirError(f"{self.path} has no checkpoint yet: nothing to resume; start it again in a new folder")
        kept = [r for r in self.metrics() if r.get("iteration", 0) <= checkpoint.iteration]
        write_text_atomic(self.metrics_path, "".join(json.dumps(r, default=to_json) + "\n" for r in kept))
        self._record_length(config.get(EXTENDABLE), checkpoint.iteration)
        return checkpoint

    def _record_length(self, iterations: int | None, reached: int) -> None:
        recorded = self.recorded()
        old = recorded["config"].get(EXTENDABLE)
        if iterations is None or iterations == old:
            return
        if iterations < reached:
            raise RunDirError(
                f"{self.path} has reached iteration {reached}: iterations={iterations} would shorten it; "
                f"pass iterations >= {reached}"
            )
        recorded["config"][EXTENDABLE] = iterations
        extension = {"from": old, "to": iterations, "at_iteration": reached}
        recorded.setdefault("extended", []).append({**extension, "time": time.strftime("%Y-%m-%dT%H:%M:%S%z")})
        write_json_atomic(self.path / CONFIG_FILE, recorded)

    # ------------------------------------------------------------------ metrics
    def log(self, record: dict[str, Any]) -> None:
        append_records(self.metrics_path, [record], default=to_json)

    def metrics(self) -> list[dict[str, Any]]:
        return read_jsonl(self.metrics_path)[0] if self.metrics_path.is_file() else []

    def log_eval(self, record: dict[str, Any]) -> None:
        append_records(self.path / EVALS_FILE, [record], default=to_json)

    # ------------------------------------------------------------------ checkpoints
    def checkpoints(self) -> list[Path]:
        folder = self.path / CHECKPOINTS
        return sorted(folder.glob("iter_[0-9]*")) if folder.is_dir() else []

    def save_checkpoint(self, checkpoint: Checkpoint, keep: int) -> Path:
        folder = self.path / CHECKPOINTS
        folder.mkdir(parents=True, exist_ok=True)
        final = folder / f"iter_{checkpoint.iteration:06d}"
        staging = Path(tempfile.mkdtemp(dir=folder, prefix=".staging-"))
        try:
            state = {"iteration": checkpoint.iteration, "state": checkpoint.state}
            (staging / STATE_FILE).write_text(json.dumps(state, default=to_json))
            if checkpoint.tensors:
                from safetensors.torch import save_file

                save_file({k: v.contiguous() for k, v in checkpoint.tensors.items()}, staging / TENSORS_FILE)
            for path in staging.iterdir():
                path.chmod(0o644)  # safetensors writes 0600, which would hide the checkpoint from the rest of a team
                with path.open("rb") as handle:
                    os.fsync(handle.fileno())
            staging.chmod(0o755)
            if final.exists():
                shutil.rmtree(final)
            os.replace(staging, final)
        finally:
            shutil.rmtree(staging, ignore_errors=True)
        for old in self.checkpoints()[:-keep]:
            shutil.rmtree(old)
        return final

    def load_checkpoint(self, iteration: int | None = None) -> Checkpoint | None:
        """The checkpoint of ``iteration`` (default: the last one); None when there is none."""
        found = self.checkpoints()
        if iteration is not None:
            found = [p for p in found if p.name == f"iter_{iteration:06d}"]
            if not found:
                have = ", ".join(str(int(p.name.split("_")[1])) for p in self.checkpoints()) or "none"
                raise RunDirError(f"{self.path} has no checkpoint of iteration {iteration}; it has: {have}")
        if not found:
            return None
        folder = found[-1]
        state = json.loads((folder / STATE_FILE).read_text())
        tensors = {}
        if (folder / TENSORS_FILE).is_file():
            from safetensors.torch import load_file

            tensors = load_file(folder / TENSORS_FILE)
        return Checkpoint(int(state["iteration"]), state["state"], tensors)
