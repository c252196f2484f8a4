"""The step's caches (views per agent pose, captions per view) give minigrid's view and GLAM's caption."""

from __future__ import annotations

import gymnasium as gym
import numpy as np
import pytest
from minigrid.core.world_object import Ball, Key

import textenvs  # noqa: F401
from textenvs.envs.babyai_text import caption_view
from textenvs.envs.babyai_text.captioner import cached_caption
from textenvs.envs.babyai_text.env import COMMANDS


def fresh_view(level) -> np.ndarray:
    """minigrid's encoding of the current state, computed anew (no cache involved)."""
    grid, vis_mask = level.gen_obs_grid()
    return grid.encode(vis_mask)


@pytest.mark.filterwarnings("ignore:BabyAIBot failed")  # a random toggle opens the box the expert looks for
@pytest.mark.parametrize("level", ["BlockedUnlockPickup", "UnlockPickup", "PutNextLocal", "UnlockLocal"])
def test_every_step_sees_the_current_grid(level):
    """Half expert, half random actions: doors open, keys and balls are picked up and dropped, boxes
    opened, and the view and text after every step are those of the current state."""
    env = gym.make(f"BabyAI-Text-{level}-v0")
    rng = np.random.default_rng(0)
    changes = 0
    for seed in range(3):
        obs, info = env.reset(seed=seed)
        expert = env.unwrapped.expert()
        expert.reset(obs, info)
        for _ in range(120):
            level_ = env.unwrapped.level
            before = (level_.carrying, level_.grid.encode().tobytes())
            suggested = expert.act(obs, info)
            command = suggested if rng.random() < 0.5 else COMMANDS[rng.integers(len(COMMANDS))]
            obs, _, terminated, truncated, info = env.step(command)
            changes += before != (level_.carrying, level_.grid.encode().tobytes())
            view = fresh_view(level_)
            assert np.array_equal(env.unwrapped.view, view)
            assert info["descriptions"] == caption_view(view, level_.carrying)
            assert obs["text"] == "\n".join(info["descriptions"])
            if terminated or truncated:
                break
    assert changes >= 5, "the actions should have changed the grid or the carried object a few times"


def test_a_pose_seen_again_reuses_its_view_until_the_grid_changes():
    env = gym.make("BabyAI-Text-GoToLocal-v0")
    env.reset(seed=0)
    env.step("turn left")
    first = env.unwrapped.view
    assert not first.flags.writeable
    for _ in range(4):
        env.step("turn left")
    assert env.unwrapped.view is first  # the same pose: minigrid's view was not encoded again
    level = env.unwrapped.level
    level.grid.set(*level.front_pos, Ball("red"))  # what "pick up" / "drop" / "toggle" would do ...
    env.step("toggle")  # ... so a toggle in front of an object forgets the views
    for _ in range(4):
        env.step("turn left")
    assert env.unwrapped.view is not first
    assert np.array_equal(env.unwrapped.view, fresh_view(level))
    assert "You see a red ball 1 step forward" in env.unwrapped.describe()


def test_outside_a_step_gen_obs_is_minigrids():
    env = gym.make("BabyAI-Text-GoToLocal-v0")
    env.reset(seed=0)
    env.step("turn left")
    obs = env.unwrapped.level.gen_obs()
    assert obs["image"] is not env.unwrapped.view and obs["image"].flags.writeable
    assert np.array_equal(obs["image"], env.unwrapped.view)


def test_cached_caption_is_caption_view_with_a_fresh_list_and_the_same_text():
    env = gym.make("BabyAI-Text-GoToLocal-v0")
    env.reset(seed=4)
    view = env.unwrapped.view.copy()
    sentences, text = cached_caption(view)
    again, text_again = cached_caption(view.copy())
    assert sentences == again == caption_view(view) and text == "\n".join(sentences)
    assert again is not sentences and text_again is text
    sentences.append("changed by the caller")
    assert cached_caption(view)[0] == caption_view(view)
    carrying, _ = cached_caption(view, Key("blue"))
    assert carrying == ["You carry a blue key", *caption_view(view)]
