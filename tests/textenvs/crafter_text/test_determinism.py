"""Same seed and actions => same trajectory in every process and every obs_mode (stock crafter is not)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

pytest.importorskip("crafter")

from .rollout_digest import rollout_digest

REPO_ROOT = Path(__file__).resolve().parents[3]


def test_2000_step_rollout_hashes_identically_in_five_processes():
    command = [sys.executable, "-m", "tests.textenvs.crafter_text.rollout_digest", "text"]
    runs = []
    for hash_seed in (0, 1, 2, 3, 4):
        env = {**os.environ, "PYTHONHASHSEED": str(hash_seed), "PYTHONPATH": str(REPO_ROOT)}
        runs.append(subprocess.Popen(command, cwd=REPO_ROOT, env=env, stdout=subprocess.PIPE, text=True))
    digests = {run.communicate()[0].strip() for run in runs}
    assert all(run.returncode == 0 for run in runs)
    assert len(digests) == 1, digests


def test_rendering_does_not_change_the_game():
    assert rollout_digest("text", steps=400) == rollout_digest("text+pixels", steps=400)
