"""Crafter-Text env behaviour: commands, modes, rewards, episode ends, tasks, faithfulness to crafter."""

from __future__ import annotations

import gymnasium as gym
import numpy as np
import pytest

import textenvs
from textenvs.envs.crafter_text import ACHIEVEMENTS, COMMANDS, TASKS

crafter = pytest.importorskip("crafter")

from textenvs.envs.crafter_text.env import CrafterTextEnv  # noqa: E402


@pytest.fixture(scope="module")
def env():
    env = CrafterTextEnv(length=500)
    env.reset(seed=3)
    return env


def test_ids_are_registered():
    assert textenvs.registered_ids("crafter_text") == [
        "Crafter-Text-v0",
        *(f"Crafter-Text-{name}-v0" for name in TASKS),
        "Crafter-Text-ELLM-v0",
        "Crafter-Text-ELLM-Hard-v0",
    ]


@pytest.mark.parametrize(
    ("spelling", "facing"),
    [
        ("Move West", (-1, 0)),
        ("move east", (1, 0)),
        ("MOVE_UP", (0, -1)),
        ("move_south", (0, 1)),
        ("move left", (-1, 0)),
        ("Move Down", (0, 1)),
    ],
)
def test_commands_are_case_insensitive_with_crafter_compass_and_ellm_aliases(env, spelling, facing):
    _obs, _r, _t, _tr, info = env.step(spelling)
    assert not info["invalid_action"]
    assert tuple(env.game.player.facing) == facing


def test_every_command_is_admissible(env):
    assert env.admissible_commands() == list(COMMANDS)
    for command in COMMANDS:
        _obs, _r, _t, _tr, info = env.step(command)
        assert not info["invalid_action"] and info["admissible_commands"] == list(COMMANDS)


def test_an_invalid_command_is_a_noop_step_with_feedback(env):
    steps, pos = env.game.steps, list(env.game.player.pos)
    obs, _reward, _t, _tr, info = env.step("fly to the moon")
    assert info["invalid_action"] and "Move West" in info["feedback"]
    assert env.game.steps == steps + 1 and list(env.game.player.pos) == pos
    assert obs["text"].startswith("You took action noop.")


def test_discrete_mode_indexes_crafter_actions():
    env = CrafterTextEnv(action_mode="discrete")
    assert env.action_space == gym.spaces.Discrete(17)
    env.reset(seed=0)
    env.step(COMMANDS.index("Move North"))
    assert tuple(env.game.player.facing) == (0, -1)


def test_pixels_at_a_chosen_size_and_text_mode_never_renders(monkeypatch):
    env = CrafterTextEnv(obs_mode="text+pixels", image_size=(48, 90))
    obs, _ = env.reset(seed=0)
    assert obs["image"].shape == (48, 90, 3) and obs["image"].dtype == np.uint8
    assert env.observation_space.contains(obs)
    assert CrafterTextEnv(obs_mode="pixels").reset(seed=0)[0]["image"].shape == (64, 64, 3)

    text_only = CrafterTextEnv()

    def no_render(*args, **kwargs):
        raise AssertionError("text mode rendered a frame")

    monkeypatch.setattr(text_only.game, "render", no_render)
    obs, _ = text_only.reset(seed=0)
    for _ in range(20):
        obs, *_ = text_only.step("Do")
    assert "image" not in obs and obs["text"]


def test_night_frames_are_the_same_whenever_they_are_drawn():
    env = CrafterTextEnv(obs_mode="pixels")
    env.reset(seed=1)
    for _ in range(200):  # into the night, when crafter draws noise
        env.step("Noop")
    assert env.game.world.daylight < 0.5
    assert np.array_equal(env.render_image(), env.render_image())


def test_truncation_at_length_and_episode_metrics():
    env = CrafterTextEnv(length=5)
    env.reset(seed=0)
    for step in range(1, 6):
        _obs, _r, terminated, truncated, info = env.step("Noop")
        assert not terminated and truncated == (step == 5)
    metrics = info["episode_metrics"]
    assert metrics["length"] == 5 and metrics["num_achievements"] == 0 and metrics["return"] == 0.0
    assert set(metrics["achievements"]) == set(ACHIEVEMENTS) and metrics["progression"] == 0.0


def test_death_terminates():
    env = CrafterTextEnv()
    env.reset(seed=0)
    env.game.player.health = 0
    obs, reward, terminated, truncated, info = env.step("Noop")
    assert terminated and not truncated and "You died." in obs["text"]
    assert reward == pytest.approx(-0.9)  # crafter's reward: -0.1 per health point lost
    assert "episode_metrics" in info


def test_same_seed_same_world_and_different_seeds_differ():
    a, b = CrafterTextEnv(), CrafterTextEnv()
    first = a.reset(seed=11)[0]["text"]
    assert first == b.reset(seed=11)[0]["text"]
    assert np.array_equal(a.game.semantic(), b.game.semantic())
    b.reset(seed=12)
    assert not np.array_equal(a.game.semantic(), b.game.semantic())
    a.reset(seed=11)
    assert a.describe() == first  # a second reset with the seed gives the same world again


def test_the_game_is_stock_crafter(monkeypatch):
    """Before the first night (when crafter draws render noise), our game is ``crafter.Env``'s step for step,
    once stock crafter also balances each chunk's creatures in creation order instead of memory order."""
    stock = crafter.Env(seed=5)
    original_balance = stock._balance_chunk

    def balance_in_creation_order(chunk, objs):
        original_balance(chunk, sorted(objs, key=lambda obj: int(stock._world._obj_map[tuple(obj.pos)])))

    monkeypatch.setattr(stock, "_balance_chunk", balance_in_creation_order)
    stock.reset()
    env = CrafterTextEnv()
    env.reset(seed=0)
    env.game.start_episode(world_seed=hash((5, 1)) % (2**31 - 1), noise_seed=0)
    assert np.array_equal(stock._sem_view(), env.game.semantic())
    for action in np.random.default_rng(0).integers(0, 17, 140):  # night noise starts at step 148
        _o, stock_reward, _d, stock_info = stock.step(int(action))
        _o, reward, _t, _tr, info = env.step(COMMANDS[int(action)])
        assert np.array_equal(stock_info["semantic"], env.game.semantic())
        assert stock_info["inventory"] == info["inventory"] and stock_info["achievements"] == info["achievements"]
        assert stock_reward == pytest.approx(reward)


def test_caption_styles_and_balrog_info():
    ellm = CrafterTextEnv(caption_style="ellm")
    assert ellm.reset(seed=0)[0]["text"].startswith("you see ")
    balrog = CrafterTextEnv(caption_style="balrog")
    obs, info = balrog.reset(seed=0)
    assert obs["text"] == f"{info['long_term_context']}\n\n{info['short_term_context']}"
    assert info["short_term_context"].startswith("Your status:")


def test_single_task_rewards_and_ends_on_its_achievement():
    env = gym.make("Crafter-Text-PlaceCraftingTable-v0", length=400)
    expert = env.unwrapped.expert()
    obs, info = env.reset(seed=0)
    expert.reset(obs, info)
    assert obs["mission"] == "Place a crafting table."
    rewards = []
    while True:
        obs, reward, terminated, truncated, info = env.step(expert.act(obs, info))
        rewards.append(reward)
        if terminated or truncated:
            break
    assert terminated and info["success"] and info["progression"] == 1.0
    assert rewards[-1] == 1.0 and sum(rewards) == 1.0  # collecting wood first earned nothing
    assert info["achievements"]["place_table"] == 1


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"task": "EatZombie"}, "'PlaceCraftingTable', 'MakeWoodPickaxe', 'CollectDrink', 'EatCow'"),
        ({"caption_style": "nle"}, "'smartplay', 'ellm', 'balrog'"),
        ({"length": 0}, "positive number of steps"),
        ({"image_size": 4}, "image_size=4"),
        ({"obs_mode": "audio"}, "'text', 'pixels', 'text\\+pixels'"),
    ],
)
def test_bad_arguments_name_the_valid_ones(kwargs, message):
    with pytest.raises(ValueError, match=message):
        CrafterTextEnv(**kwargs)


def test_unknown_kwarg_through_gym_make():
    with pytest.raises(TypeError, match="caption_style"):
        gym.make("Crafter-Text-v0", caption_styl="ellm")
