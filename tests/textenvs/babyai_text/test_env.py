"""BabyAITextEnv on top of minigrid: same episodes, commands, reward, pixels and metrics."""

from __future__ import annotations

import gymnasium as gym
import minigrid  # noqa: F401
import numpy as np
import pytest

import textenvs  # noqa: F401
from textenvs.envs.babyai_text.env import COMMANDS


def raw_and_text(level: str = "GoToLocal", **kwargs):
    raw = gym.make(f"BabyAI-{level}-v0").unwrapped
    text = gym.make(f"BabyAI-Text-{level}-v0", **kwargs)
    return raw, text


@pytest.mark.parametrize("level", ["GoToLocal", "PutNextLocal", "Open"])
def test_same_seed_same_episode_as_raw_minigrid(level):
    """The env's RNG drives minigrid's generator, so a seed gives minigrid's own episode and steps."""
    raw, text = raw_and_text(level)
    rng = np.random.default_rng(0)
    for seed in (0, 7):
        raw_obs, _ = raw.reset(seed=seed)
        obs, _ = text.reset(seed=seed)
        assert obs["mission"] == raw_obs["mission"] and obs["direction"] == raw_obs["direction"]
        for _ in range(40):
            action = int(rng.integers(len(COMMANDS)))
            raw_obs, raw_reward, raw_term, raw_trunc, _ = raw.step(action)
            obs, reward, term, trunc, _ = text.step(COMMANDS[action])
            assert np.array_equal(text.unwrapped.view, raw_obs["image"])
            assert (reward, term, trunc) == (raw_reward, raw_term, raw_trunc)
            if term or trunc:
                break


def test_commands_are_minigrids_actions_and_discrete_mode_matches():
    text = gym.make("BabyAI-Text-GoToLocal-v0")
    discrete = gym.make("BabyAI-Text-GoToLocal-v0", action_mode="discrete")
    assert discrete.action_space == gym.spaces.Discrete(6)
    text.reset(seed=1)
    discrete.reset(seed=1)
    for index, command in enumerate(["turn left", "go forward", "Turn Right", "forward", "pick up", "toggle"]):
        obs, *_ = text.step(command)
        obs_discrete, *_ = discrete.step([0, 2, 1, 2, 3, 5][index])
        assert obs == obs_discrete
    assert text.unwrapped.last_action == 5


def test_invalid_command_is_minigrids_done_action_and_costs_a_step():
    env = gym.make("BabyAI-Text-GoToLocal-v0")
    env.reset(seed=2)
    level = env.unwrapped.level
    before = (tuple(level.agent_pos), level.agent_dir, env.unwrapped.describe())
    obs, *_, info = env.step("jump over the wall")
    assert info["invalid_action"] and "turn left" in info["feedback"]
    assert env.unwrapped.last_action == 6 and level.step_count == 1
    assert (tuple(level.agent_pos), level.agent_dir, obs["text"]) == before


def test_reward_and_episode_metrics_on_success():
    env = gym.make("BabyAI-Text-GoToLocal-v0")
    expert = env.unwrapped.expert()
    obs, info = env.reset(seed=5)
    expert.reset(obs, info)
    total, steps = 0.0, 0
    while True:
        obs, reward, terminated, truncated, info = env.step(expert.act(obs, info))
        total, steps = total + reward, steps + 1
        if terminated or truncated:
            break
    max_steps = env.unwrapped.level.max_steps
    assert terminated and info["success"] and info["progression"] == 1.0
    assert reward == pytest.approx(1 - 0.9 * steps / max_steps)
    assert info["episode_metrics"] == {"success": True, "steps": steps, "reward": pytest.approx(total)}


def test_truncation_reports_failure_metrics():
    env = gym.make("BabyAI-Text-GoToLocal-v0")
    env.reset(seed=0)
    for _ in range(env.unwrapped.level.max_steps):
        _, reward, terminated, truncated, info = env.step("turn left")
    assert truncated and not terminated and reward == 0
    assert info["episode_metrics"] == {"success": False, "steps": 64, "reward": 0.0}


def test_pixels_are_minigrids_renderings():
    env = gym.make("BabyAI-Text-GoToLocal-v0", obs_mode="text+pixels")
    obs, _ = env.reset(seed=4)
    level = env.unwrapped.level
    assert obs["image"].shape == (224, 224, 3)
    assert np.array_equal(obs["image"], level.get_pov_render(32))
    assert "text" in obs and "image" not in gym.make("BabyAI-Text-GoToLocal-v0").reset(seed=4)[0]


def test_full_view_is_padded_to_the_largest_grid_of_the_level():
    env = gym.make("BabyAI-Text-MixedTrainLocal-v0", obs_mode="pixels", pixel_view="full", tile_size=8)
    assert env.observation_space["image"].shape == (64, 120, 3)
    widths = set()
    for seed in range(12):
        obs, _ = env.reset(seed=seed)
        level = env.unwrapped.level
        widths.add(level.width)
        frame = level.get_full_render(True, 8)
        assert obs["image"].shape == (64, 120, 3) and "text" not in obs
        assert np.array_equal(obs["image"][:, : frame.shape[1]], frame)
        assert not obs["image"][:, frame.shape[1] :].any()
    assert widths == {8, 15}


def test_direction_is_minigrids_agent_direction():
    env = gym.make("BabyAI-Text-GoToLocal-v0")
    obs, _ = env.reset(seed=3)
    for _ in range(5):
        assert obs["direction"] == env.unwrapped.level.agent_dir
        obs, *_ = env.step("turn right")


def test_ansi_render_shows_mission_and_caption():
    env = gym.make("BabyAI-Text-GoToLocal-v0", render_mode="ansi")
    obs, _ = env.reset(seed=0)
    assert env.render() == f"Mission: {obs['mission']}\n{obs['text']}"


def test_task_kind_per_instance_through_gym_make():
    env = gym.make("BabyAI-Text-MixedTrainLocal-v0", task_kind_per_instance=True)
    kinds = set()
    for seed in range(8):
        env.reset(seed=seed)
        kinds.add(env.unwrapped.level.task_kind)
    assert len(kinds) == 1


@pytest.mark.parametrize("level", ["GoToLocal", "MixedTrainLocal", "PickUp-RedBall-S20"])
def test_max_steps_fixes_the_episode_length(level):
    env = gym.make(f"BabyAI-Text-{level}-v0", max_steps=5)
    env.reset(seed=0)
    for _ in range(5):
        *_, truncated, info = env.step("turn left")
    assert truncated and info["episode_metrics"]["steps"] == 5
    with pytest.raises(ValueError, match="max_steps=0"):
        gym.make(f"BabyAI-Text-{level}-v0", max_steps=0)
