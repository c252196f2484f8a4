"""The episode generator against the statistics of Housekeep's original episode files."""

from __future__ import annotations

from collections import Counter

import numpy as np
import pytest

from textenvs.envs.housekeep.annotations import load_splits
from textenvs.envs.housekeep.episodes import Episode, load_original_episodes, scenes_with_original_episodes
from textenvs.envs.housekeep.generator import generate_episode
from textenvs.envs.housekeep.scenes import load_scene

EPISODES_PER_SCENE = 200
#: About three standard errors of a share estimated from a few hundred episodes on each side.
TOLERANCE = 0.1


def statistics(episodes: list[Episode]) -> dict[str, float]:
    """Shares of object and misplaced counts, of receptacles holding two objects, of misplaced objects
    starting in a room with none of their correct receptacles; and the most objects on one receptacle."""
    objects = Counter(len(e.objects) for e in episodes)
    misplaced = Counter(len(e.misplaced) for e in episodes)
    loads: Counter[int] = Counter()
    other_room = []
    for episode in episodes:
        scene = load_scene(episode.scene)
        loads.update(Counter(episode.start).values())
        index = scene.receptacle_index
        room = [scene.receptacles[index[k]].room if k in index else None for k in episode.receptacles]
        other_room += [room[episode.start[o]] not in {room[c] for c in episode.correct[o]} for o in episode.misplaced]
    n = len(episodes)
    stats = {f"objects={k}": objects[k] / n for k in (7, 8, 9, 10)}
    stats.update({f"misplaced={k}": misplaced[k] / n for k in (3, 4, 5)})
    stats["two_objects_share"] = loads[2] / sum(loads.values())
    stats["misplaced_in_other_room"] = float(np.mean(other_room))
    stats["max_per_receptacle"] = max(loads)
    return stats


@pytest.mark.parametrize("split", ["train", "val", "test"])
def test_generated_episodes_match_the_originals(split):
    scenes = [s for s in load_splits().scenes[split] if s in scenes_with_original_episodes()]
    original = [e for s in scenes for e in load_original_episodes(s)]
    rng = np.random.default_rng(0)
    generated = [generate_episode(s, split, "seen", rng, i) for s in scenes for i in range(EPISODES_PER_SCENE)]
    ours, theirs = statistics(generated), statistics(original)
    assert ours["max_per_receptacle"] == theirs["max_per_receptacle"] == 2
    for key in ours:
        assert abs(ours[key] - theirs[key]) <= TOLERANCE, (split, key, ours[key], theirs[key])


def test_generation_is_seeded():
    first = generate_episode("Rs_int", "train", "seen", np.random.default_rng(5))
    again = generate_episode("Rs_int", "train", "seen", np.random.default_rng(5))
    other = generate_episode("Rs_int", "train", "seen", np.random.default_rng(6))
    assert first == again and first != other


@pytest.mark.parametrize(("split", "objects_split", "pool"), [("val", "unseen", "val"), ("val", "seen", "train")])
def test_object_splits(split, objects_split, pool):
    allowed = set(load_splits().objects[pool])
    rng = np.random.default_rng(1)
    for i in range(20):
        episode = generate_episode("Merom_1_int", split, objects_split, rng, i)
        assert set(episode.categories) <= allowed


def test_every_object_and_a_correct_receptacle_are_reachable():
    scene = load_scene("Wainscott_0_int")
    rng = np.random.default_rng(2)
    for i in range(30):
        episode = generate_episode(scene.name, "train", "seen", rng, i)
        rooms = [scene.receptacles[scene.receptacle_index[k]].room for k in episode.receptacles]
        assert all(rooms[s] is not None for s in episode.start)
        assert all(any(rooms[c] is not None for c in correct) for correct in episode.correct)
        assert 3 <= len(episode.misplaced) <= 5 and 7 <= len(episode.objects) <= 10


def test_bad_split_names_raise_with_the_valid_ones():
    with pytest.raises(ValueError, match="'train', 'val', 'test'"):
        generate_episode("Rs_int", "dev", "seen", np.random.default_rng(0))
