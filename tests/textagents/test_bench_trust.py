"""A suite is data: running one never runs a program that its folder (or anything it names) supplies, and it
cannot send a secret anywhere it likes."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

import textagents
from textagents.bench.metadata import project_checkout, project_commit, run_metadata
from textagents.bench.suite import Suite


def git(folder: Path, *args: str) -> str:
    return subprocess.run(["git", *args], cwd=folder, capture_output=True, text=True, check=True).stdout.strip()


def repository_with_fsmonitor(folder: Path, marker: Path) -> None:
    """A repository whose config runs a program on ``git status`` (its file-system monitor hook)."""
    folder.mkdir()
    git(folder, "init", "-q")
    (folder / "suite.yaml").write_text("envs: []\n")
    git(folder, "add", "suite.yaml")
    git(folder, "-c", "user.name=a", "-c", "user.email=a@b", "commit", "-qm", "suite")
    hook = folder / "hook.sh"
    hook.write_text(f"#!/bin/sh\nmkdir {marker}\n")
    hook.chmod(0o755)
    git(folder, "config", "core.fsmonitor", str(hook))


def test_git_never_runs_in_the_suites_folder(tmp_path, monkeypatch):
    suites = tmp_path / "suites"
    marker = tmp_path / "hook_ran"
    repository_with_fsmonitor(suites, marker)
    git(suites, "status")  # the hook is live
    assert marker.is_dir()
    marker.rmdir()
    # textagents installed outside any checkout (a wheel in site-packages)
    monkeypatch.setattr(textagents, "__file__", str(tmp_path / "lib" / "site-packages" / "textagents" / "__init__.py"))
    suite = Suite(suites / "suite.yaml", "0" * 64, "s", "", 1, (), ())
    metadata = run_metadata(suite, backend="local", workers=1, address=None, previous=None)
    assert not marker.exists(), "git ran in the suite's folder"
    assert metadata["sessions"][-1]["git"] is None


def test_the_projects_own_commit_is_recorded():
    root = project_checkout()
    if root is None:
        pytest.skip("textagents is not run from a git checkout of the project")
    assert project_commit() == {
        "commit": git(root, "rev-parse", "HEAD"),
        "dirty": bool(git(root, "status", "--porcelain", "--untracked-files=no")),
    }


def test_git_runs_without_the_checkouts_hooks(tmp_path, monkeypatch):
    """Even in the project's checkout, a file-system monitor configured there does not run."""
    marker = tmp_path / "hook_ran"
    checkout = tmp_path / "checkout"
    repository_with_fsmonitor(checkout, marker)
    (checkout / "textagents" / "src" / "textagents").mkdir(parents=True)
    (checkout / "textagents" / "pyproject.toml").write_text("")
    monkeypatch.setattr(textagents, "__file__", str(checkout / "textagents" / "src" / "textagents" / "__init__.py"))
    assert project_checkout() == checkout
    assert project_commit() == {
        "commit": git(checkout, "-c", "core.fsmonitor=false", "rev-parse", "HEAD"),
        "dirty": False,
    }
    assert not marker.exists()
