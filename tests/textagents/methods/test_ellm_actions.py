"""ELLM's action space against the original (yuqingd/ellm @ e068cf4, golden ``ellm_actions.json``): the
``harder`` space's 139 names in the original's order, what each of them does in scripted situations (every
verb x noun pair, those that cannot apply included), and the method's use of it (the DQN's outputs, the
uniform baseline's goals)."""

from __future__ import annotations

import json
from pathlib import Path

import gymnasium as gym
import pytest

import textenvs  # noqa: F401
from textenvs.envs.crafter_text.ellm_rules import ELLM_ACTIONS, HARD_ACTIONS, EllmPlayer

pytest.importorskip("crafter")

GOLDEN = json.loads((Path(__file__).resolve().parent / "golden" / "ellm_actions.json").read_text())
SMOKE = Path(__file__).resolve().parents[3] / "benchmarks" / "methods" / "ellm" / "smoke.yaml"
#: As the golden script: the player in the middle of a 9x9 grass world, facing right at ``FRONT``;
#: a situation's ``nearby`` materials on the tiles left of and above it.
CENTRE, FRONT, NEARBY = (4, 4), (5, 4), [(3, 4), (4, 3)]


def test_the_harder_names_are_the_originals_in_order():
    assert list(HARD_ACTIONS) == GOLDEN["harder"] == GOLDEN["harder_played"]
    assert list(ELLM_ACTIONS) == GOLDEN["easier"]
    env = gym.make("Crafter-Text-ELLM-v0", hard=True, action_mode="discrete")
    env.reset(seed=0)
    assert env.action_space.n == len(GOLDEN["harder"]) == 139
    played = []
    for index in range(env.action_space.n):
        played.append(env.step(index)[-1]["player_action"])
        env.reset(seed=0)
    assert played == GOLDEN["harder"]


def _step(situation: dict, action: str) -> dict:
    """One ``EllmPlayer.update`` on ``situation``, reported as the golden script reports the original's."""
    from crafter import constants, engine, objects

    world = engine.World((9, 9), constants.materials, (12, 12))
    world.reset(seed=0)
    for x in range(9):
        for y in range(9):
            world[(x, y)] = "grass"
    for pos, material in zip(NEARBY, situation.get("nearby", []), strict=False):
        world[pos] = material
    world[FRONT] = situation["front"]
    player = EllmPlayer(world, CENTRE)
    world.add(player)
    player.facing = (1, 0)
    player.inventory.update(situation.get("inventory", {}))
    kind = situation.get("object")
    if kind is not None:
        cls = {"cow": objects.Cow, "zombie": objects.Zombie, "ripe plant": objects.Plant}[kind]
        obj = cls(world, FRONT, player) if kind == "zombie" else cls(world, FRONT)
        if kind == "ripe plant":
            obj.grown = 301
        world.add(obj)
    inventory, achievements = dict(player.inventory), dict(player.achievements)
    player.action = action
    success, eval_success = player.update()
    material, obj = world[FRONT]
    changes = {
        "front": material,
        "object_health": None if obj is None else int(obj.health),
        "inventory": {k: v - inventory[k] for k, v in player.inventory.items() if v != inventory[k]},
        "achievements": {k: v - achievements[k] for k, v in player.achievements.items() if v != achievements[k]},
        "pos": [int(p) for p in player.pos],
        "facing": [int(f) for f in player.facing],
        "sleeping": bool(player.sleeping),
    }
    return {"flags": f"{int(success)}{int(eval_success)}", "changes": changes}


@pytest.mark.parametrize(
    "situation", GOLDEN["situations"], ids=lambda s: f"{s['front']}-{s.get('object')}-{len(s.get('inventory', {}))}"
)
def test_every_verb_noun_pair_does_what_the_originals_does(situation):
    """Both success flags and every change, for all 139 actions: a pair that cannot apply ("mine tree",
    "place zombie", "make tree") changes nothing and fails the game action, but counts as ELLM's loose success
    when its noun is in front or held, as the original's ``Player.update``."""
    outcomes = {action: _step(situation, action) for action in GOLDEN["harder"]}
    assert [outcomes[a]["flags"] for a in GOLDEN["harder"]] == situation["flags"]
    nothing = outcomes["do nothing"]["changes"]
    assert nothing == situation["nothing"]
    changed = {}
    for action, outcome in outcomes.items():
        diff = {k: v for k, v in outcome["changes"].items() if v != nothing[k]}
        if diff:
            changed[action] = diff
    assert changed == situation["changed"]


def _method(tmp_path, **settings):
    from textagents.methods.core.config import load_config
    from textagents.methods.core.method import RunContext
    from textagents.methods.ellm.config import EllmConfig
    from textagents.methods.ellm.method import EllmMethod

    config = load_config(EllmConfig, SMOKE, {"buffer_size": 10, **settings})
    return EllmMethod(config, RunContext(tmp_path, lambda: pytest.fail("LLM")))


def test_the_method_plays_the_harder_space_by_default_and_the_easier_as_an_option(tmp_path):
    from textagents.methods.ellm.config import EllmConfig

    assert EllmConfig().action_space == "harder"
    method = _method(tmp_path, goal_source="uniform")
    assert method.agent.actions == 139 and method.agent.online.advantage[-1].out_features == 139
    assert method.source.suggest(None) == GOLDEN["harder"]  # the original's uniform baseline: every action name
    assert method.env.unwrapped.discrete_commands() == GOLDEN["harder"]
    easier = _method(tmp_path, goal_source="uniform", action_space="easier")
    assert easier.agent.actions == 27 and easier.source.suggest(None) == GOLDEN["easier"]


def test_an_unknown_action_space_is_a_clear_error():
    from textagents.methods.ellm.config import EllmConfig

    with pytest.raises(ValueError, match=r"action_space must be one of \['harder', 'easier'\], got 'hard'"):
        EllmConfig(action_space="hard")
