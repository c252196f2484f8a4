"""The env contract, arguments, text styles and the LLM-Personalize prompt format (golden pairs)."""

from __future__ import annotations

import json

import gymnasium as gym
import numpy as np
import pytest

import textenvs  # noqa: F401  (registers the ids)
from textenvs import testing as kit
from textenvs.envs.housekeep import captioner
from textenvs.envs.housekeep.captioner import RoomView, format_context
from textenvs.envs.housekeep.env import HousekeepTextEnv
from textenvs.envs.housekeep.prompts import chat_messages

IDS = ("Housekeep-Text-v0", "Housekeep-Text-LLMPersonalize-v0")
PROMPT_PREFIX = "There are objects misplaced on wrong receptacles and potentially in the wrong room. \n"


@pytest.mark.parametrize("env_id", IDS)
@pytest.mark.parametrize("action_mode", ["text", "discrete"])
def test_contract_kit(env_id, action_mode):
    kit.check_gymnasium_api(env_id, action_mode=action_mode)
    kit.check_info_keys(env_id, action_mode=action_mode)
    kit.check_garbage_actions(env_id, action_mode=action_mode)
    kit.check_obs_modes_agree(env_id, action_mode=action_mode)
    kit.check_render_modes(env_id, action_mode=action_mode)
    kit.check_vector_env(env_id, action_mode=action_mode)
    result = kit.check_expert_episode(env_id, action_mode=action_mode)
    assert result.metrics["episode_success"]


def test_determinism_across_processes():
    kit.check_determinism_across_processes(IDS)


def test_llm_personalize_id_uses_the_papers_scenes():
    env = gym.make("Housekeep-Text-LLMPersonalize-v0")
    assert [s.name for s in env.unwrapped.scenes] == ["Pomaria_1_int", "Merom_1_int", "Pomaria_2_int", "Rs_int"]


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        ({"scenes": ["Nowhere_int"]}, "valid scenes: Beechwood_0_int"),
        ({"split": "dev"}, "'train', 'val', 'test'"),
        ({"episode_source": "recorded"}, "'generated', 'original'"),
        ({"objects_split": "all"}, "'seen', 'unseen'"),
        ({"text_style": "prose"}, "'llm_personalize', 'ellm'"),
        ({"scenes": ["Rs_int"], "episode_source": "original"}, "scenes with original episodes"),
        ({"split": "train", "objects_split": "unseen"}, "needs split='val' or 'test'"),
    ],
)
def test_bad_arguments_name_the_valid_values(kwargs, match):
    with pytest.raises(ValueError, match=match):
        gym.make("Housekeep-Text-v0", **kwargs)


def test_discrete_index_is_the_ith_admissible_command():
    env = HousekeepTextEnv(action_mode="discrete")
    _, info = env.reset(seed=3)
    assert env.action_space.n >= len(info["admissible_commands"])
    target = (
        info["admissible_commands"].index("go to bathroom 0")
        if "go to bathroom 0" in info["admissible_commands"]
        else 0
    )
    chosen = info["admissible_commands"][target]
    _, _, _, _, info = env.step(target)
    assert info["feedback"] == f"You went to {chosen.removeprefix('go to ')}."
    _, _, _, _, info = env.step(len(info["admissible_commands"]))
    assert info["invalid_action"] and "not a valid action index" in info["feedback"]


def test_admissible_commands_all_succeed():
    env = HousekeepTextEnv()
    rng = np.random.default_rng(0)
    _, info = env.reset(seed=1)
    for _ in range(600):
        command = info["admissible_commands"][int(rng.integers(len(info["admissible_commands"])))]
        _, _, terminated, truncated, info = env.step(command)
        assert not info["invalid_action"] and info["action_succeeded"], (command, info["feedback"])
        world = env.world  # incrementally kept text and counts agree with a rebuild and a recount
        assert env.describe() == captioner.describe(world, 0, "llm_personalize")
        assert world.correct_count == sum(world.is_correct(i) for i in range(len(world.location)))
        recount = sum(world.is_correct(i) for i in world.misplaced_at_start) / len(world.misplaced_at_start)
        assert info["progression"] == recount
        if terminated or truncated:
            _, info = env.reset()


def test_ellm_style():
    env = HousekeepTextEnv(scenes=["Pomaria_2_int"], text_style="ellm")
    obs, _ = env.reset(seed=0)
    assert obs["text"] == "objects: none.receptacles: none.you are holding: nothing."
    obs = env.step("go to bedroom 0")[0]
    assert obs["text"].startswith("objects: ") and ".receptacles: bedroom bed, " in obs["text"]
    assert obs["text"].endswith(".you are holding: nothing.")


def test_image_is_a_floor_plan():
    env = HousekeepTextEnv(obs_mode="text+pixels")
    obs, _ = env.reset(seed=0)
    before = obs["image"]
    assert (
        before.shape == (128, 128, 3) and before.dtype == np.uint8 and len(np.unique(before.reshape(-1, 3), axis=0)) > 3
    )
    after = env.step("go to " + env.world.rooms[-1].name)[0]["image"]
    assert not np.array_equal(before, after)  # a room lights up once visited, the robot moves


def _golden_pairs(data_dir):
    for name, first_step in (("il_pairs_pomaria_2_train.jsonl", True), ("st_iter1_pairs_pomaria_2_train.jsonl", False)):
        for line in (data_dir / "llm_personalize" / name).read_text().splitlines():
            yield json.loads(line)["messages"], first_step


def _parse_context(context: str) -> tuple[str, list[RoomView]]:
    holding_line, rooms_text = context.split("\n", 1)
    rooms = []
    for line in rooms_text.split(" \n"):
        head, _, rest = line.partition(", ")
        name = head.removeprefix("In ")
        if rest.startswith("no receptacles found yet."):
            receptacles, objects_text = [], rest.removeprefix("no receptacles found yet.")
        else:
            listing, _, objects_text = rest.removeprefix("found receptacles: ").partition(".")
            receptacles = listing.split(", ")
        objects = [tuple(o.removeprefix("Object ").split(" found on ")) for o in objects_text.strip().split(". ") if o]
        rooms.append(RoomView(name, receptacles, objects))
    return holding_line.removeprefix("You are holding ").removesuffix("."), rooms


def test_context_and_prompt_reproduce_the_fine_tuning_pairs(data_dir):
    count = 0
    for messages, first_step in _golden_pairs(data_dir):
        user = messages[1]["content"]
        context = user[len(PROMPT_PREFIX) : user.index(". \nGive me")]
        holding, rooms = _parse_context(context)
        ours = format_context(holding, rooms)
        assert ours == context
        assert chat_messages(ours, messages[2]["content"], first_step) == messages
        count += 1
    assert count == 135


def test_observation_is_in_the_papers_context_format(data_dir):
    env = HousekeepTextEnv(scenes=["Pomaria_2_int"])
    obs, _ = env.reset(seed=0)
    for room in ("go to bathroom 0", "go to bedroom 0", "go to corridor 0"):
        obs = env.step(room)[0]
    holding, rooms = _parse_context(obs["text"])
    assert format_context(holding, rooms) == obs["text"]
    assert [r.name for r in rooms] == ["bathroom 0", "bedroom 0", "corridor 0"]
    assert rooms[2].receptacles == ["corridor 0 plant 0"]  # as in the golden contexts


@pytest.mark.parametrize("objects_split", ["seen", "unseen"])
def test_original_val_episodes_follow_objects_split(objects_split):
    from textenvs.envs.housekeep.annotations import load_splits

    train = set(load_splits().objects["train"])
    env = HousekeepTextEnv(split="val", episode_source="original", objects_split=objects_split)
    for seed in range(10):
        env.reset(seed=seed)
        assert (
            set(env.episode.categories) <= train
            if objects_split == "seen"
            else not set(env.episode.categories) <= train
        )


@pytest.mark.parametrize("text_style", ["llm_personalize", "ellm"])
def test_text_space_holds_a_fully_explored_house_with_the_longest_names(text_style):
    from textenvs.envs.housekeep.annotations import all_scenes, load_annotations
    from textenvs.envs.housekeep.episodes import Episode
    from textenvs.envs.housekeep.scenes import load_scene

    longest = sorted(load_annotations().objects, key=len)[-10:]
    env = HousekeepTextEnv(scenes=list(all_scenes()), text_style=text_style)
    for scene in env.scenes:
        keys = [scene.receptacles[i].key for i in scene.reachable]
        longest_receptacle = max(range(len(keys)), key=lambda i: len(scene.receptacles[scene.reachable[i]].name))
        episode = Episode(
            scene=scene.name,
            episode_id=0,
            receptacles=tuple(keys),
            objects=tuple(f"{c}_1" for c in longest),
            categories=tuple(longest),
            start=(longest_receptacle,) * len(longest),
            correct=((0,),) * len(longest),
            robot_start=scene.rooms[0].center,
        )
        obs, _ = env.reset(seed=0, options={"episode": episode})
        for room in load_scene(scene.name).rooms:
            obs = env.step(f"go to {room.name}")[0]
        assert obs["text"].count("found on") == (10 if text_style == "llm_personalize" else 0)
        assert len(obs["text"]) <= env.observation_space["text"].max_length
