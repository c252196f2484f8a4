"""LLM-Personalize's fine-tuning pairs come from Housekeep's original Pomaria_2 episodes: replaying the
same episodes here must show the same objects where the paper's contexts saw them, and every move the
paper's demonstrations make must take a misplaced object to a receptacle that is correct here."""

from __future__ import annotations

import json
import re

import pytest

from textenvs.envs.housekeep.env import HousekeepTextEnv
from textenvs.envs.housekeep.episodes import load_original_episodes

SCENE = "Pomaria_2_int"
FOUND = re.compile(r"Object (.+?) found on (.+?)(?:\. | \n|\.\. )")
HOLDING = re.compile(r"You are holding (.+?)\.")
MOVE = re.compile(r"^go to .+\nstep 6: place (.+) on (.+)$", re.S)
FILES = ("il_pairs_pomaria_2_train.jsonl", "st_iter1_pairs_pomaria_2_train.jsonl")


def _category(name: str) -> str:
    return name.rsplit(" ", 1)[0].replace(" ", "_")


def _pairs(data_dir, name):
    """(episode index, context sightings, plan) for each pair whose objects identify one original episode."""
    by_categories: dict[frozenset, list[int]] = {}
    for index, episode in enumerate(load_original_episodes(SCENE)):
        by_categories.setdefault(frozenset(episode.categories), []).append(index)
    for line in (data_dir / "llm_personalize" / name).read_text().splitlines():
        user, plan = (m["content"] for m in json.loads(line)["messages"][1:])
        found = FOUND.findall(user)
        held = HOLDING.search(user).group(1)
        seen = {_category(o) for o, _ in found} | ({_category(held)} if held != "nothing" else set())
        matches = [i for cats, indices in by_categories.items() if seen <= cats for i in indices]
        if len(matches) == 1:
            yield matches[0], found, plan


@pytest.fixture(scope="module")
def env():
    return HousekeepTextEnv(scenes=[SCENE], episode_source="original")


def _world(env, index):
    env.reset(seed=0, options={"scene": SCENE, "episode_index": index})
    return env.world


def test_first_demonstration_contexts_show_the_replayed_start(env, data_dir):
    checked = set()
    for index, found, _ in _pairs(data_dir, FILES[0]):
        if index in checked or not found:
            continue
        checked.add(index)
        world = _world(env, index)
        for obj, receptacle in found:
            assert world.receptacles[world.location[world.names[obj].index]].name == receptacle, (index, obj)
    assert len(checked) == 10


@pytest.mark.parametrize("name", FILES)
def test_every_demonstrated_move_fixes_a_misplaced_object(env, data_dir, name):
    moves = 0
    for index, found, plan in _pairs(data_dir, name):
        match = MOVE.match(plan)
        if not match:
            continue
        world = _world(env, index)
        obj = world.names[match.group(1)].index
        target = world.names[match.group(2)].index
        assert target in world.correct[obj], (index, plan)
        source = dict(found).get(match.group(1))
        if source is not None:
            assert world.names[source].index not in world.correct[obj], (index, source)
        moves += 1
    assert moves >= 30
