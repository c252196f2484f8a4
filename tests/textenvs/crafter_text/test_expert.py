"""Smoke test of the scripted expert (its full benchmark is benchmarks/scores/crafter_text.py expert)."""

from __future__ import annotations

import pytest

pytest.importorskip("crafter")

from textenvs.envs.crafter_text.env import CrafterTextEnv
from textenvs.envs.crafter_text.expert import CrafterExpert


def play(env: CrafterTextEnv, seed: int) -> dict:
    expert = env.expert()
    obs, info = env.reset(seed=seed)
    expert.reset(obs, info)
    while True:
        obs, _reward, terminated, truncated, info = env.step(expert.act(obs, info))
        assert not info["invalid_action"]
        if terminated or truncated:
            return info["episode_metrics"]


def test_expert_climbs_the_tech_tree_in_300_steps():
    metrics = play(CrafterTextEnv(length=300), seed=0)
    unlocked = {name for name, done in metrics["achievements"].items() if done}
    assert {"collect_wood", "place_table", "make_wood_pickaxe", "collect_stone", "make_stone_pickaxe"} <= unlocked
    assert metrics["num_achievements"] >= 10


def test_expert_speaks_discrete_actions_too():
    env = CrafterTextEnv(length=40, action_mode="discrete")
    expert = env.expert()
    assert isinstance(expert, CrafterExpert)
    obs, info = env.reset(seed=1)
    expert.reset(obs, info)
    action = expert.act(obs, info)
    assert isinstance(action, int) and 0 <= action < env.action_space.n
    assert play(env, seed=1)["achievements"]["collect_wood"]


def test_expert_walls_itself_in_and_sleeps_when_tired():
    env = CrafterTextEnv(length=400)
    expert = env.expert()
    obs, info = env.reset(seed=0)
    expert.reset(obs, info)
    for _ in range(150):  # gather wood, tools and stone first
        obs, _r, _t, _tr, info = env.step(expert.act(obs, info))
    env.game.player.inventory["energy"] = 2
    env.game.player.inventory["stone"] = 9
    slept = False
    for _ in range(60):
        obs, _r, _t, _tr, info = env.step(expert.act(obs, info))
        if info["sleeping"]:
            slept = True
            break
    assert slept
    x, y = info["player_pos"]
    world = env.game.world
    shelter = expert._shelter
    assert shelter is not None and (x, y) in shelter
    for cx, cy in shelter:  # no creature can walk next to the sleeper
        for dx, dy in ((1, 0), (-1, 0), (0, 1), (0, -1)):
            neighbour = (cx + dx, cy + dy)
            if neighbour not in shelter:
                assert world[neighbour][0] not in ("grass", "sand", "path"), neighbour


@pytest.mark.parametrize("task", ["CollectDrink", "EatCow", "MakeWoodPickaxe"])
def test_expert_solves_the_single_tasks(task):
    metrics = play(CrafterTextEnv(task=task, length=300), seed=2)
    assert metrics["return"] == 1.0 and metrics["length"] < 300
