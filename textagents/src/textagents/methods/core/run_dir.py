"""A method's run directory: what it holds, and the rules that keep it whole through kills and resumes.

```
config.json        the resolved config, the method, package versions, the code state (git commit, dirty flag,
                   sha256 of the uncommitted diff) at the start and at each resume, machine
metrics.jsonl      one line per training iteration ("kind": "train") or evaluation ("kind": "eval")
checkpoints/       iter_000012/ {state.json, tensors.safetensors}: written to a temporary folder, renamed
tensorboard/       the same metrics for TensorBoard
llm_calls.jsonl    every LLM request and answer (textagents.llm.record), replayable
failed_starts/     llm_calls-<time>.jsonl: the calls of a start that failed before its first checkpoint
evals.jsonl        ``textagents method eval`` results
report.md, *.png   written at the end
```

A run is created only in an empty (or new) folder; ``failed_starts/`` (below) does not count. A start that
fails before its first checkpoint is undone (``undo_start``): every entry the run added to the folder is
removed (the folder too when the run made it), so the same command can run again, except the LLM calls it
recorded (they may have cost money), which are moved to ``failed_starts/llm_calls-<time>.jsonl``.
``resume`` needs the same config (it names the keys that differ otherwise); it drops the metrics lines
logged after the last checkpoint, so no iteration is counted twice, and the run continues from the
checkpoint's iteration, or from the start, with a ``RunDirWarning``, when a kill left no checkpoint. Only
``iterations`` may change: a larger value extends the run (a finished one too: training goes on from its
last checkpoint, and ``config.json`` records the new length under ``extended``), a value below the
checkpoint's is refused.

A damaged folder is resumed as far as it can be, never silently (a ``RunDirWarning`` says what was skipped):
a checkpoint whose ``state.json`` or tensors file is missing or does not load is skipped for the newest
intact one (an error naming the folder and each file when none is intact); a metrics line that does not
parse is dropped, named by file and line number with the record it followed. That line is a warning, not a
refusal: metrics are a log of the training and the checkpoint alone decides where it goes on, so the lost
line changes nothing that follows, while a refusal would leave a run that only a hand edit could continue.
A last line cut short (a kill while it was written) is the expected case of the same.
"""

from __future__ import annotations

import json
import os
import shutil
import tempfile
import time
import warnings
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
FAILED_STARTS = "failed_starts"  # the LLM calls of starts that failed before their first checkpoint
STATE_FILE = "state.json"
TENSORS_FILE = "tensors.safetensors"
EXTENDABLE = "iterations"  # a setting a resume may change (upwards: see RunDir.resume)
RELOCATABLE = "device"  # a resume may run on another device (a run started on the CPU goes on on a GPU)
SERVING = "max_concurrency"  # a resume may send a server more or fewer requests at once


class RunDirError(RuntimeError):
    """A run directory that cannot be used as asked (not empty, nothing to resume, another config)."""


class DamagedCheckpointError(RunDirError):
    """A checkpoint folder whose state or tensors file is missing or does not load."""


class RunDirWarning(UserWarning):
    """Part of a run directory skipped because it is damaged: an unreadable metrics line, a checkpoint."""


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
    def entries(self) -> set[str] | None:
        """The names in the folder; None when it does not exist."""
        return {p.name for p in self.path.iterdir()} if self.path.is_dir() else None

    def create(self, method: str, config: dict[str, Any]) -> None:
        if (self.entries() or set()) - {FAILED_STARTS}:
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
        try:
            return json.loads(path.read_bytes())
        except ValueError as error:
            raise RunDirError(f"{path} is not JSON ({error}): the run's record is damaged") from None

    def check_same(self, method: str, config: dict[str, Any]) -> None:
        recorded = self.recorded()
        if recorded["method"] != method:
            raise RunDirError(f"{self.path} is a {recorded['method']!r} run, not {method!r}")
        old = recorded["config"]
        config = json.loads(json.dumps(config, default=to_json))  # as recorded: tuples are lists in JSON
        free = (EXTENDABLE, RELOCATABLE, SERVING)
        differ = sorted(k for k in set(old) | set(config) if k not in free and old.get(k) != config.get(k))
        if differ:
            changes = ", ".join(f"{k}: {old.get(k)!r} -> {config.get(k)!r}" for k in differ)
            raise RunDirError(f"{self.path} was run with another config ({changes}); resume with the same one")

    def resume(self, method: str, config: dict[str, Any]) -> Checkpoint | None:
        """The last checkpoint of a run with this config (None, with a warning, when it has none: the run
        starts again from iteration 0); metrics logged after it are dropped."""
        self.check_same(method, config)
        checkpoint = self.load_checkpoint()
        reached = 0 if checkpoint is None else checkpoint.iteration
        if checkpoint is None:
            message = f"{self.path} has no checkpoint yet (stopped before the first): it starts again from iteration 0"
            warnings.warn(message, RunDirWarning, stacklevel=3)
        kept = self._metrics_up_to(reached)
        write_text_atomic(self.metrics_path, "".join(json.dumps(r, default=to_json) + "\n" for r in kept))
        self._record_length(config.get(EXTENDABLE), reached)
        self._record_resume(reached)
        return checkpoint

    def undo_start(self, before: set[str] | None, calls: Path) -> Path | None:
        """Undo a start that failed before its first checkpoint: remove each entry of the folder that was not
        in ``before`` (its entries when the run began; None: it did not exist, and then the folder goes too
        when nothing is kept), except the LLM calls recorded to ``calls``, moved to ``failed_starts/`` when
        they are in the folder. Where the calls went, or None."""
        added = (self.entries() or set()) - (before or set())
        kept = None
        in_folder = calls.resolve().parent == self.path.resolve() and calls.name in added
        if in_folder and calls.stat().st_size > 0:
            kept = _unused_name(self.path / FAILED_STARTS, f"llm_calls-{time.strftime('%Y%m%dT%H%M%S')}", ".jsonl")
            kept.parent.mkdir(exist_ok=True)
            os.replace(calls, kept)
            added -= {calls.name, FAILED_STARTS}
        for name in added:
            path = self.path / name
            if path.is_dir() and not path.is_symlink():
                shutil.rmtree(path)
            else:
                path.unlink()
        if before is None and not any(self.path.iterdir()):
            self.path.rmdir()
        return kept

    def _record_resume(self, reached: int) -> None:
        """The code state a resume continues at: a run trained partly at other code is seen by ``compare``."""
        recorded = self.recorded()
        resume = {
            "at_iteration": reached,
            "git": project_commit(),
            "versions": package_versions(),
            "time": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
        }
        recorded.setdefault("resumed", []).append(resume)
        write_json_atomic(self.path / CONFIG_FILE, recorded)

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

    def _metrics_up_to(self, iteration: int) -> list[dict[str, Any]]:
        """The metrics records of iterations up to ``iteration``; each line that does not parse is named in a
        ``RunDirWarning`` with what it costs (see the module docstring)."""
        if not self.metrics_path.is_file():
            return []
        data = self.metrics_path.read_bytes()
        lines = data.removesuffix(b"\n").split(b"\n") if data else []
        records = [_parse_record(line) for line in lines]
        for index in (i for i, record in enumerate(records) if record is None):
            before = next((r for r in reversed(records[:index]) if r is not None), None)
            after = next((r for r in records[index + 1 :] if r is not None), None)
            cut_short = index == len(lines) - 1 and not data.endswith(b"\n")
            what = ", the last line, is cut short (a kill while it was written)" if cut_short else " does not parse"
            message = f"{self.metrics_path}:{index + 1}{what} and is dropped: {_cost(before, after, iteration)}"
            warnings.warn(f"{message} ({lines[index][:80]!r})", RunDirWarning, stacklevel=3)
        return [r for r in records if r is not None and r.get("iteration", 0) <= iteration]

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
            names = sorted(checkpoint.tensors)  # checked on load: a tensors file lost or replaced is seen
            state = {"iteration": checkpoint.iteration, "state": checkpoint.state, "tensors": names}
            (staging / STATE_FILE).write_text(json.dumps(state, default=to_json))
            if checkpoint.tensors:
                from safetensors.torch import save_file

                tensors = {k: v.detach().cpu().contiguous() for k, v in checkpoint.tensors.items()}
                save_file(tensors, staging / TENSORS_FILE)
            for path in staging.iterdir():
                path.chmod(0o644)  # safetensors writes 0600, which would hide the checkpoint from the rest of a team
                with path.open("rb") as handle:
                    os.fsync(handle.fileno())
            staging.chmod(0o755)
            if final.exists():
                _remove_checkpoint(final)
            os.replace(staging, final)
        finally:
            shutil.rmtree(staging, ignore_errors=True)
        for old in self.checkpoints()[:-keep]:
            _remove_checkpoint(old)
        return final

    def load_checkpoint(self, iteration: int | None = None) -> Checkpoint | None:
        """The checkpoint of ``iteration`` (``DamagedCheckpointError`` when it is damaged), by default the
        newest intact one (a ``RunDirWarning`` for each damaged one skipped); None when there is none."""
        found = self.checkpoints()
        if iteration is None:
            return self._newest_intact(found) if found else None
        folder = self.path / CHECKPOINTS / f"iter_{iteration:06d}"
        if folder not in found:
            have = ", ".join(str(int(p.name.split("_")[1])) for p in found) or "none"
            raise RunDirError(f"{self.path} has no checkpoint of iteration {iteration}; it has: {have}")
        return _read_checkpoint(folder)

    def _newest_intact(self, folders: list[Path]) -> Checkpoint:
        damaged: list[str] = []
        for folder in reversed(folders):
            try:
                checkpoint = _read_checkpoint(folder)
            except DamagedCheckpointError as error:
                damaged.append(str(error))
                continue
            for reason in damaged:
                warnings.warn(f"{reason}; skipped, using iteration {checkpoint.iteration}", RunDirWarning, stacklevel=3)
            return checkpoint
        raise RunDirError(
            f"{self.path} has no intact checkpoint: {'; '.join(damaged)}; restore one from a copy, or start the "
            "run again in a new folder"
        )


def _unused_name(folder: Path, stem: str, suffix: str) -> Path:
    """``folder/stem+suffix``, or with ``-2``, ``-3``, ... before the suffix when that is taken."""
    path, number = folder / f"{stem}{suffix}", 1
    while path.exists():
        number += 1
        path = folder / f"{stem}-{number}{suffix}"
    return path


def _parse_record(line: bytes) -> dict[str, Any] | None:
    """The JSON object on ``line``; None when it is not one."""
    try:
        record = json.loads(line)
    except ValueError:
        return None
    return record if isinstance(record, dict) else None


def _cost(before: dict[str, Any] | None, after: dict[str, Any] | None, checkpoint: int) -> str:
    """What an unreadable metrics line between the records ``before`` and ``after`` costs a resume from
    ``checkpoint``: its record, unless it came after the checkpoint (then its iteration is trained again)."""
    if before is not None and before.get("iteration", 0) > checkpoint:
        return f"it came after the checkpoint (iteration {checkpoint}), whose later iterations are trained again"
    lost = f"the record logged after {_describe(before)}" if before else "the file's first record"
    if after is not None and after.get("iteration", 0) <= checkpoint:
        return f"{lost} is lost"
    return f"{lost} is lost if it was of iteration {checkpoint} or before (later ones are trained again)"


def _describe(record: dict[str, Any]) -> str:
    return f"{record.get('kind', 'record')} iteration {record.get('iteration')}"


def _read_checkpoint(folder: Path) -> Checkpoint:
    """The checkpoint saved in ``folder``; ``DamagedCheckpointError`` naming the file missing or unreadable."""
    path = folder / STATE_FILE
    try:
        saved = json.loads(path.read_bytes())
        iteration, state, names = int(saved["iteration"]), saved["state"], saved.get("tensors")
        if not isinstance(state, dict) or not isinstance(names, list | None):
            raise TypeError("its state is not an object, or its tensor names not a list")
    except FileNotFoundError:
        raise DamagedCheckpointError(f"{path} is missing") from None
    except (ValueError, KeyError, TypeError, AttributeError) as error:
        raise DamagedCheckpointError(f"{path} is not a checkpoint's state ({type(error).__name__}: {error})") from None
    return Checkpoint(iteration, state, _read_tensors(folder / TENSORS_FILE, names))


def _read_tensors(path: Path, names: list[str] | None) -> dict[str, Any]:
    """The tensors saved at ``path`` (safetensors: loading runs no code), which must be ``names`` when the
    state lists them (checkpoints from before it did are taken as they are)."""
    if not path.is_file():
        if names:
            raise DamagedCheckpointError(f"{path} is missing (state.json names {len(names)} tensors)")
        return {}
    from safetensors import SafetensorError
    from safetensors.torch import load_file

    try:
        tensors = load_file(path)
    except (SafetensorError, OSError) as error:
        raise DamagedCheckpointError(f"{path} does not load ({error})") from None
    if names is not None and sorted(tensors) != sorted(names):
        unexpected = sorted(set(tensors) ^ set(names))
        raise DamagedCheckpointError(
            f"{path} does not hold the tensors state.json names ({len(unexpected)} differ, e.g. {unexpected[0]!r:.80})"
        )
    return tensors


def _remove_checkpoint(folder: Path) -> None:
    """Delete a checkpoint folder after moving it out of the checkpoint names in one rename: a kill while
    deleting cannot leave part of it to be taken for a checkpoint."""
    trash = Path(tempfile.mkdtemp(dir=folder.parent, prefix=".removing-"))
    os.replace(folder, trash / folder.name)
    shutil.rmtree(trash)
