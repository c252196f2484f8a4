"""Loaders and the correct-receptacle rule, against Housekeep's own files."""

from __future__ import annotations

import json
import re

import numpy as np
import pytest

from textenvs.envs.housekeep.annotations import all_scenes, load_annotations, load_splits
from textenvs.envs.housekeep.env import HousekeepTextEnv
from textenvs.envs.housekeep.episodes import load_original_episodes, scenes_with_original_episodes
from textenvs.envs.housekeep.scenes import load_scene


def test_annotations_match_their_text_listings(data_dir):
    annotations = load_annotations()
    assert annotations.ranks.shape == (128, 269, 10)
    objects = (data_dir / "housekeep/amt/objects.txt").read_text().split()
    pairs = (data_dir / "housekeep/amt/room_recep.txt").read_text().splitlines()
    assert list(annotations.objects) == objects
    assert [p.replace("_", " ") for p in annotations.pairs] == [p.replace("_", " ") for p in pairs if p]


def test_splits_have_housekeeps_sizes():
    splits = load_splits()
    assert {k: len(v) for k, v in splits.scenes.items()} == {"train": 8, "val": 2, "test": 4}
    objects = [set(v) for v in splits.objects.values()]
    assert sum(len(o) for o in objects) == 269 and len(set.union(*objects)) == 269
    assert len(all_scenes()) == 14


def test_unknown_scene_names_the_valid_ones():
    with pytest.raises(ValueError, match="Pomaria_2_int") as error:
        load_scene("Pomaria_9_int")
    assert "Pomaria_9_int" in str(error.value)


def test_receptacles_without_a_pair_are_reported():
    unpaired = load_scene("Pomaria_2_int").unpaired_receptacles()
    assert "bathroom_0-shower_24_0.urdf" in unpaired  # no bathroom|shower annotation
    assert "bathroom_0-bathtub_14_0.urdf" not in unpaired
    assert "None-window_27_0.urdf" in unpaired


def _golden_names(data_dir) -> set[str]:
    names = set()
    for path in sorted((data_dir / "llm_personalize").glob("*_pairs_*.jsonl")):
        for line in path.read_text().splitlines():
            user = json.loads(line)["messages"][1]["content"]
            for listing in re.findall(r"found receptacles: ([^.]*)\.", user):
                names.update(listing.split(", "))
    return names


def test_receptacle_names_are_llm_personalizes(data_dir):
    ours = {r.name for r in load_scene("Pomaria_2_int").receptacles}
    golden = _golden_names(data_dir)
    assert len(golden) > 20 and golden <= ours, sorted(golden - ours)


@pytest.fixture(scope="session")
def original_episodes():
    return {scene: load_original_episodes(scene) for scene in scenes_with_original_episodes()}


def _rule_matrix(scene_name: str) -> tuple[dict[str, int], np.ndarray]:
    """[scene receptacle, object category]: whether our rule calls the pair correct."""
    scene, annotations = load_scene(scene_name), load_annotations()
    rule = np.zeros((len(scene.receptacles), len(annotations.objects)), dtype=bool)
    for i, rec in enumerate(scene.receptacles):
        if rec.pairs:
            rule[i] = annotations.correct[list(rec.pairs)].any(0)
    return scene.receptacle_index, rule


def test_correct_receptacle_rule_agrees_with_end_matrix(original_episodes):
    annotations = load_annotations()
    agree = total = 0
    for scene_name, episodes in original_episodes.items():
        index, rule = _rule_matrix(scene_name)
        for episode in episodes:
            rows = np.array([index.get(k, -1) for k in episode.receptacles])
            columns = np.array([annotations.object_index[c] for c in episode.categories])
            ours = np.where(rows[:, None] >= 0, rule[rows][:, columns], False)
            theirs = np.zeros_like(ours)
            for obj, correct in enumerate(episode.correct):
                theirs[list(correct), obj] = True
            agree += int((ours == theirs).sum())
            total += ours.size
    assert total > 1_000_000
    assert agree / total >= 0.99, agree / total


def test_original_counts_per_file(original_episodes):
    counts = {scene: len(episodes) for scene, episodes in original_episodes.items()}
    assert len(counts) == 9 and counts["Pomaria_2_int"] == 1000 and counts["Ihlen_1_int"] == 200


@pytest.mark.parametrize("scene", ["Pomaria_2_int", "Merom_0_int", "Ihlen_1_int"])
def test_replay_starts_from_the_start_matrix(scene, original_episodes):
    env = HousekeepTextEnv(scenes=[scene], split=load_splits().scene_split(scene), episode_source="original")
    for index in (0, 17, len(original_episodes[scene]) - 1):
        env.reset(seed=0, options={"scene": scene, "episode_index": index})
        episode, world = original_episodes[scene][index], env.unwrapped.world
        assert world.object_keys == list(episode.objects)
        started = [world.receptacles[loc].key for loc in world.location]
        assert started == [episode.receptacles[s] for s in episode.start]
        for obj, correct in enumerate(episode.correct):
            assert {world.receptacles[r].key for r in world.correct[obj]} == {
                episode.receptacles[r] for r in correct if episode.receptacles[r] in load_scene(scene).receptacle_index
            }


def test_original_episodes_of_a_scene_without_a_file_are_refused():
    with pytest.raises(ValueError, match="Pomaria_2_int"):
        load_original_episodes("Rs_int")
    with pytest.raises(ValueError, match="unknown Housekeep scene 'Nowhere_int'; valid scenes: Beechwood_0_int"):
        load_original_episodes("Nowhere_int")
