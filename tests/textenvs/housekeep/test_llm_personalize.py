"""LLM-Personalize's demonstrator (the ``demo`` mode of ``LLMModelManual.generate_response`` in
``cos_eor/policy/llm_planner.py`` @ 47844d2), case by case, and the ``Housekeep-Text-LLMPersonalize-v0`` id:
its episodes and the paper's train/test split."""

from __future__ import annotations

import collections
import hashlib
import json
import subprocess
import sys

import gymnasium as gym
import pytest

import textenvs  # noqa: F401
from textenvs.envs.housekeep.commands import MISSION_COMPLETE, parse
from textenvs.envs.housekeep.demonstrations import demonstration_pairs
from textenvs.envs.housekeep.env import HousekeepTextEnv
from textenvs.envs.housekeep.expert import Demonstrator, format_plan, make_planner
from textenvs.envs.housekeep.registration import LLM_PERSONALIZE_SCENES
from textenvs.envs.housekeep.sampling import llm_personalize_episode, llm_personalize_origin, paper_split_indices

from .test_expert import OBJECT_PLAN
from .test_world import SCENE, _episode

ROOMS = ["go to bathroom 0", "go to bedroom 0", "go to corridor 0"]
DRYER_CORRECT = {"bedroom 0 bottom cabinet 10", "bedroom 0 shelf 13", "bedroom 0 shelf 9"}


def _world(objects):
    env = HousekeepTextEnv(scenes=[SCENE], expert_mode="faithful")
    env.reset(seed=0, options={"episode": _episode(objects)})
    return env


def _run(env, steps):
    for step in steps:
        assert env.world.execute(0, parse(step, env.world.names)).success, step


def test_the_first_call_plans_every_room_and_a_planned_room_is_never_planned_again():
    env = _world({"hair_dryer_1": "bathroom 0 bathtub 14"})
    demonstrator = make_planner("faithful", env.world)
    assert demonstrator.plan(env.world) == ROOMS
    # no room was gone to yet, but each counts as visited once planned: the next call moves an object or ends
    assert demonstrator.plan(env.world) == [MISSION_COMPLETE]  # nothing seen yet: mission complete
    _run(env, ROOMS)
    assert demonstrator.plan(env.world)[0] == "go to hair dryer 1"


def test_objects_are_taken_in_the_episodes_object_order_not_discovery_order():
    # the hair dryer (bathroom) is discovered first, the plate (bedroom) second; the plate comes first in the
    # episode's objects, so the demonstrator moves it first; the efficient expert moves the hair dryer first
    objects = {"plate_1": "bedroom 0 carpet 12", "hair_dryer_1": "bathroom 0 bathtub 14"}
    env = _world(objects)
    faithful, efficient = make_planner("faithful", env.world), make_planner("efficient", env.world)
    assert faithful.plan(env.world) == ROOMS
    _run(env, ROOMS)
    assert env.world.robots[0].known_objects == [1, 0]  # discovery order: hair dryer, plate
    assert faithful.plan(env.world)[0] == "go to plate 1"
    assert efficient.plan(env.world)[0] == "go to hair dryer 1"


def test_only_seen_objects_with_a_seen_correct_receptacle_qualify_else_mission_complete():
    objects = {"hair_dryer_1": "bathroom 0 bathtub 14", "plate_1": "bedroom 0 carpet 12"}
    env = _world(objects)
    demonstrator = make_planner("faithful", env.world)
    demonstrator.planned_rooms.update(range(len(env.world.rooms)))  # as if the sweep had been planned
    _run(env, ["go to bathroom 0"])
    # the hair dryer is seen but none of its correct receptacles (all in the bedroom) is; the plate is unseen
    assert demonstrator.plan(env.world) == [MISSION_COMPLETE]
    assert not env.world.all_correct()  # misplaced objects remain, unseen or without a seen target
    _run(env, ["go to corridor 0"])
    assert demonstrator.plan(env.world) == [MISSION_COMPLETE]
    _run(env, ["go to bedroom 0"])
    plan = demonstrator.plan(env.world)
    assert plan[0] == "go to hair dryer 1" and plan[3].removeprefix("go to ") in DRYER_CORRECT


def test_the_target_is_a_uniform_choice_among_seen_correct_receptacles_from_the_seeded_rng():
    env = _world({"hair_dryer_1": "bathroom 0 bathtub 14"})
    _run(env, ROOMS)
    chosen = collections.Counter()
    for seed in range(300):
        demonstrator = make_planner("faithful", env.world, seed=seed)
        demonstrator.planned_rooms.update(range(len(env.world.rooms)))
        target = demonstrator.plan(env.world)[3].removeprefix("go to ")
        again = make_planner("faithful", env.world, seed=seed)
        again.planned_rooms.update(range(len(env.world.rooms)))
        assert again.plan(env.world)[3] == f"go to {target}"  # same seed, same choice
        chosen[target] += 1
    assert set(chosen) == DRYER_CORRECT and min(chosen.values()) > 60  # ~100 each of 300


def test_plans_are_written_as_the_papers_fine_tuning_pairs(data_dir):
    env = _world({"hair_dryer_1": "bathroom 0 bathtub 14"})
    demonstrator = make_planner("faithful", env.world)
    golden = [
        json.loads(line)["messages"][2]["content"]
        for line in (data_dir / "llm_personalize/il_pairs_pomaria_2_train.jsonl").read_text().splitlines()
    ]
    rooms = format_plan(demonstrator.plan(env.world))
    assert rooms == "go to bathroom 0\nstep 2: go to bedroom 0\nstep 3: go to corridor 0" and rooms in golden
    _run(env, ROOMS)
    assert OBJECT_PLAN.match(format_plan(demonstrator.plan(env.world)))


def test_the_faithful_expert_plays_whole_plans_and_records_each_planning_call():
    env = gym.make("Housekeep-Text-LLMPersonalize-v0").unwrapped
    expert = env.expert()
    assert expert.mode == "faithful"
    obs, info = env.reset(seed=3)
    expert.reset(obs, info)
    terminated = truncated = False
    while not (terminated or truncated):
        obs, _, terminated, truncated, info = env.step(expert.act(obs, info))
        assert info["action_succeeded"], info["feedback"]
    metrics = info["episode_metrics"]
    assert terminated and metrics["episode_success"] and metrics["success_rate"] == 1.0
    texts, plans = zip(*expert.plans, strict=True)
    assert plans[0] == [f"go to {env.world.rooms[k].name}" for k in env.world.room_order]
    assert plans[-1] == [MISSION_COMPLETE] and len(plans) == metrics["misplaced_objects_start"] + 2
    assert texts[0].startswith("You are holding nothing.")


def test_demonstration_pairs_in_faithful_mode():
    env = HousekeepTextEnv(scenes=list(LLM_PERSONALIZE_SCENES), episode_source="llm_personalize")
    pairs = demonstration_pairs(env, seed=0, options={"scene": "Pomaria_2_int", "episode_index": 30}, mode="faithful")
    plans = [p[2]["content"] for p in pairs]
    misplaced = len(env.world.misplaced_at_start)
    assert [bool(OBJECT_PLAN.match(p)) for p in plans] == [False] + [True] * misplaced + [False]
    assert plans[-1] == MISSION_COMPLETE


def test_the_faithful_demonstrator_solves_the_papers_original_episodes():
    """Every episode of Merom_1 and Pomaria_2 (the paper scenes with original files): every planned step
    succeeds and every misplaced object ends correct (the sweep finds every object in this world)."""
    env = HousekeepTextEnv(scenes=["Merom_1_int", "Pomaria_2_int"], episode_source="llm_personalize")
    moved = misplaced = 0
    for scene in ("Merom_1_int", "Pomaria_2_int"):
        for index in range(100):
            env.reset(seed=0, options={"scene": scene, "episode_index": index})
            world = env.world
            demonstrator = make_planner("faithful", world, seed=index)
            steps = []
            while steps != [MISSION_COMPLETE]:
                steps = demonstrator.plan(world)
                _run(env, steps)
            misplaced += len(world.misplaced_at_start)
            moved += world.rearranged_count
    assert misplaced > 600 and moved == misplaced


def test_the_papers_split_is_index_mod_25_below_5():
    test = paper_split_indices("test")
    assert test == (0, 1, 2, 3, 4, 25, 26, 27, 28, 29, 50, 51, 52, 53, 54, 75, 76, 77, 78, 79)
    assert sorted(test + paper_split_indices("train")) == list(range(100))
    for split in ("train", "test"):
        env = gym.make("Housekeep-Text-LLMPersonalize-v0", split=split)
        for seed in range(30):
            _, info = env.reset(seed=seed)
            assert (info["episode_id"] % 25 < 5) == (split == "test"), (split, seed, info["episode_id"])


def test_episode_origins_and_original_files():
    assert {s: llm_personalize_origin(s) for s in LLM_PERSONALIZE_SCENES} == {
        "Pomaria_1_int": "generated",
        "Merom_1_int": "original",
        "Pomaria_2_int": "original",
        "Rs_int": "generated",
    }
    env = gym.make("Housekeep-Text-LLMPersonalize-v0")
    _, info = env.reset(seed=0, options={"scene": "Merom_1_int", "episode_index": 7})
    assert info["episode_origin"] == "original" and info["episode_id"] == 7
    _, info = env.reset(seed=0, options={"scene": "Rs_int", "episode_index": 7})
    assert info["episode_origin"] == "generated" and info["episode_id"] == 7


def _digest(scene: str, index: int) -> str:
    return hashlib.sha256(repr(llm_personalize_episode(scene, index)).encode()).hexdigest()


def test_generated_episodes_depend_on_scene_and_index_alone_in_every_process():
    code = (
        "from textenvs.envs.housekeep.sampling import llm_personalize_episode as e; import hashlib; "
        "print(hashlib.sha256(repr(e('Rs_int', 11)).encode()).hexdigest())"
    )
    other = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout.strip()
    assert other == _digest("Rs_int", 11) != _digest("Rs_int", 12)


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        ({"split": "val"}, r"split \(LLM-Personalize's episode split\).*train.*test"),
        ({"objects_split": "unseen"}, "objects_split='seen'"),
        ({"expert_mode": "nearest"}, "expert_mode.*efficient.*faithful"),
    ],
)
def test_bad_arguments_are_refused(kwargs, match):
    with pytest.raises(ValueError, match=match):
        gym.make("Housekeep-Text-LLMPersonalize-v0", **kwargs)


def test_an_episode_index_out_of_range_is_refused():
    env = gym.make("Housekeep-Text-LLMPersonalize-v0")
    with pytest.raises(ValueError, match=r"episode_index=100 is out of range 0\.\.99"):
        env.reset(seed=0, options={"scene": "Rs_int", "episode_index": 100})


def test_demonstrator_without_reset_is_an_error():
    env = gym.make("Housekeep-Text-LLMPersonalize-v0").unwrapped
    obs, info = env.reset(seed=0)
    with pytest.raises(RuntimeError, match="call reset"):
        env.expert().act(obs, info)
    assert isinstance(make_planner("faithful", env.world), Demonstrator)
