"""``Crafter-Text-ELLM``: each rule of ELLM's modified Crafter (yuqingd/ellm @ e068cf4, ``text_crafter/text_crafter``:
``objects.py`` ``Player.update`` / ``_do_object`` / ``_do_material`` / ``_place``, ``env.py`` ``step``,
``data_text.yaml``), on scripted situations, beside stock Crafter where they differ."""

from __future__ import annotations

import gymnasium as gym
import numpy as np
import pytest
from crafter import objects

import textenvs  # noqa: F401
from textenvs.envs.crafter_text.captioner import ellm_lines
from textenvs.envs.crafter_text.ellm_rules import ELLM_ACTIONS, HARD_ACTIONS, NOUNS, VERB_ONLY, VERBS

pytest.importorskip("crafter")


def _env(env_id: str = "Crafter-Text-ELLM-v0"):
    env = gym.make(env_id).unwrapped
    env.reset(seed=0)
    return env


def _facing(env, material: str | None = None, obj_cls=None):
    """Turn the player right and put ``material`` (and an object of ``obj_cls``) on the cell in front."""
    game = env.game
    player = game.player
    player.facing = (1, 0)
    target = (int(player.pos[0]) + 1, int(player.pos[1]))
    _, present = game.world[target]
    if present is not None:
        game.world.remove(present)
    game.world[target] = material or "grass"
    if obj_cls is not None:
        args = (player,) if obj_cls in (objects.Zombie, objects.Skeleton) else ()
        game.world.add(obj_cls(game.world, np.array(target), *args))
    return target


def _step(env, action):
    _, reward, terminated, truncated, info = env.step(action)
    return reward, info, terminated, truncated


def test_every_creature_dies_in_one_hit_without_a_sword():
    env = _env()
    _facing(env, "grass", objects.Zombie)
    reward, info, _, _ = _step(env, "attack zombie")
    assert info["achievements"]["defeat_zombie"] == 1 and reward == 1.0  # damage 5 >= a zombie's health
    assert info["eval_success"] and info["action_success"] and info["player_action"] == "attack zombie"
    stock = _env("Crafter-Text-v0")
    target = _facing(stock, "grass", objects.Zombie)
    _step(stock, "Do")
    assert stock.game.world[target][1].health == 4  # stock crafter: damage 1 without a sword


def test_a_cow_dies_in_one_hit_and_feeds():
    env = _env()
    env.game.player.inventory["food"] = 3
    _facing(env, "grass", objects.Cow)
    reward, info, _, _ = _step(env, "eat cow")  # alias of attack cow
    assert info["achievements"]["eat_cow"] == 1 and info["player_action"] == "attack cow"
    assert info["inventory"]["food"] == 9 and reward == 1.0


def test_collecting_at_the_maximum_uses_the_tile_up_for_nothing():
    env = _env()
    env.game.player.inventory["wood"] = 9
    target = _facing(env, "tree")
    reward, info, _, _ = _step(env, "chop tree")
    assert env.game.world[target][0] == "grass" and info["inventory"]["wood"] == 9
    assert info["achievements"]["collect_wood"] == 0 and reward == 0.0 and not info["eval_success"]
    assert info["action_success"]  # ELLM's loose flag: the noun is an item the player holds
    env.game.player.inventory["wood"] = 8
    target = _facing(env, "tree")
    reward, info, _, _ = _step(env, "chop tree")
    assert env.game.world[target][0] == "grass" and info["inventory"]["wood"] == 9
    assert info["achievements"]["collect_wood"] == 1 and reward == 1.0 and info["eval_success"]


def test_a_crafting_table_costs_one_wood():
    env = _env()
    env.game.player.inventory["wood"] = 1
    target = _facing(env, "grass")
    reward, info, _, _ = _step(env, "place crafting table")
    assert env.game.world[target][0] == "table" and info["inventory"]["wood"] == 0
    assert info["achievements"]["place_table"] == 1 and reward == 1.0 and info["eval_success"]
    stock = _env("Crafter-Text-v0")
    stock.game.player.inventory["wood"] = 1
    target = _facing(stock, "grass")
    _step(stock, "Place Table")
    assert stock.game.world[target][0] == "grass"  # stock crafter: 2 wood


def test_make_crafting_table_places_one():
    env = _env()
    env.game.player.inventory["wood"] = 2
    target = _facing(env, "grass")
    _, info, _, _ = _step(env, "make crafting table")
    assert env.game.world[target][0] == "table" and info["player_action"] == "place crafting table"


def test_no_health_reward_and_death_ends_the_episode():
    env, stock = _env(), _env("Crafter-Text-v0")
    env.game.player.health = stock.game.player.health = 4
    reward, _, terminated, _ = _step(env, "do nothing")
    assert reward == 0.0 and not terminated
    assert _step(stock, "Noop")[0] == pytest.approx(-0.5)  # stock: health change / 10
    env.game.player.health = 0
    reward, info, terminated, truncated = _step(env, "do nothing")
    assert terminated and not truncated and "episode_metrics" in info


def test_episodes_last_400_steps():
    env = gym.make("Crafter-Text-ELLM-v0")
    env.reset(seed=1)
    assert env.unwrapped.length == 400
    env.unwrapped.game._step = 399
    env.unwrapped.game.player.health = 9
    _, _, terminated, truncated, _ = env.step("do nothing")
    assert truncated and not terminated


def test_the_action_lists():
    assert len(ELLM_ACTIONS) == 27 and ELLM_ACTIONS[9] == "chop tree" and ELLM_ACTIONS[18] == "place crafting table"
    assert len(HARD_ACTIONS) == 139 == len(VERB_ONLY) + len(VERBS) * len(NOUNS)
    assert {"mine tree", "eat cow", "make crafting table", "drink water"} <= set(HARD_ACTIONS)
    env, hard = _env(), _env("Crafter-Text-ELLM-Hard-v0")
    assert env.admissible_commands() == list(ELLM_ACTIONS)
    assert hard.admissible_commands() == list(HARD_ACTIONS)
    discrete = gym.make("Crafter-Text-ELLM-Hard-v0", action_mode="discrete")
    assert discrete.action_space.n == 139


def test_a_verb_acts_only_on_its_own_noun_in_the_hard_variant():
    env = _env("Crafter-Text-ELLM-Hard-v0")
    target = _facing(env, "tree")
    _, info, _, _ = _step(env, "mine tree")
    assert env.game.world[target][0] == "tree" and info["inventory"]["wood"] == 0
    assert not info["eval_success"] and info["action_success"]  # loose: the noun is the material in front
    _, info, _, _ = _step(env, "chop tree")
    assert env.game.world[target][0] == "grass" and info["inventory"]["wood"] == 1 and info["eval_success"]
    _facing(env, "grass", objects.Cow)
    _, info, _, _ = _step(env, "attack zombie")
    assert not info["eval_success"] and not info["action_success"]
    _, info, _, _ = _step(env, "eat cow")
    assert info["eval_success"] and info["achievements"]["eat_cow"] == 1


@pytest.mark.parametrize(
    ("setup", "action", "eval_success", "action_success"),
    [
        ({"material": "stone"}, "chop tree", False, False),
        ({"material": "stone"}, "mine stone", False, True),  # no pickaxe: nothing mined; stone is in front
        ({"material": "grass", "wood_pickaxe": 1}, "make wood pickaxe", False, True),  # no table near
        ({"material": "water"}, "move right", False, False),  # water blocks
        ({"material": "grass"}, "move right", True, True),
        ({"material": "grass"}, "sleep", False, False),  # energy full
        ({"material": "grass"}, "do nothing", True, True),
        ({"material": "grass", "sapling": 1}, "place plant", True, True),
    ],
)
def test_eval_and_loose_success(setup, action, eval_success, action_success):
    env = _env()
    setup = dict(setup)
    _facing(env, setup.pop("material"))
    env.game.player.inventory.update(setup)
    _, info, _, _ = _step(env, action)
    assert (info["eval_success"], info["action_success"]) == (eval_success, action_success)
    assert info["player_action"] == action


def test_an_invalid_command_is_a_noop_that_succeeds_at_nothing():
    env = _env()
    _, info, _, _ = _step(env, "Do")  # a stock command is not an ELLM action
    assert info["invalid_action"] and not info["action_success"] and not info["eval_success"]


def test_the_caption_comes_in_elmms_three_parts():
    env = _env()
    env.game.player.inventory.update(wood=2, sapling=1, food=3)
    obs, _, _, _, info = env.step("do nothing")
    parts = ellm_lines(env.game_state())
    assert (info["obs_caption"], info["inventory_caption"], info["status_caption"]) == parts
    assert info["obs_caption"].startswith("you see ") and info["inventory_caption"].startswith("you have in your")
    assert "hungry" in info["status_caption"]
    assert obs["text"] == "\n".join(p for p in parts if p)


def test_the_expert_plays_elmms_actions():
    env = gym.make("Crafter-Text-ELLM-v0")
    expert = env.unwrapped.expert()
    obs, info = env.reset(seed=0)
    expert.reset(obs, info)
    done = False
    while not done:
        obs, _, terminated, truncated, info = env.step(expert.act(obs, info))
        assert not info["invalid_action"], info["feedback"]
        done = terminated or truncated
    assert info["episode_metrics"]["num_achievements"] >= 10
