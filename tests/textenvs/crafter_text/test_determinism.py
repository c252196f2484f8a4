"""Same seed and actions => same trajectory in every process and every obs_mode.

Stock crafter fails this: with its chunks balanced in memory order, three processes gave three different
digests of this rollout.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

pytest.importorskip("crafter")

REPO_ROOT = Path(__file__).resolve().parents[3]


def test_2000_step_rollout_hashes_identically_in_five_processes_and_with_pixels():
    runs = []
    for hash_seed, obs_mode in enumerate(("text", "text", "text", "text", "text", "text+pixels")):
        command = [sys.executable, "-m", "tests.textenvs.crafter_text.rollout_digest", obs_mode]
        env = {**os.environ, "PYTHONHASHSEED": str(hash_seed), "PYTHONPATH": str(REPO_ROOT)}
        runs.append(subprocess.Popen(command, cwd=REPO_ROOT, env=env, stdout=subprocess.PIPE, text=True))
    digests = [run.communicate()[0].strip() for run in runs]
    assert all(run.returncode == 0 for run in runs)
    assert len(digests[0]) == 64 and len(set(digests)) == 1, digests
