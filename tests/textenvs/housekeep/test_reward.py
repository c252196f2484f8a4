"""The reward, branch by branch, as Housekeep's ``CosRearrangementRLEnv.get_reward`` (cos_eor/env/env.py @ ff57c79)
pays it with its RL config (SLACK -0.01, GRIPPED_SUCCESS 2.5, DROP_SUCCESS 2.5, SUCCESS 2.5), and ELLM's
variant. Scenario: Pomaria_2_int; the hair dryer starts misplaced on the bathtub, the plate correct on a
bedroom shelf (correct sets as in test_world)."""

from __future__ import annotations

import math

import pytest

from textenvs.envs.housekeep.env import HousekeepTextEnv
from textenvs.envs.housekeep.metrics import path_efficiency, scored_objects
from textenvs.envs.housekeep.reward import RewardRule

from .test_world import SCENE, _episode

DRYER_AND_PLATE = {"hair_dryer_1": "bathroom 0 bathtub 14", "plate_1": "bedroom 0 shelf 13"}
TO_DRYER = ("go to bathroom 0", "go to hair dryer 1", "look at hair dryer 1")
TO_CABINET = ("go to bedroom 0", "go to bedroom 0 bottom cabinet 10", "look at bedroom 0 bottom cabinet 10")
TO_CARPET = ("go to bedroom 0 carpet 12", "look at bedroom 0 carpet 12")


def _env(objects=None, **kwargs) -> HousekeepTextEnv:
    env = HousekeepTextEnv(scenes=[SCENE], **kwargs)
    env.reset(seed=0, options={"episode": _episode(objects or DRYER_AND_PLATE)})
    return env


def _play(env, commands):
    return [env.step(c) for c in commands]


def _terms(env, command):
    _, reward, terminated, _, info = env.step(command)
    assert not info["invalid_action"], command
    return reward, info["reward_terms"], terminated


def test_slack_is_per_low_level_step():
    env = _env()
    reward, terms, _ = _terms(env, "go to bathroom 0")  # 8 forward steps and 10 turns (see test_world)
    assert terms["slack"] == pytest.approx(-0.18) and reward == pytest.approx(-0.18)


def test_first_pick_of_a_misplaced_object_pays_then_later_picks_pay_nothing():
    env = _env()
    _play(env, TO_DRYER)
    assert _terms(env, "pick up hair dryer 1")[1]["pick"] == 2.5  # gripped_object_count == 1
    _play(env, ("look at bathroom 0 bathtub 14", "place hair dryer 1 on bathroom 0 bathtub 14", "look at hair dryer 1"))
    assert _terms(env, "pick up hair dryer 1")[1]["pick"] == 0.0  # second grip of a misplaced object: 0


def test_picking_a_correctly_placed_object_costs_every_time():
    env = _env()
    _play(env, ("go to bedroom 0", "go to plate 1", "look at plate 1"))
    assert _terms(env, "pick up plate 1")[1]["pick"] == -2.5
    _play(env, ("look at bedroom 0 shelf 13", "place plate 1 on bedroom 0 shelf 13", "look at plate 1"))
    assert _terms(env, "pick up plate 1")[1]["pick"] == -2.5  # again: the success branch comes first


def test_a_correct_object_picked_then_dropped_wrong_is_not_a_first_pick_later():
    env = _env()
    _play(env, ("go to bedroom 0", "go to plate 1", "look at plate 1", "pick up plate 1", *TO_CARPET))
    assert _terms(env, "place plate 1 on bedroom 0 carpet 12")[1]["place"] == -2.5
    _play(env, ("look at plate 1",))
    # the penalised pick counted: this is the plate's second grip, on a wrong receptacle -> 0, not +2.5
    assert _terms(env, "pick up plate 1")[1]["pick"] == 0.0


def test_a_place_pays_by_whether_the_correct_count_rose():
    env = _env()
    _play(env, (*TO_DRYER, "pick up hair dryer 1", "go to bedroom 0", *TO_CARPET))
    assert _terms(env, "place hair dryer 1 on bedroom 0 carpet 12")[1]["place"] == -2.5  # new_success == 0
    _play(env, ("look at hair dryer 1", "pick up hair dryer 1", "go to bedroom 0 shelf 9"))
    _play(env, ("look at bedroom 0 shelf 9",))
    assert _terms(env, "place hair dryer 1 on bedroom 0 shelf 9")[1]["place"] == 2.5  # new_success == 1
    # moving it from one correct receptacle to another: the pick lowers the count (-2.5), the place raises it
    _play(env, ("look at hair dryer 1",))
    assert _terms(env, "pick up hair dryer 1")[1]["pick"] == -2.5
    _play(env, TO_CABINET[1:])
    assert _terms(env, "place hair dryer 1 on bedroom 0 bottom cabinet 10")[1]["place"] == 2.5


def test_the_tidy_house_pays_on_every_step_with_an_empty_hand_and_the_episode_goes_on():
    env = _env({"hair_dryer_1": "bathroom 0 bathtub 14"})
    _play(env, (*TO_DRYER, "pick up hair dryer 1", *TO_CABINET))
    reward, terms, terminated = _terms(env, "place hair dryer 1 on bedroom 0 bottom cabinet 10")
    assert terms["episode_success"] == 2.5 and reward == pytest.approx(-0.01 + 2.5 + 2.5) and not terminated
    reward, terms, terminated = _terms(env, "look at bedroom 0 bottom cabinet 10")  # 1 low-level step
    assert terms["episode_success"] == 2.5 and not terminated
    reward, terms, _ = _terms(env, "go to bathroom 0")  # k low-level steps: 2.5 on each
    steps = round(-terms["slack"] / 0.01)
    assert steps > 1 and terms["episode_success"] == pytest.approx(2.5 * steps)
    _, reward, _, _, info = env.step("dance")  # an invalid command is a low-level step too
    assert info["invalid_action"] and reward == pytest.approx(-0.01 + 2.5)
    _play(env, ("go to hair dryer 1", "look at hair dryer 1"))
    reward, terms, _ = _terms(env, "pick up hair dryer 1")  # holding it: no longer tidy, and -2.5
    assert terms["episode_success"] == 0.0 and terms["pick"] == -2.5
    reward, terms, terminated = _terms(env, "mission complete")
    assert terminated and terms["episode_success"] == 0.0


def test_failed_picks_and_places_are_free_by_default_and_cost_the_intended_penalty_on_request():
    for penalty in (0.0, -0.2):
        env = _env(fail_penalty=penalty)
        _play(env, ("go to bathroom 0", "go to hair dryer 1"))
        reward, terms, _ = _terms(env, "pick up hair dryer 1")  # not looked at
        assert terms["failed_pick_place"] == penalty and reward == pytest.approx(-0.01 + penalty)
        reward, terms, _ = _terms(env, "place hair dryer 1 on bathroom 0 bathtub 14")  # not holding it
        assert terms["failed_pick_place"] == penalty
        reward, terms, _ = _terms(env, "look at bedroom 0 shelf 13")  # a failed look-at is no pick or place
        assert terms["failed_pick_place"] == 0.0


def test_reward_scale_multiplies_the_sum_and_leaves_the_terms():
    plain, scaled = _env(), _env(reward_scale=0.1)
    for command in (*TO_DRYER, "pick up hair dryer 1"):
        _, r1, _, _, i1 = plain.step(command)
        _, r2, _, _, i2 = scaled.step(command)
        assert i1["reward_terms"] == i2["reward_terms"] and r2 == pytest.approx(0.1 * r1)


def test_ellm_style_keeps_elmms_rule_and_ends_when_tidy():
    env = _env(reward_style="ellm")
    reward, terms, _ = _terms(env, "go to bathroom 0")
    assert reward == 0.0  # no step penalty
    _play(env, TO_DRYER[1:])
    assert _terms(env, "pick up hair dryer 1")[0] == 2.5
    _play(env, ("go to bedroom 0", *TO_CARPET))
    assert _terms(env, "place hair dryer 1 on bedroom 0 carpet 12")[0] == pytest.approx(-0.25)
    _play(env, ("look at hair dryer 1",))
    assert _terms(env, "pick up hair dryer 1")[0] == 0.0  # not its first pick
    _play(env, ("go to bedroom 0 shelf 9", "look at bedroom 0 shelf 9"))
    assert _terms(env, "place hair dryer 1 on bedroom 0 shelf 9")[0] == 0.0  # correct, but not after the 1st pick
    _play(env, ("go to plate 1", "look at plate 1"))
    assert _terms(env, "pick up plate 1")[0] == pytest.approx(-0.25)  # grabbing a correct object
    _play(env, ("look at bedroom 0 shelf 13",))
    reward, terms, terminated = _terms(env, "place plate 1 on bedroom 0 shelf 13")
    assert reward == 0.0 and terms["episode_success"] == 0.0 and terminated  # tidy with an empty hand: the end


def test_ellm_style_pays_a_first_pick_then_correct_place():
    env = _env({"hair_dryer_1": "bathroom 0 bathtub 14"}, reward_style="ellm")
    _play(env, (*TO_DRYER, "pick up hair dryer 1", *TO_CABINET))
    reward, _, terminated = _terms(env, "place hair dryer 1 on bedroom 0 bottom cabinet 10")
    assert reward == 2.5 and terminated


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        ({"reward_style": "sparse"}, "reward_style.*housekeep.*ellm"),
        ({"fail_penalty": float("nan")}, "fail_penalty must be a finite number"),
        ({"reward_scale": "0.1"}, "reward_scale must be a finite number"),
    ],
)
def test_bad_reward_arguments_are_refused(kwargs, match):
    with pytest.raises(ValueError, match=match):
        RewardRule(**{"style": "housekeep", **{k.removeprefix("reward_"): v for k, v in kwargs.items()}})
    with pytest.raises(ValueError, match=match):
        HousekeepTextEnv(scenes=[SCENE], **kwargs)


def test_path_efficiency_follows_housekeeps_carried_distance_rule():
    env = _env({"hair_dryer_1": "bathroom 0 bathtub 14"})
    world = env.world
    assert path_efficiency(world, scored_objects(world)) is None  # nothing carried yet (Housekeep: nan)
    _play(env, (*TO_DRYER, "pick up hair dryer 1"))
    start = (world.robots[0].x, world.robots[0].z)
    # a detour while carrying: via the corridor, then to the cabinet
    _play(env, ("go to corridor 0", *TO_CABINET))
    end = (world.robots[0].x, world.robots[0].z)
    corridor = next(r.center for r in world.rooms if r.name == "corridor 0")
    bedroom = next(r.center for r in world.rooms if r.name == "bedroom 0")
    walked = math.dist(start, corridor) + math.dist(corridor, bedroom) + math.dist(bedroom, end)
    env.step("place hair dryer 1 on bedroom 0 bottom cabinet 10")
    metrics = env.step("mission complete")[4]["episode_metrics"]
    assert metrics["path_efficiency"] == pytest.approx(math.dist(start, end) / walked)
    assert metrics["path_efficiency"] < 1.0
