"""The ``textenvs`` command line."""

from __future__ import annotations

import io
import os
import subprocess
import sys

import pytest

import textenvs
from textenvs.cli import format_table, main, play, run_command
from textenvs.core import EnvEntry
from textenvs.experts_report import expert_table

from .corridor_env import CORRIDOR_ID, CorridorEnv


def test_play_shows_mission_text_commands_and_metrics():
    stdin = io.StringIO("go right\n" * 6)
    stdout = io.StringIO()
    assert play(CORRIDOR_ID, 0, stdin, stdout) == 0
    out = stdout.getvalue()
    assert "Mission: reach the door" in out
    assert "You are in cell" in out
    assert "Commands: go left, go right, wait" in out
    assert "Episode over (terminated)" in out and "success" in out


def test_play_offers_the_next_episode_with_the_next_seed_until_quit(monkeypatch):
    seeds = []
    reset = CorridorEnv.reset

    def recording_reset(self, *, seed=None, options=None):
        seeds.append(seed)
        return reset(self, seed=seed, options=options)

    monkeypatch.setattr(CorridorEnv, "reset", recording_reset)
    stdout = io.StringIO()
    # "go right" always moves one cell towards the door, 4 cells away at most: 8 of them end 2 episodes or more.
    assert play(CORRIDOR_ID, 7, io.StringIO("go right\n" * 8 + "quit\n"), stdout) == 0
    out = stdout.getvalue()
    assert len(seeds) >= 3 and seeds == list(range(7, 7 + len(seeds)))
    assert out.count("Episode over (terminated)") == len(seeds) - 1
    assert all(f"Next episode (seed {seed})" in out for seed in seeds[1:])
    assert out.rstrip().endswith("Bye.")


def test_play_without_a_seed_goes_on_unseeded_and_ends_at_end_of_input():
    stdout = io.StringIO()
    assert play(CORRIDOR_ID, None, io.StringIO("go right\n" * 8), stdout) == 0
    out = stdout.getvalue()
    assert "Next episode; 'quit' ends the game." in out and "(seed" not in out
    assert out.rstrip().endswith("Bye.")


def test_play_reports_invalid_commands_and_quits():
    stdout = io.StringIO()
    assert play(CORRIDOR_ID, 0, io.StringIO("dance\nquit\n"), stdout) == 0
    assert "'dance' is not a valid command" in stdout.getvalue()
    assert stdout.getvalue().rstrip().endswith("Bye.")


def test_play_explains_help_and_quit_and_help_costs_no_step():
    stdout = io.StringIO()
    assert play(CORRIDOR_ID, 0, io.StringIO("help\nHELP\nquit\n"), stdout) == 0
    out = stdout.getvalue()
    assert out.count("'help' shows this, 'quit' (or Ctrl-D) ends the game") == 3  # at the start, then twice
    assert "reward" not in out and "not a valid command" not in out


def test_play_help_of_a_continuous_env_says_how_many_numbers(data_dir):
    stdout = io.StringIO()
    assert play("Fastsim-Text-HardMaze-v0", 0, io.StringIO("help\nexit\n"), stdout) == 0
    assert "Type 2 numbers separated by spaces or commas, each in [-4, 4]" in stdout.getvalue()


def test_play_unknown_id_suggests_closest():
    with pytest.raises(ValueError, match="TestCorridor-v0"):
        play("TestCoridor-v0", 0, io.StringIO(), io.StringIO())


def test_expert_table_reports_each_id_and_failures():
    entries = [
        EnvEntry(CORRIDOR_ID, "tests.textenvs.corridor_env:CorridorEnv", "test"),
        EnvEntry("Missing-v0", "x:Y", "test", requires=("surely_not_installed_module",), extra="nope"),
    ]
    table, failures = expert_table(entries, episodes=2)
    lines = table.splitlines()
    assert lines[0].split() == ["id", "episodes", "success", "return", "steps", "progression"]
    corridor = next(line for line in lines if line.startswith(CORRIDOR_ID)).split()
    assert corridor[1:3] == ["2", "1.00"] and float(corridor[3]) == 1.0
    assert 'skipped: pip install "textenvs[nope]"' in table
    assert failures == 0


def test_format_table_aligns_columns():
    assert format_table(("a", "bb"), [("xxx", 1)]).splitlines() == ["a    bb", "---  --", "xxx  1"]


def test_list_prints_every_registered_id(capsys):
    assert main(["list"]) == 0
    out = capsys.readouterr().out
    for env_id in textenvs.registered_ids():
        assert env_id in out


def test_list_shows_missing_data_instead_of_failing(tmp_path):
    env = {k: v for k, v in os.environ.items() if k != "TEXTENVS_DATA_DIR"}
    env.update(TEXTENVS_CACHE_DIR=str(tmp_path), TEXTENVS_OFFLINE="1")
    command = [sys.executable, "-m", "textenvs.cli", "list", "--family", "housekeep"]
    result = subprocess.run(command, capture_output=True, text=True, env=env, check=True)
    assert "Housekeep-Text-v0" in result.stdout
    assert "needs data: textenvs data file 'housekeep/" in result.stdout
    rows = [line for line in result.stdout.splitlines() if "needs data:" in line]
    assert rows and all(row.endswith("was not found.") for row in rows), rows
    assert "Fetch missing data with `textenvs download {housekeep,fastsim,llm_personalize,all}`" in result.stdout


def test_bad_download_group_is_refused():
    result = subprocess.run(
        [sys.executable, "-m", "textenvs.cli", "download", "everything"], capture_output=True, text=True
    )
    assert result.returncode == 2 and "invalid choice: 'everything'" in result.stderr


def test_a_user_error_is_one_line_and_exit_status_2(capsys):
    assert main(["play", "TestCoridor-v0"]) == 2
    err = capsys.readouterr().err
    assert err.startswith("error: Unknown environment id 'TestCoridor-v0'") and err.count("\n") == 1
    assert "Traceback" not in err


def test_debug_shows_the_traceback():
    with pytest.raises(ValueError, match="Unknown environment id"):
        main(["--debug", "play", "TestCoridor-v0"])


def test_an_unexpected_error_names_its_type_and_points_to_debug(capsys):
    def broken() -> int:
        raise KeyError("direction")

    assert run_command(broken, "textenvs", debug=False) == 1
    assert capsys.readouterr().err == "error: KeyError: 'direction' (textenvs --debug ... shows the traceback)\n"
