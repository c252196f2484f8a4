"""What ``run.json`` records so that a leaderboard can be reproduced: the suite, every agent's settings (model,
temperature, max tokens), seeds, package versions, the git commit and the machine."""

from __future__ import annotations

import dataclasses
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


def git_commit(directory: Path) -> dict[str, Any] | None:
    """The commit checked out at ``directory`` and whether the work tree differs from it; None outside git."""

    def git(*args: str) -> str:
        return subprocess.run(
            ["git", *args], cwd=directory, capture_output=True, text=True, check=True, timeout=10
        ).stdout.strip()

    try:
        return {"commit": git("rev-parse", "HEAD"), "dirty": bool(git("status", "--porcelain", "--untracked-files=no"))}
    except (OSError, subprocess.SubprocessError):
        return None


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
        "git": git_commit(Path(textagents.__file__).parent) or git_commit(suite.path.parent),
    }
    return {
        "suite": {
            "name": suite.name,
            "description": suite.description,
            "path": str(suite.path),
            "sha256": suite.sha256,
            "max_steps": suite.max_steps,
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
