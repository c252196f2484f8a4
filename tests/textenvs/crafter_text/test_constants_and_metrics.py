"""Our copies of crafter's names agree with crafter; the Crafter score and episode metrics."""

from __future__ import annotations

import math
import subprocess
import sys

import pytest

from textenvs.envs.crafter_text import ACHIEVEMENTS, COMMANDS, crafter_score, episode_metrics, success_rates
from textenvs.envs.crafter_text.constants import CRAFTER_ACTIONS, ID_TO_ITEM, INVENTORY_ITEMS


def test_names_agree_with_crafter():
    crafter = pytest.importorskip("crafter")
    assert list(CRAFTER_ACTIONS) == crafter.constants.actions
    assert list(ACHIEVEMENTS) == crafter.constants.achievements
    assert list(INVENTORY_ITEMS) == list(crafter.constants.items)
    env = crafter.Env()
    ids = {**env._world._mat_ids, **{cls.__name__.lower(): i for cls, i in env._sem_view._obj_ids.items()}}
    assert {str(name): i for name, i in ids.items()} == {name: i for i, name in enumerate(ID_TO_ITEM)}


def test_commands_follow_crafter_action_order():
    spoken = [c.lower().replace(" ", "_") for c in COMMANDS]
    compass = {"move_west": "move_left", "move_east": "move_right", "move_north": "move_up"}
    compass["move_south"] = "move_down"
    assert [compass.get(c, c) for c in spoken] == list(CRAFTER_ACTIONS)


def test_crafter_score_is_the_geometric_mean_of_success_rates_in_percent():
    assert crafter_score([{}]) == pytest.approx(0.0)
    assert crafter_score([{name: 1 for name in ACHIEVEMENTS}]) == pytest.approx(100.0)
    # half the episodes collect wood, a quarter also place a table
    episodes = [{"collect_wood": 1, "place_table": 1}, {"collect_wood": 3}, {}, {}]
    expected = math.exp((math.log(51) + math.log(26)) / 22) - 1
    assert crafter_score(episodes) == pytest.approx(expected)
    assert success_rates(episodes)["collect_wood"] == 50.0


def test_crafter_score_accepts_episode_metrics():
    metrics = [episode_metrics({"collect_wood": 2, "wake_up": 1}, 100, 2.0) for _ in range(3)]
    assert crafter_score(metrics) == pytest.approx(math.exp(2 * math.log(101) / 22) - 1)


def test_episode_metrics_fields():
    metrics = episode_metrics({"collect_wood": 2, "place_table": 1, "eat_cow": 0}, 321, 2.1)
    assert metrics["num_achievements"] == 2
    assert metrics["progression"] == pytest.approx(2 / 22)
    assert metrics["length"] == 321 and metrics["return"] == pytest.approx(2.1)
    assert set(metrics["achievements"]) == set(ACHIEVEMENTS)
    assert [k for k, v in metrics["achievements"].items() if v] == ["collect_wood", "place_table"]


def test_score_inputs_are_checked():
    with pytest.raises(ValueError, match="at least one episode"):
        crafter_score([])
    with pytest.raises(ValueError, match="unknown achievements \\['fly'\\]"):
        crafter_score([{"fly": 1}])


def test_importing_the_family_does_not_import_crafter_or_numba():
    code = (
        "import sys, textenvs, textenvs.envs.crafter_text as family; "
        "family.caption; family.crafter_score; "
        "print(sorted(m for m in ('crafter', 'numba', 'opensimplex') if m in sys.modules))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"
