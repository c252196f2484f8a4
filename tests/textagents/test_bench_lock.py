"""One run writes a run folder at a time: a second ``bench run`` on the same ``--out`` is refused at once
(two runs appending to one ``episodes.jsonl`` recorded every episode twice)."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from tests.textenvs.corridor_env import CORRIDOR_ID
from textagents.bench import load_suite, run_suite
from textagents.bench.store import EPISODES_FILE, LOCK_FILE, RunLockedError, run_lock
from textagents.cli import main


@pytest.fixture
def suite(tmp_path):
    path = tmp_path / "corridor.yaml"
    path.write_text(f"envs: [{{id: {CORRIDOR_ID}, seeds: [0, 1, 2]}}]\nagents: [{{name: random, kind: random}}]\n")
    return load_suite(path)


def test_a_run_on_a_folder_another_run_writes_is_refused(tmp_path, suite):
    out = tmp_path / "run"
    out.mkdir()
    with run_lock(out):
        with pytest.raises(RunLockedError, match=rf"is being written by another run \(process {os.getpid()}\)"):
            run_suite(suite, out, progress=False)
        assert not (out / EPISODES_FILE).exists()
    assert run_suite(suite, out, progress=False)["played_now"] == 3
    lines = (out / EPISODES_FILE).read_text().splitlines()
    assert len(lines) == len({(r["agent"], r["env"], r["seed"]) for r in map(json.loads, lines)}) == 3


def test_the_lock_is_released_when_its_process_is_killed(tmp_path, suite):
    out = tmp_path / "run"
    out.mkdir()
    holder = subprocess.Popen(
        [
            sys.executable,
            "-c",
            "import sys, time; from pathlib import Path; from textagents.bench.store import run_lock\n"
            "with run_lock(Path(sys.argv[1])):\n    print('locked', flush=True); time.sleep(600)",
            str(out),
        ],
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert holder.stdout.readline() == "locked\n"
        with pytest.raises(RunLockedError, match=f"process {holder.pid}"):
            run_suite(suite, out, progress=False)
    finally:
        holder.kill()
        holder.wait()
    assert (out / LOCK_FILE).read_text() == f"{holder.pid}\n"  # left behind by the killed run: no matter
    assert run_suite(suite, out, progress=False)["played_now"] == 3


def test_the_command_line_says_so_in_one_line(tmp_path, suite, capsys):
    out = tmp_path / "run"
    out.mkdir()
    with run_lock(out):
        assert main(["bench", "run", str(suite.path), "--out", str(out), "--no-progress"]) == 2
    err = capsys.readouterr().err.splitlines()
    assert err[-1] == (
        f"error: {out} is being written by another run (process {os.getpid()}): wait for it to end, or choose "
        "another --out (two runs appending to one folder would record episodes twice)"
    )
