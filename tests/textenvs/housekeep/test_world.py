"""Dynamics, rewards and every metric on a hand-computed scenario in Pomaria_2_int."""

from __future__ import annotations

import pytest

from textenvs.envs.housekeep.env import HousekeepTextEnv
from textenvs.envs.housekeep.episodes import Episode
from textenvs.envs.housekeep.scenes import load_scene

SCENE = "Pomaria_2_int"
BATHTUB = (-0.3743115123018633, -5.039392360212537)  # bathroom 0 bathtub 14, from the scene YAML


def _episode(objects: dict[str, str]) -> Episode:
    """Objects (key -> start receptacle name) with their correct receptacles from the annotations."""
    scene = load_scene(SCENE)
    keys = [r.key for r in scene.receptacles]
    by_name = {r.name: i for i, r in enumerate(scene.receptacles)}
    correct = {
        # hair dryer: 6 of 10 annotators rank bedroom|shelf positive, 6 bedroom|bottom_cabinet
        "hair_dryer_1": ("bedroom 0 bottom cabinet 10", "bedroom 0 shelf 13", "bedroom 0 shelf 9"),
        "plate_1": (
            "bathroom 0 top cabinet 26",
            "bedroom 0 bottom cabinet 10",
            "bedroom 0 shelf 13",
            "bedroom 0 shelf 9",
        ),
    }
    return Episode(
        scene=SCENE,
        episode_id=0,
        receptacles=tuple(keys),
        objects=tuple(objects),
        categories=tuple(k.rsplit("_", 1)[0] for k in objects),
        start=tuple(by_name[name] for name in objects.values()),
        correct=tuple(tuple(sorted(by_name[n] for n in correct[k])) for k in objects),
        robot_start=BATHTUB,
    )


@pytest.fixture
def env():
    environment = HousekeepTextEnv(scenes=[SCENE])
    yield environment
    environment.close()


def test_correct_sets_follow_the_rule(env):
    env.reset(seed=0, options={"episode": _episode({"hair_dryer_1": "bathroom 0 bathtub 14"})})
    world = env.world
    scene = load_scene(SCENE)
    from_rule = {
        world.receptacles[i].name
        for i in range(len(world.receptacles))
        if any(world.annotations.correct[p, world.category_columns[0]] for p in world.receptacles[i].pairs)
    }
    assert from_rule == {world.receptacles[i].name for i in world.correct[0]}
    assert len(world.receptacles) == len(scene.reachable)


def test_hand_computed_scenario(env):
    episode = _episode({"hair_dryer_1": "bathroom 0 bathtub 14", "plate_1": "bedroom 0 shelf 13"})
    obs, info = env.reset(seed=0, options={"episode": episode})
    assert obs["text"] == (
        "You are holding nothing.\nIn bathroom 0, no receptacles found yet. \n"
        "In bedroom 0, no receptacles found yet. \nIn corridor 0, no receptacles found yet."
    )

    def step(command):
        obs, reward, terminated, _, info = env.step(command)
        return round(reward, 6), info, terminated, obs

    # Unknown objects: feedback, a cheap no-op, not an invalid command.
    reward, info, _, _ = step("go to hair dryer 1")
    assert reward == -0.01 and not info["invalid_action"] and "not found hair dryer 1" in info["feedback"]
    # bathtub (-0.374, -5.039) -> bathroom centre (-0.546, -3.113): 1.934 m = 8 forward steps; the heading
    # turns from 0 to 95.1 degrees = 10 turns.
    reward, info, _, obs = step("go to bathroom 0")
    assert reward == -0.18 and info["steps"] == 1 + 18
    assert "Object hair dryer 1 found on bathroom 0 bathtub 14" in obs["text"]
    # back to the bathtub: 8 forward steps and a 180-degree turn (18 turns).
    assert step("go to hair dryer 1")[0] == -0.26
    assert step("look at hair dryer 1")[0] == -0.01
    assert step("pick up hair dryer 1")[0] == 2.49  # first pick of a misplaced object
    reward, info, _, obs = step("go to bedroom 0 shelf 13")
    assert reward == -0.01 and "not found bedroom 0 shelf 13" in info["feedback"]
    assert obs["text"].startswith("You are holding hair dryer 1.\n")
    step("go to bedroom 0")
    step("go to bedroom 0 shelf 13")
    assert step("look at bedroom 0 shelf 13")[0] == -0.01
    # now correct, and so is everything with the hand empty: the success bonus, on every step while it holds
    assert step("place hair dryer 1 on bedroom 0 shelf 13")[0] == 2.49 + 2.5
    assert step("look at plate 1")[0] == -0.01 + 2.5  # on the shelf the robot stands at
    assert step("pick up plate 1")[0] == -2.51  # it was correct already
    step("go to bedroom 0 carpet 12")
    step("look at bedroom 0 carpet 12")
    assert step("place plate 1 on bedroom 0 carpet 12")[0] == -2.51  # incorrect
    reward, info, _, _ = step("pick up plate 1")  # not looked at: a failed pick, unpenalised as in Housekeep
    assert reward == -0.01 and "look at it first" in info["feedback"]
    assert info["reward_terms"]["failed_pick_place"] == 0.0
    reward, info, terminated, _ = step("mission complete")
    assert terminated
    metrics = info["episode_metrics"]
    assert metrics["episode_success"] is False
    assert metrics["object_success"] == 0.5  # M = {hair dryer}, P = {plate}: 1 of 2 correct
    # soft scores: hair dryer on bedroom|shelf 6/10 positive, plate on bedroom|carpet 2/10
    assert metrics["avg_soft_score"] == pytest.approx((0.6 + 0.2) / 2)
    # hair dryer's positive ranks on bedroom|shelf: 3, 2, 1, 3, 3, 2 -> mean reciprocal 0.5; plate wrong: 0
    assert metrics["rearrange_quality"] == pytest.approx(0.25)
    # hair dryer rearranged with 1 pick + 1 place -> 2/2; two objects touched
    assert metrics["pick_place_efficiency"] == pytest.approx(0.5)
    assert metrics["misplaced_objects_found"] == 1.0
    assert metrics["rooms_visited_fraction"] == pytest.approx(2 / 3)
    rooms = {room.name: room.area for room in env.world.rooms}
    assert metrics["map_coverage"] == pytest.approx(rooms["bathroom 0"] + rooms["bedroom 0"])
    # picks: hair dryer, plate, failed plate; places: 2 -> 4 of 5; look-ats: 3 of 3
    assert metrics["success_pick_place"] == pytest.approx(4 / 5)
    assert metrics["success_look_at"] == 1.0
    assert metrics["success_rate"] == 0.0  # 1 correct at the start, 1 at the end, 1 misplaced
    assert metrics["commands"] == 17
    assert metrics["steps"] == env.world.steps


def test_success_bonus_and_success_rate(env):
    env.reset(seed=0, options={"episode": _episode({"hair_dryer_1": "bathroom 0 bathtub 14"})})
    for command in ("go to bathroom 0", "go to bedroom 0", "go to hair dryer 1", "look at hair dryer 1"):
        env.step(command)
    assert env.step("pick up hair dryer 1")[1] == pytest.approx(2.49)
    env.step("go to bedroom 0 bottom cabinet 10")
    env.step("look at bedroom 0 bottom cabinet 10")
    _, reward, _, _, info = env.step("place hair dryer 1 on bedroom 0 bottom cabinet 10")
    assert reward == pytest.approx(2.49 + 2.5) and info["success"] and info["progression"] == 1.0
    metrics = env.step("mission complete")[4]["episode_metrics"]
    assert metrics["episode_success"] and metrics["success_rate"] == 1.0


def test_negative_success_rate_when_a_correct_object_is_misplaced(env):
    env.reset(
        seed=0,
        options={"episode": _episode({"hair_dryer_1": "bathroom 0 bathtub 14", "plate_1": "bedroom 0 shelf 13"})},
    )
    for command in (
        "go to bedroom 0",
        "go to plate 1",
        "look at plate 1",
        "pick up plate 1",
        "go to bedroom 0 carpet 12",
    ):
        env.step(command)
    env.step("look at bedroom 0 carpet 12")
    env.step("place plate 1 on bedroom 0 carpet 12")
    assert env.step("mission complete")[4]["episode_metrics"]["success_rate"] == -1.0


def test_malformed_and_unknown_commands_are_invalid_noops(env):
    env.reset(seed=0, options={"episode": _episode({"hair_dryer_1": "bathroom 0 bathtub 14"})})
    for command in ("pick up unicorn 1", "place hair dryer 1", "go to", "look at bathroom 0", "dance", ""):
        _, reward, terminated, truncated, info = env.step(command)
        assert info["invalid_action"] and "Valid commands" in info["feedback"], command
        assert reward == -0.01 and not terminated and not truncated
    _, _, _, _, info = env.step("place hair dryer 1 on bathroom 0 bathtub 14")
    assert not info["invalid_action"] and "not holding" in info["feedback"]


def test_planner_step_prefix_and_case_are_accepted(env):
    env.reset(seed=0, options={"episode": _episode({"hair_dryer_1": "bathroom 0 bathtub 14"})})
    _, _, _, _, info = env.step("step 1: Go to Bathroom 0.")
    assert not info["invalid_action"] and info["feedback"] == "You went to bathroom 0."


def test_truncation_at_the_command_limit():
    env = HousekeepTextEnv(scenes=[SCENE], max_commands=3)
    env.reset(seed=0)
    results = [env.step("go to bathroom 0")[2:4] for _ in range(3)]
    assert results == [(False, False), (False, False), (False, True)]


def test_truncation_at_the_step_limit():
    env = HousekeepTextEnv(scenes=[SCENE], max_steps=30)
    env.reset(seed=0)
    truncated = False
    for room in ("go to bathroom 0", "go to corridor 0", "go to bedroom 0"):
        truncated = env.step(room)[3]
        if truncated:
            break
    assert truncated and env.world.steps >= 30


def test_an_object_can_go_back_where_it_was_picked(env):
    env.reset(seed=0, options={"episode": _episode({"hair_dryer_1": "bathroom 0 bathtub 14"})})
    for command in ("go to bathroom 0", "go to hair dryer 1", "look at hair dryer 1", "pick up hair dryer 1"):
        env.step(command)
    info = env.step("look at bathroom 0 bathtub 14")[4]
    assert info["action_succeeded"] and "place hair dryer 1 on bathroom 0 bathtub 14" in info["admissible_commands"]
    assert env.step("place hair dryer 1 on bathroom 0 bathtub 14")[1] == pytest.approx(-2.51)


def test_bad_given_episodes_are_refused_with_the_reason(env):
    unknown = _episode({"hair_dryer_1": "bathroom 0 bathtub 14"})
    unknown = unknown.__class__(**{**unknown.__dict__, "categories": ("unicorn",)})
    with pytest.raises(ValueError, match="unknown object categories \\['unicorn'\\]"):
        env.reset(seed=0, options={"episode": unknown})
    garbled = unknown.__class__(**{**unknown.__dict__, "categories": ("hair_dryer",), "objects": ("hair\x07dryer_1",)})
    with pytest.raises(ValueError, match="non-printable"):
        env.reset(seed=0, options={"episode": garbled})
    outside = unknown.__class__(
        **{**unknown.__dict__, "categories": ("hair_dryer",), "start": (len(unknown.receptacles) - 1,)}
    )
    assert outside.receptacles[-1].startswith("None-")  # a window outside every room
    with pytest.raises(ValueError, match="cannot reach"):
        env.reset(seed=0, options={"episode": outside})
