"""tox splits the tests between two envs: each test runs in one of them, and a selection that matches none of
one env's tests passes there."""

from __future__ import annotations

import configparser
import shlex
import subprocess
import sys
from pathlib import Path

import pytest

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[1]


def test_each_test_folder_runs_in_exactly_one_tox_env():
    tox = configparser.ConfigParser(interpolation=None)
    tox.read(ROOT / "tox.ini")
    envs = [env.strip() for env in tox["tox"]["envlist"].split(",") if env.strip() != "lint"]
    runs = [word for env in envs for word in shlex.split(tox[f"testenv:{env}"]["commands"]) if word.startswith("tests")]
    folders = [str(p.relative_to(ROOT)) for p in (ROOT / "tests").iterdir() if p.is_dir() and p.name != "__pycache__"]
    assert sorted(runs) == sorted(folders), f"tox runs {runs}; the test folders are {folders}"


def _pytest_status(*args: str) -> int:
    command = [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", *args]
    return subprocess.run(command, cwd=ROOT, capture_output=True, text=True).returncode


@pytest.mark.parametrize(
    "selection", [("-k", "no_test_is_named_this"), ("-m", "slow and not slow"), ("--deselect", "tests/textenvs")]
)
def test_a_selection_that_matches_no_test_here_exits_0(selection):
    assert _pytest_status(str(HERE / "test_core.py"), *selection) == pytest.ExitCode.OK


def test_no_tests_without_a_selection_still_exits_5():
    assert _pytest_status(str(HERE / "corridor_env.py")) == pytest.ExitCode.NO_TESTS_COLLECTED
