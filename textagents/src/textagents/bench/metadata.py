"""What ``run.json`` records so that a leaderboard can be reproduced: the suite, every agent's settings (model,
temperature, max tokens), seeds, package versions, the project's git commit and the machine."""

from __future__ import annotations

import dataclasses
import hashlib
import importlib.metadata
import os
import platform
import subprocess
import time
from pathlib import Path
from typing import Any

import textagents
from textagents.bench.suite import Suite

PACKAGES = (
    "textenvs",
    "textagents",
    "gymnasium",
    "numpy",
    "minigrid",
    "crafter",
    "numba",
    "pettingzoo",
    "torch",
    "transformers",
    "stable-baselines3",
    "openai",
    "ray",
)


def package_versions() -> dict[str, str | None]:
    versions: dict[str, str | None] = {}
    for name in PACKAGES:
        try:
            versions[name] = importlib.metadata.version(name)
        except importlib.metadata.PackageNotFoundError:
            versions[name] = None
    return versions


def project_checkout() -> Path | None:
    """The git checkout of this project that textagents runs from (``<root>/textagents/src/textagents``), or
    None when it runs from anywhere else (an installed wheel): found by its layout, never by git's upward
    search, which could land in whatever repository encloses an installation."""
    root = Path(textagents.__file__).resolve().parents[3]
    if (root / ".git").exists() and (root / "textagents" / "pyproject.toml").is_file():
        return root
    return None


def project_commit() -> dict[str, Any] | None:
    """The commit of the project's own checkout, whether its tracked files differ from it and, when they do,
    the sha256 of ``git diff HEAD`` (so runs made at the same uncommitted changes can be told apart from runs
    made at other ones); None outside a checkout.

    Git runs in that checkout only (a suite's or a run's folder may be a repository whose config runs
    programs, e.g. ``core.fsmonitor``), told where the repository is (no discovery), with hooks and the
    file-system monitor off and without taking the index lock.
    """
    root = project_checkout()
    if root is None:
        return None
    environment = {**os.environ, "GIT_DIR": str(root / ".git"), "GIT_WORK_TREE": str(root), "GIT_OPTIONAL_LOCKS": "0"}
    safe = ("-c", "core.fsmonitor=false", "-c", f"core.hooksPath={os.devnull}")

    def git(*args: str) -> bytes:
        return subprocess.run(
            ["git", *safe, *args], cwd=root, env=environment, capture_output=True, check=True, timeout=30
        ).stdout

    try:
        commit = git("rev-parse", "HEAD").decode().strip()
        dirty = bool(git("status", "--porcelain", "--untracked-files=no").strip())
        # no external diff or textconv programs (a repository's config could name any), the same bytes everywhere
        diff = git("diff", "HEAD", "--no-ext-diff", "--no-textconv", "--no-color", "--binary") if dirty else None
    except (OSError, subprocess.SubprocessError):
        return None
    return {"commit": commit, "dirty": dirty, "diff_sha256": hashlib.sha256(diff).hexdigest() if dirty else None}


def machine() -> dict[str, Any]:
    return {
        "hostname": platform.node(),
        "platform": platform.platform(),
        "python": platform.python_version(),
        "processor": platform.machine(),
        "cpus": os.cpu_count(),
    }


def run_metadata(
    suite: Suite, *, backend: str, workers: int, address: str | None, previous: dict[str, Any] | None
) -> dict[str, Any]:
    """``run.json`` for a (re)started run; ``previous`` is the run.json being resumed, whose sessions are kept."""
    session = {
        "started": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
        "backend": backend,
        "workers": workers,
        "address": address,
        "machine": machine(),
        "packages": package_versions(),
        "git": project_commit(),
    }
    return {
        "suite": {
            "name": suite.name,
            "description": suite.description,
            "path": str(suite.path),
            "sha256": suite.sha256,
            "max_steps": suite.max_steps,
            "prices": suite.prices,
        },
        "envs": [dataclasses.asdict(env) for env in suite.envs],
        "agents": [
            {"name": a.name, "kind": a.kind, "options": dataclasses.asdict(a.options), "envs": a.envs}
            for a in suite.agents
        ],
        "skipped_agents": [{"name": name, "reason": reason} for name, reason in suite.skipped],
        "sessions": [*(previous or {}).get("sessions", []), session],
        "finished": False,
    }
