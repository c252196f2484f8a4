"""``textagents bench run``: every (agent, env, seed) episode of a suite, on local worker processes or a Ray
cluster, each finished episode appended to ``episodes.jsonl`` at once; a rerun resumes where it stopped."""

from __future__ import annotations

import concurrent.futures
import json
import multiprocessing
import os
import sys
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

from tqdm import tqdm

from textagents.bench.metadata import run_metadata
from textagents.bench.store import (
    EPISODES_FILE,
    LOCK_FILE,
    RUN_FILE,
    EpisodeLog,
    run_lock,
    to_json,
    trajectory_path,
    write_json_atomic,
)
from textagents.bench.suite import EpisodeTask, Suite
from textagents.bench.worker import play_task
from textagents.ray_session import ray_session

BACKENDS = ("local", "ray")


def _exit_with_parent(parent: int) -> None:
    """Pool initializer: a worker whose runner was killed (SIGKILL skips every cleanup) exits too."""

    def watch() -> None:
        while os.getppid() == parent:
            time.sleep(1.0)
        os._exit(1)

    threading.Thread(target=watch, daemon=True).start()


def _local(tasks: list[EpisodeTask], workers: int, keep_trajectory: bool) -> Iterator[dict[str, Any]]:
    if workers == 1:
        for task in tasks:
            yield play_task(task, keep_trajectory)
        return
    # spawn: workers start clean (no forked torch/numba state) and behave as Ray's do
    context = multiprocessing.get_context("spawn")
    pool = concurrent.futures.ProcessPoolExecutor(
        workers, mp_context=context, initializer=_exit_with_parent, initargs=(os.getpid(),)
    )
    with pool:
        futures = [pool.submit(play_task, task, keep_trajectory) for task in tasks]
        try:
            for future in concurrent.futures.as_completed(futures):
                yield future.result()
        finally:
            for future in futures:
                future.cancel()


def _ray(
    tasks: list[EpisodeTask], workers: int, keep_trajectory: bool, address: str | None
) -> Iterator[dict[str, Any]]:
    with ray_session(address, num_cpus=workers) as ray:
        remote = ray.remote(num_cpus=1, max_retries=2)(play_task)
        pending = [remote.remote(task, keep_trajectory) for task in tasks]
        try:
            while pending:
                done, pending = ray.wait(pending, num_returns=1)
                yield ray.get(done[0])
        finally:
            for ref in pending:
                ray.cancel(ref)


def _check_out(out: Path) -> None:
    """``FileExistsError`` when ``out`` holds something besides a bench run (a method run, say): a run goes
    into a new or empty folder, or resumes the run already there."""
    if not out.is_dir() or (out / RUN_FILE).is_file():
        return
    found = sorted(p.name for p in out.iterdir() if p.name != LOCK_FILE)  # a lock alone: a run killed at once
    if found:
        listed = ", ".join(found[:5]) + (", ..." if len(found) > 5 else "")
        raise FileExistsError(
            f"{out} is not empty and holds no bench run (no {RUN_FILE}; it holds {listed}): choose a new or empty "
            "--out, or the folder of an earlier run of this suite to resume it"
        )


def _previous_run(out: Path, suite: Suite) -> dict[str, Any] | None:
    """The run.json of a run in ``out`` that this suite may resume (None when there is none)."""
    run_file = out / RUN_FILE
    if not run_file.is_file():
        return None
    previous = json.loads(run_file.read_text())
    if previous.get("suite", {}).get("sha256") != suite.sha256:
        raise ValueError(
            f"{out} holds a run of another suite (or of an edited {suite.path.name}: sha256 "
            f"{previous.get('suite', {}).get('sha256')} there, {suite.sha256} now); choose another --out"
        )
    return previous


def _check_same_agents(out: Path, previous: dict[str, Any], metadata: dict[str, Any]) -> None:
    """Refuse to mix episodes of differently configured agents (another --model, say) in one run."""
    now = json.loads(json.dumps(metadata["agents"], default=to_json))
    if previous.get("agents") != now:
        changed = [a["name"] for a in now if a not in previous.get("agents", [])]
        raise ValueError(
            f"{out} holds a run whose agents were configured otherwise ({', '.join(changed) or 'agents removed'}: "
            f"see its {RUN_FILE}); resume with the same options (--model, --base-url) or choose another --out"
        )


def _write_trajectory(out: Path, record: dict[str, Any]) -> None:
    path = trajectory_path(out, record["agent"], record["env"], record["seed"])
    path.parent.mkdir(parents=True, exist_ok=True)
    write_json_atomic(path, record.pop("trajectory"))


def run_suite(
    suite: Suite,
    out: str | Path,
    *,
    workers: int = 1,
    backend: str = "local",
    address: str | None = None,
    trajectories: bool = False,
    progress: bool = True,
    on_episode: Callable[[dict[str, Any]], None] | None = None,
) -> dict[str, Any]:
    """Play every episode of ``suite`` not yet in ``out/episodes.jsonl``; return counts of what was done.
    The run holds the lock of ``out`` throughout: a second run on the same folder gets ``RunLockedError``."""
    if backend not in BACKENDS:
        raise ValueError(f"unknown backend {backend!r}; valid: {', '.join(BACKENDS)}")
    if workers < 1:
        raise ValueError(f"workers must be >= 1, got {workers}")
    out = Path(out)
    _check_out(out)
    out.mkdir(parents=True, exist_ok=True)
    with run_lock(out):
        previous = _previous_run(out, suite)
        metadata = run_metadata(suite, backend=backend, workers=workers, address=address, previous=previous)
        if previous is not None:
            _check_same_agents(out, previous, metadata)
        write_json_atomic(out / RUN_FILE, metadata)

        tasks = suite.tasks()
        with EpisodeLog(out / EPISODES_FILE) as log:
            todo = [t for t in tasks if t.key not in log]
            if log.duplicates:
                repeated = f"{log.duplicates} repeated episode lines in {EPISODES_FILE}"
                print(f"notice: {repeated} are ignored", file=sys.stderr)
            if backend == "local":
                results = _local(todo, workers, trajectories)
            else:
                results = _ray(todo, workers, trajectories, address)
            bar = tqdm(total=len(tasks), initial=len(tasks) - len(todo), unit="episode", disable=not progress)
            try:
                for record in results:
                    if trajectories:
                        _write_trajectory(out, record)
                    log.append(record)
                    bar.set_postfix_str(f"{record['agent']} on {record['env']}", refresh=False)
                    bar.update()
                    if on_episode is not None:
                        on_episode(record)
            finally:
                bar.close()
            played = len(log) - (len(tasks) - len(todo))
        metadata["finished"] = len(log) == len(tasks)
        write_json_atomic(out / RUN_FILE, metadata)
        return {"episodes": len(tasks), "played_now": played, "resumed_from": len(tasks) - len(todo)}
