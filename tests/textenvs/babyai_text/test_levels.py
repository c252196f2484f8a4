"""GLAM's and background-knowledge-rl's levels follow their rules on minigrid 3.x."""

from __future__ import annotations

import re
from collections import Counter

import pytest
from minigrid.core.world_object import Door

from textenvs.envs.babyai_text import make_level
from textenvs.envs.babyai_text.glam_levels import HELD_OUT_PAIRS, MIXED_KINDS, TEST_EXCLUDED_PAIRS

MISSION_FORMS = {
    "goto": "go to ",
    "pickup": "pick up ",
    "open": "open the ",
    "putnext": "put ",
}


def objects(level) -> Counter:
    """(type, color) of every key, ball, box and door on the grid."""
    return Counter((o.type, o.color) for o in level.grid.grid if o is not None and o.type != "wall")


def resets(level, seeds):
    for seed in seeds:
        level.reset(seed=seed)
        yield level


def test_mixed_train_draws_every_kind_per_reset_of_one_instance():
    level = make_level("MixedTrainLocal")
    kinds = Counter(lvl.task_kind for lvl in resets(level, range(60)))
    assert set(kinds) == set(MIXED_KINDS)


def test_task_kind_per_instance_keeps_the_first_kind():
    for seed in range(3):
        level = make_level("MixedTrainLocal", task_kind_per_instance=True)
        level.reset(seed=seed)
        first = level.task_kind
        assert {lvl.task_kind for lvl in resets(level, range(100, 120))} == {first}


@pytest.mark.parametrize("name", ["MixedTrainLocal", "MixedTestLocal"])
def test_mixed_levels_follow_glams_layout_and_exclusions(name):
    level = make_level(name)
    for lvl in resets(level, range(25)):
        mission, kind = lvl.mission, lvl.task_kind
        assert lvl.room_size == 8 and lvl.num_rows == 1
        pairs = [p for p in (*HELD_OUT_PAIRS, *TEST_EXCLUDED_PAIRS) if p in mission]
        if name == "MixedTrainLocal":
            assert not set(pairs) & set(HELD_OUT_PAIRS), mission
        else:
            assert pairs and set(pairs) <= set(HELD_OUT_PAIRS), mission
        if kind == "open":
            doors = [o for o in lvl.grid.grid if isinstance(o, Door)]
            assert (lvl.width, lvl.num_cols) == (15, 2) and len(doors) == 1 and doors[0].is_locked
            assert mission.startswith("open the ") and ("door" in mission)
            assert objects(lvl)[("key", doors[0].color)] >= 1
            if name == "MixedTestLocal":
                assert doors[0].color in ("red", "grey")
        else:
            assert (lvl.width, lvl.num_cols) == (8, 1)
            extra = 1 if kind in ("goto", "pickup") else 2
            assert sum(objects(lvl).values()) == 8 + extra
            if kind in MISSION_FORMS:
                assert mission.startswith(MISSION_FORMS[kind]), (kind, mission)
            else:
                assert ("pick up" in mission) and ("go to" in mission) and ("then" in mission or "after" in mission)


@pytest.mark.parametrize(
    ("name", "pattern"),
    [
        ("PickUpThenGoToLocal", r"^pick up .+, then go to .+$"),
        ("GoToAfterPickUpLocal", r"^go to .+ after you pick up .+$"),
        ("PickUpSeqPickUpLocal", r"^pick up .+(, then pick up | after you pick up ).+$"),
        ("PickUpSeqGoToLocal", r"^(pick up .+, then go to .+|go to .+ after you pick up .+)$"),
    ],
)
def test_sequence_levels_state_their_one_task(name, pattern):
    level = make_level(name)
    for lvl in resets(level, range(15)):
        assert lvl.task_kind == level.task_kinds[0]
        assert re.match(pattern, lvl.mission), lvl.mission
        assert not any(pair in lvl.mission for pair in HELD_OUT_PAIRS)


@pytest.mark.parametrize(
    ("name", "size", "count", "target"),
    [
        ("GoToLocal-RedBall-S20", 20, 8, ("ball", "red")),
        ("GoToLocal-PurpleKey-S30", 30, 26, ("key", "purple")),
        ("GoToLocal-RedBall-S23", 23, 13, ("ball", "red")),
        ("PickUp-PurpleKey-S20", 20, 9, ("key", "purple")),
        ("GoTo-RedBallBlueBox-S20", 20, 9, ("box", "blue")),
        ("GoToLocal-Pretraining-S20", 20, 8, None),
    ],
)
def test_background_knowledge_levels(name, size, count, target):
    level = make_level(name)
    for lvl in resets(level, range(5)):
        assert (lvl.width, lvl.height) == (size, size)
        found = objects(lvl)
        assert sum(found.values()) == count
        if target is not None:
            assert found[target] >= 1 and " ".join(reversed(target)) in lvl.mission
    if name == "GoToLocal-Pretraining-S20":
        missions = {lvl.mission for lvl in resets(level, range(40))}
        assert {m.split()[-1] for m in missions} == {"ball", "box"}
        assert {m.split()[-2] for m in missions} == {"red", "green", "blue"}


def test_levels_are_seeded_by_the_env_rng():
    first, second = make_level("GoToLocal-Pretraining-S20"), make_level("GoToLocal-Pretraining-S20")
    missions = [(first.reset(seed=s)[0]["mission"], second.reset(seed=s)[0]["mission"]) for s in range(10)]
    assert all(a == b for a, b in missions)
    assert len({a for a, _ in missions}) > 1
