"""The multi-robot ParallelEnv: PettingZoo's API test, per-robot state, deterministic conflicts."""

from __future__ import annotations

import subprocess
import sys

import numpy as np
import pytest

pytest.importorskip("pettingzoo", reason="needs the multiagent extra: pip install 'textenvs[multiagent]'")

from pettingzoo.test import parallel_api_test

from textenvs.envs.housekeep.multi_robot import HousekeepMultiRobotEnv
from textenvs.envs.housekeep.reward import is_tidy
from textenvs.envs.housekeep.world import HELD


@pytest.mark.parametrize("n_robots", [1, 2, 3])
def test_parallel_api(n_robots):
    parallel_api_test(HousekeepMultiRobotEnv(n_robots=n_robots), num_cycles=200)


def test_import_textenvs_does_not_import_pettingzoo():
    code = "import sys, textenvs; print('pettingzoo' in sys.modules)"
    assert subprocess.run([sys.executable, "-c", code], capture_output=True, text=True).stdout.strip() == "False"


def _to_first_misplaced(env):
    world = env.world
    obj = world.misplaced_at_start[0]
    room = world.rooms[world.receptacle_room[world.location[obj]]].name
    name = world.object_names[obj]
    for command in (f"go to {room}", f"go to {name}", f"look at {name}"):
        env.step({agent: command for agent in env.agents})
    return obj, name


def test_simultaneous_picks_go_to_the_lower_numbered_robot():
    env = HousekeepMultiRobotEnv(n_robots=2, scenes=["Pomaria_2_int"])
    env.reset(seed=3)
    obj, name = _to_first_misplaced(env)
    _, rewards, _, _, infos = env.step({"robot_0": f"pick up {name}", "robot_1": f"pick up {name}"})
    assert env.world.robots[0].holding == obj and env.world.robots[1].holding == HELD
    assert rewards["robot_0"] == pytest.approx(2.49) and rewards["robot_1"] == pytest.approx(-0.01)
    assert "another robot holds it" in infos["robot_1"]["feedback"]
    assert f"go to {name}" not in infos["robot_1"]["admissible_commands"]


def test_views_stay_equal_to_a_rebuild_under_random_commands():
    from textenvs.envs.housekeep.captioner import describe

    env = HousekeepMultiRobotEnv(n_robots=3, scenes=["Pomaria_2_int"])
    rng = np.random.default_rng(0)
    observations, infos = env.reset(seed=1)
    for _ in range(300):
        if not env.agents:
            observations, infos = env.reset()
        actions = {a: rng.choice(infos[a]["admissible_commands"][:-1]) for a in env.agents}
        observations, _, _, _, infos = env.step({a: str(c) for a, c in actions.items()})
        for agent, obs in observations.items():
            assert obs["text"] == describe(env.world, env.possible_agents.index(agent), "llm_personalize")


def test_each_robot_has_its_own_discoveries_and_hand():
    env = HousekeepMultiRobotEnv(n_robots=2, scenes=["Pomaria_2_int"])
    observations, _ = env.reset(seed=0)
    observations, *_ = env.step({"robot_0": "go to bedroom 0", "robot_1": "go to bathroom 0"})
    assert "In bedroom 0, found receptacles" in observations["robot_0"]["text"]
    assert "In bedroom 0, no receptacles found yet" in observations["robot_1"]["text"]
    assert "In bathroom 0, found receptacles" in observations["robot_1"]["text"]


def test_two_robots_finish_with_the_demonstrator_and_every_active_one_earns_the_tidy_house_bonus():
    from textenvs.envs.housekeep.expert import next_command

    env = HousekeepMultiRobotEnv(n_robots=2)
    env.reset(seed=7)
    bonus_steps = []
    last_metrics = None
    while env.agents:
        actions = {a: next_command(env.world, env.possible_agents.index(a)) for a in env.agents}
        _, rewards, _, _, infos = env.step(actions)
        if is_tidy(env.world):  # Housekeep pays 2.5 per low-level step to every robot while the house is tidy
            bonus_steps.append({a: infos[a]["reward_terms"]["episode_success"] for a in rewards})
        last_metrics = next((i["episode_metrics"] for i in infos.values() if "episode_metrics" in i), last_metrics)
    assert last_metrics["episode_success"] and last_metrics["success_rate"] == 1.0
    assert bonus_steps and all(v >= 2.5 for step in bonus_steps for v in step.values())


def test_an_object_moved_by_another_robot_is_out_of_reach():
    env = HousekeepMultiRobotEnv(n_robots=2, scenes=["Pomaria_2_int"])
    env.reset(seed=3)
    obj, name = _to_first_misplaced(env)
    world = env.world
    elsewhere = next(r for r in range(len(world.receptacles)) if r != world.location[obj])
    rec = world.receptacles[elsewhere].name
    room = world.rooms[world.receptacle_room[elsewhere]].name
    env.step({"robot_0": f"pick up {name}", "robot_1": f"look at {name}"})
    for command in (f"go to {room}", f"go to {rec}", f"look at {rec}", f"place {name} on {rec}"):
        env.step({"robot_0": command, "robot_1": f"look at {name}"})
    _, _, _, _, infos = env.step({"robot_0": "go to " + room, "robot_1": f"pick up {name}"})
    assert world.location[obj] == elsewhere and world.robots[1].holding == HELD
    assert "go to it and look at it first" in infos["robot_1"]["feedback"]
