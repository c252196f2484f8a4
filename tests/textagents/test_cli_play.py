from __future__ import annotations

import json

from tests.textenvs.corridor_env import CORRIDOR_ID
from textagents.cli import main


def test_play_prints_one_record_per_episode(capsys):
    assert main(["play", CORRIDOR_ID, "--agent", "random", "--episodes", "2", "--seed", "4"]) == 0
    records = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
    assert [r["seed"] for r in records] == [4, 5] and all(r["agent"] == "random" for r in records)


def test_play_expert_and_human_end_of_input(capsys, monkeypatch):
    assert main(["play", CORRIDOR_ID, "--agent", "expert"]) == 0
    assert json.loads(capsys.readouterr().out)["success"] is True

    def no_more_input(prompt):
        raise EOFError

    monkeypatch.setattr("builtins.input", no_more_input)
    assert main(["play", CORRIDOR_ID, "--agent", "human"]) == 0
