"""The Gymnasium envs (single and native vector) against the C++ traces, and their episode semantics."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import gymnasium as gym
import numpy as np
import pytest
from gymnasium.vector import AutoresetMode

import textenvs
from tests.textenvs.fastsim.golden import GOLDEN_ACTIONS, GOLDEN_CASES, GoldenTrace
from textenvs.envs.fastsim.vector_env import FastsimVectorEnv

IDS = {"hardmaze": "Fastsim-Text-HardMaze-v0", "household": "Fastsim-Text-Household-v0"}


def golden_sensors(golden: GoldenTrace) -> np.ndarray:
    """fastsim_gym's observation of the recorded C++ state: -1 => 100, clipped to [0, 100], bumpers."""
    lasers = np.where(golden.lasers < 0, 100.0, np.clip(golden.lasers, 0, 100))
    return np.concatenate([lasers, golden.flags[:, :2]], axis=1)


def assert_env_rows_match(what: str, poses, sensors, collisions, golden: GoldenTrace) -> None:
    poses, sensors, collisions = np.asarray(poses), np.asarray(sensors), np.asarray(collisions)
    expected = golden_sensors(golden)
    bad = (
        (np.abs(poses - golden.poses).max(axis=1) > 1e-4)
        | (np.abs(sensors[:, :3] - expected[:, :3]).max(axis=1) > 1e-3)
        | (sensors[:, 3:] != expected[:, 3:]).any(axis=1)
        | (collisions != golden.flags[:, 2])
    )
    assert not bad.any(), f"{what}: differs from the C++ first at t={int(np.argmax(bad)) - 1}"


@pytest.mark.parametrize(("stem", "layout", "actions"), GOLDEN_CASES)
def test_gym_env_reproduces_the_cpp_trace(golden_dir: Path, stem: str, layout: str, actions: str):
    golden = GoldenTrace(golden_dir, stem, actions)
    env = gym.make(IDS[layout], max_steps=len(golden.actions))
    obs, info = env.reset(seed=0)
    poses, sensors, collisions = [info["robot_pos"]], [obs["sensors"]], [info["collision"]]
    for action in golden.actions:
        obs, _reward, _terminated, truncated, info = env.step(action.astype(np.float32))
        poses.append(info["robot_pos"])
        sensors.append(obs["sensors"])
        collisions.append(info["collision"])
    assert truncated
    assert_env_rows_match(f"{IDS[layout]} {actions}", poses, sensors, collisions, golden)


@pytest.mark.parametrize("layout", ["hardmaze", "household"])
def test_native_vector_env_reproduces_the_cpp_traces_and_autoresets(golden_dir: Path, layout: str):
    stem = {"hardmaze": "maze_hard", "household": "maze_19_2"}[layout]
    goldens = [GoldenTrace(golden_dir, stem, name) for name in GOLDEN_ACTIONS]
    horizon = len(goldens[0].actions)
    vec = textenvs.make_vec(IDS[layout], len(goldens), max_steps=horizon)
    assert isinstance(vec.unwrapped, FastsimVectorEnv)
    obs, info = vec.reset(seed=0)
    reset_sensors = obs["sensors"].copy()
    rows = [(info["robot_pos"].copy(), obs["sensors"].copy(), info["collision"].copy())]
    for t in range(horizon):
        obs, rewards, terminated, truncated, info = vec.step(np.stack([g.actions[t] for g in goldens]))
        rows.append((info["robot_pos"].copy(), obs["sensors"].copy(), info["collision"].copy()))
    assert truncated.all() and not terminated.any()
    assert info["_bd"].all() and np.array_equal(info["bd"], info["robot_pos"][:, :2])
    for k, golden in enumerate(goldens):
        poses, sensors, collisions = (np.array([row[c][k] for row in rows]) for c in range(3))
        assert_env_rows_match(f"vector {stem} robot {k}", poses, sensors, collisions, golden)
    obs, rewards, _terminated, truncated, info = vec.step(np.full((len(goldens), 2), 4.0))  # next-step autoreset
    assert np.array_equal(obs["sensors"], reset_sensors) and not rewards.any() and not truncated.any()
    assert not info["collision"].any()


@pytest.mark.parametrize("env_id", list(IDS.values()))
def test_vector_env_gives_what_single_envs_give(env_id: str):
    horizon = 20
    actions = np.random.default_rng(0).uniform(-4, 4, size=(horizon, 3, 2)).astype(np.float32)
    layout = gym.spec(env_id).kwargs["layout"]
    vec = FastsimVectorEnv(3, layout=layout, obs_mode="text+pixels", max_steps=horizon)
    singles = [gym.make(env_id, obs_mode="text+pixels", max_steps=horizon) for _ in range(3)]
    vec_obs, _ = vec.reset(seed=1)
    single_obs = [env.reset(seed=1)[0] for env in singles]
    for t in range(horizon):
        for k, obs in enumerate(single_obs):
            assert vec_obs["text"][k] == obs["text"] and vec_obs["mission"][k] == obs["mission"]
            assert np.array_equal(vec_obs["sensors"][k], obs["sensors"])
            assert np.array_equal(vec_obs["image"][k], obs["image"])
        vec_obs, vec_rewards, _, vec_truncated, vec_info = vec.step(actions[t])
        results = [env.step(actions[t, k]) for k, env in enumerate(singles)]
        single_obs = [r[0] for r in results]
        assert list(vec_rewards) == [r[1] for r in results] and list(vec_truncated) == [r[3] for r in results]
    assert list(vec_info["episode_metrics"]) == [r[4]["episode_metrics"] for r in results]
    assert list(vec_info["trajectory_annotation"]) == [r[4]["trajectory_annotation"] for r in results]


@pytest.mark.parametrize("env_id", list(IDS.values()))
def test_same_step_autoreset_equals_sync_vector_env(env_id: str):
    """Two episodes and a bit of three robots with ``autoreset_mode=SAME_STEP``: observations, rewards, ends,
    ``final_obs`` and the ending steps' metrics equal Gymnasium's SyncVectorEnv in the same mode."""
    horizon, mode = 12, AutoresetMode.SAME_STEP
    fast = textenvs.make_vec(env_id, 3, max_steps=horizon, autoreset_mode=mode)
    sync = textenvs.make_vec(env_id, 3, "sync", {"autoreset_mode": mode}, max_steps=horizon)
    assert fast.metadata["autoreset_mode"] == mode
    fast.reset(seed=4)
    sync.reset(seed=4)
    actions = np.random.default_rng(1).uniform(-4, 4, size=(2 * horizon + 3, 3, 2)).astype(np.float32)
    for t, action in enumerate(actions):
        (f_obs, f_rew, _, f_trunc, f_info), (s_obs, s_rew, _, s_trunc, s_info) = fast.step(action), sync.step(action)
        assert f_obs["text"] == s_obs["text"] and np.array_equal(f_obs["sensors"], s_obs["sensors"]), t
        assert np.array_equal(f_rew, s_rew) and np.array_equal(f_trunc, s_trunc), t
        assert ("final_obs" in f_info) == ("final_obs" in s_info) == bool(s_trunc.any()), t
        if s_trunc.any():
            for r in range(3):
                assert f_info["final_obs"][r]["text"] == s_info["final_obs"][r]["text"]
                assert np.array_equal(f_info["final_obs"][r]["sensors"], s_info["final_obs"][r]["sensors"])
                got, want = f_info["final_info"]["episode_metrics"][r], s_info["final_info"]["episode_metrics"]
                assert got["fitness"] == want["fitness"][r] and got["steps"] == want["steps"][r] == horizon
            assert f_info["progression"].tolist() == s_info["progression"].tolist()


def test_episode_end_reports_bd_annotation_and_metrics():
    env = gym.make("Fastsim-Text-Household-v0")
    env.reset(seed=0)
    for t in range(400):
        _obs, _reward, terminated, truncated, info = env.step(np.array([2.0, 2.0], np.float32))
        assert truncated == (t == 399) and not terminated
        assert ("trajectory_annotation" in info) == truncated
    assert info["bd"] == info["robot_pos"][:2] == info["episode_metrics"]["bd"]
    annotation = info["trajectory_annotation"]
    assert [a["timestep"] for a in annotation] == [*range(0, 400, 40), 399]
    assert annotation[-1]["pos"] == pytest.approx([info["bd"][0] / 3, 200 - info["bd"][1] / 3])
    assert all(a["colors"][0] in {"pink", "gray", "yellow", "orange", "white"} for a in annotation)
    assert set(info["episode_metrics"]) == {
        "bd",
        "fitness",
        "reached_goal",
        "task_solved",
        "final_distance_to_goal",
        "steps",
    }


def test_household_rounds_actions_to_a_tenth_and_hardmaze_does_not():
    household, hardmaze = gym.make(IDS["household"]), gym.make(IDS["hardmaze"])
    for env in (household, hardmaze):
        env.reset(seed=0)
    small = np.array([0.04, 0.04], np.float32)
    assert household.step(small)[4]["robot_pos"] == [60.0, 450.0, pytest.approx(np.pi / 4)]
    assert hardmaze.step(small)[4]["robot_pos"][0] > 60.0


def test_invalid_actions_stand_still_and_are_reported():
    env = gym.make(IDS["hardmaze"])
    _obs, info = env.reset(seed=0)
    _obs, reward, _terminated, _truncated, info2 = env.step("forward")
    assert info2["invalid_action"] and "2 wheel speeds" in info2["feedback"] and reward == 0
    assert info2["robot_pos"] == info["robot_pos"]


@pytest.mark.parametrize("action", [[np.nan, 1.0], np.array([2.0, np.nan], np.float32), (np.nan, np.nan)])
def test_a_nan_wheel_speed_is_an_invalid_action(action):
    env = gym.make(IDS["hardmaze"])
    _obs, info = env.reset(seed=0)
    _obs, _reward, _terminated, _truncated, info2 = env.step(action)
    assert info2["invalid_action"] and "2 wheel speeds" in info2["feedback"]
    assert info2["robot_pos"] == info["robot_pos"]


def test_vector_env_stands_a_robot_with_a_nan_action_still_as_the_single_env_does():
    vec, single = FastsimVectorEnv(2), gym.make(IDS["hardmaze"])
    vec.reset(seed=0)
    single.reset(seed=0)
    actions = np.array([[np.nan, 4.0], [4.0, 3.0]])
    _obs, _rewards, _terminated, _truncated, info = vec.step(actions)
    single_info = single.step(actions[0])[4]
    assert list(info["invalid_action"]) == [True, False]
    assert info["robot_pos"][0].tolist() == single_info["robot_pos"] == [60.0, 450.0, pytest.approx(np.pi / 4)]


def test_reaching_the_goal_pays_one_per_step_and_counts_as_success():
    env = gym.make(IDS["hardmaze"])
    _obs, info = env.reset(seed=0, options={"pose": (60.0, 62.0, 0.0)})
    assert not info["success"]
    _obs, reward, _terminated, _truncated, info = env.step(np.zeros(2, np.float32))
    assert reward == 1.0 and info["success"] and info["progression"] == 1.0


def test_bad_arguments_name_the_valid_values():
    with pytest.raises(ValueError, match="'hardmaze', 'household'"):
        gym.make("Fastsim-Text-HardMaze-v0", layout="kitchen")
    with pytest.raises(ValueError, match="max_steps"):
        gym.make("Fastsim-Text-HardMaze-v0", max_steps=0)
    env = gym.make("Fastsim-Text-HardMaze-v0")
    with pytest.raises(ValueError, match="valid options: 'pose'"):
        env.reset(options={"start": (1, 2, 3)})
    with pytest.raises(ValueError, match="three finite numbers"):
        env.reset(options={"pose": (1.0, float("nan"), 0.0)})


@pytest.mark.parametrize(
    "pose",
    [[1, [2], 3], (1, 2, 3j), (1, 2, None), "abc", (1e300, 0, 0), {"x": 1}, np.array([1, 2, 3], object), [[1, 2, 3]]],
)
@pytest.mark.parametrize("vector", [False, True])
def test_a_malformed_pose_is_refused_with_a_clear_error(pose, vector: bool):
    env = FastsimVectorEnv(2) if vector else gym.make(IDS["hardmaze"])
    with pytest.raises(ValueError, match="must be three finite numbers"):
        env.reset(options={"pose": pose})


@pytest.mark.parametrize("heading", [2.0**27, -1e9, 3e38])
def test_a_huge_starting_heading_is_normalised(heading: float):
    env = gym.make(IDS["hardmaze"])
    _obs, info = env.reset(options={"pose": (100.0, 100.0, heading)})
    assert -np.pi <= info["robot_pos"][2] <= np.pi
    angle = np.float64(np.float32(heading))
    assert info["robot_pos"][2] == pytest.approx(np.arctan2(np.sin(angle), np.cos(angle)), abs=1e-6)


def test_a_robot_placed_outside_the_map_sees_walls_everywhere_and_nothing_breaks():
    env = gym.make(IDS["hardmaze"])
    obs, _info = env.reset(options={"pose": (-300.0, 2000.0, 1.0)})
    for _ in range(3):
        obs, *_ = env.step(np.array([4.0, 4.0], np.float32))
    # as in libfastsim: its body reads the (free) last pixel, its lasers meet the outside at once
    assert env.observation_space.contains(obs) and (obs["sensors"][:3] < 5).all()


def test_image_shows_the_robot_where_it_is():
    env = gym.make(IDS["hardmaze"], obs_mode="pixels")
    obs, info = env.reset(seed=0)
    assert "text" not in obs and obs["image"].shape == (400, 400, 3)
    x, y, _theta = info["robot_pos"]
    assert tuple(obs["image"][round(y * 2 / 3), round(x * 2 / 3)]) == (30, 60, 220)


@pytest.mark.parametrize("env_id", list(IDS.values()))
def test_expert_reaches_the_goal_within_the_papers_400_steps(env_id: str):
    env = gym.make(env_id)
    expert = env.unwrapped.expert()
    obs, info = env.reset(seed=0)
    expert.reset(obs, info)
    for _ in range(400):
        action = expert.act(obs, info)
        assert env.action_space.contains(action)
        obs, _reward, _terminated, truncated, info = env.step(action)
    assert truncated and info["episode_metrics"]["reached_goal"] and info["episode_metrics"]["task_solved"]


def test_registration_imports_no_optional_dependency():
    code = (
        "import sys, textenvs, gymnasium as gym; "
        "assert 'Fastsim-Text-Household-v0' in gym.registry; "
        "assert 'numba' not in sys.modules and 'textenvs.envs.fastsim.env' not in sys.modules"
    )
    subprocess.run([sys.executable, "-c", code], check=True)
