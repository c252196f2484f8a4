"""The leaderboard's family score: Crafter's score for the open game, the task's success rate for a single-task
Crafter variant (Crafter's score is defined over the open game's 22 achievements)."""

from __future__ import annotations

import pytest

from textagents.bench.report import family_score
from textenvs.envs.crafter_text.metrics import crafter_score, episode_metrics
from textenvs.envs.crafter_text.registration import single_task


def _records(successes: list[bool]) -> list[dict]:
    return [
        {
            "success": success,
            "metrics": episode_metrics({"make_wood_pickaxe": int(success), "collect_wood": 1}, 50, 1.0),
        }
        for success in successes
    ]


@pytest.mark.parametrize(
    ("env_id", "kwargs", "task"),
    [
        ("Crafter-Text-MakeWoodPickaxe-v0", {}, "MakeWoodPickaxe"),
        ("Crafter-Text-v0", {"task": "EatCow"}, "EatCow"),
        ("Crafter-Text-v0", {}, None),
        ("Crafter-Text-v0", {"task": None}, None),
        ("Crafter-Text-ELLM-v0", {}, None),
        ("BabyAI-Text-GoToLocal-v0", {}, None),
    ],
)
def test_single_task_reads_the_task_from_the_id_or_the_kwargs(env_id, kwargs, task):
    found = single_task(env_id, kwargs)
    assert (found.name if found else None) == task


def test_a_single_task_variant_scores_its_success_rate():
    records = _records([True, False, False, True, True])
    score = family_score(records, {"id": "Crafter-Text-MakeWoodPickaxe-v0", "kwargs": {"length": 500}})
    assert score == {"task_success_rate": pytest.approx(0.6)}


def test_the_open_game_scores_crafters_score():
    records = _records([True, False])
    score = family_score(records, {"id": "Crafter-Text-v0", "kwargs": {}})
    assert score == {"crafter_score": pytest.approx(crafter_score(r["metrics"] for r in records))}
    assert (
        family_score([{"success": True, "metrics": {"steps": 3}}], {"id": "BabyAI-Text-GoToLocal-v0", "kwargs": {}})
        is None
    )
