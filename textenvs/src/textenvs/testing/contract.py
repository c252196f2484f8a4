"""The environment contract as checks: call them for every registered id from a family's tests.

Each check builds its own env with ``gym.make(env_id, **kwargs)`` and raises ``AssertionError`` with a
message naming the id and what broke.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Iterable, Mapping
from typing import Any

import gymnasium as gym
import numpy as np
from gymnasium.utils.env_checker import check_env

from textenvs.core.episode import EpisodeResult, run_episode
from textenvs.core.spaces import OBS_MODES
from textenvs.core.text_env import MISSION_MAX_LENGTH, STANDARD_INFO_KEYS
from textenvs.core.vector import make_vec
from textenvs.testing.rollout import GARBAGE_COMMANDS, choose_action, rollout_records


def check_gymnasium_api(env_id: str, **kwargs: Any) -> None:
    """Gymnasium's own ``check_env`` (reset/step signatures, spaces, seeding, render) and the contract's
    ``mission`` space, ``Text(512)``."""
    for render_mode in (None, "ansi"):
        env = gym.make(env_id, render_mode=render_mode, **kwargs)
        try:
            mission = env.observation_space["mission"]
            assert mission.max_length == MISSION_MAX_LENGTH, f"{env_id}: mission is {mission}, not Text(512)"
            check_env(env.unwrapped, skip_render_check=render_mode is None)
        finally:
            env.close()


def check_info_keys(env_id: str, steps: int = 60, seed: int = 0, **kwargs: Any) -> None:
    """Standard info keys on every step; ``episode_metrics`` exactly on an episode's last step."""
    env = gym.make(env_id, **kwargs)
    rng = np.random.default_rng(seed)
    env.action_space.seed(seed)
    try:
        obs, info = env.reset(seed=seed)
        _assert_standard_info(env_id, info)
        assert "episode_metrics" not in info, f"{env_id}: episode_metrics after reset"
        for _ in range(steps):
            obs, _reward, terminated, truncated, info = env.step(choose_action(env, rng, info))
            _assert_standard_info(env_id, info)
            assert env.observation_space.contains(obs), f"{env_id}: observation outside its space"
            ended = terminated or truncated
            assert ("episode_metrics" in info) == ended, (
                f"{env_id}: episode_metrics must be in info exactly on the last step (ended={ended})"
            )
            if ended:
                assert isinstance(info["episode_metrics"], dict) and info["episode_metrics"], env_id
                obs, info = env.reset()
    finally:
        env.close()


def _assert_standard_info(env_id: str, info: Mapping[str, Any]) -> None:
    missing = [k for k in STANDARD_INFO_KEYS if k not in info]
    assert not missing, f"{env_id}: info lacks {missing}"
    commands = info["admissible_commands"]
    assert isinstance(commands, list) and all(isinstance(c, str) for c in commands), env_id
    assert isinstance(info["invalid_action"], bool), f"{env_id}: invalid_action must be a bool"
    assert isinstance(info["success"], bool), f"{env_id}: success must be a bool"
    assert 0.0 <= info["progression"] <= 1.0, f"{env_id}: progression {info['progression']} outside [0, 1]"


def check_garbage_actions(env_id: str, seed: int = 0, **kwargs: Any) -> None:
    """Garbage commands and out-of-space actions are no-ops with feedback, never exceptions."""
    env = gym.make(env_id, **kwargs)
    try:
        env.reset(seed=seed)
        if isinstance(env.action_space, gym.spaces.Box):
            return  # continuous control: every in-space action is valid
        garbage: list[Any] = [*GARBAGE_COMMANDS, None, 3.5, ["turn left"], -1, 10**9, b"bytes"]
        if isinstance(env.action_space, gym.spaces.Discrete):
            garbage += ["turn left", np.int64(-5)]
        for action in garbage:
            _obs, _r, terminated, truncated, info = env.step(action)
            assert info["invalid_action"], f"{env_id}: {action!r} was not reported as invalid"
            assert info["feedback"], f"{env_id}: no feedback for invalid action {action!r}"
            if terminated or truncated:
                env.reset()
    finally:
        env.close()


def check_rejected_reset_recovers(env_id: str, seed: int = 0, **kwargs: Any) -> None:
    """A first ``reset`` with an unknown option raises a ValueError and leaves the env usable."""
    env = gym.make(env_id, **kwargs)
    try:
        try:
            env.reset(seed=seed, options={"no_such_option": 1})
        except ValueError:
            pass
        else:
            raise AssertionError(f"{env_id}: reset accepted the unknown option 'no_such_option'")
        env.reset(seed=seed)
        _obs, _reward, _terminated, _truncated, info = env.step(_first_valid_action(env))
        assert not info["invalid_action"], f"{env_id}: a valid action was refused after a rejected reset"
    finally:
        env.close()


def check_obs_modes_agree(env_id: str, steps: int = 60, seed: int = 0, **kwargs: Any) -> None:
    """The same seed and actions give the same dynamics in every ``obs_mode``."""
    runs = {mode: list(rollout_records(env_id, seed, steps, obs_mode=mode, **kwargs)) for mode in OBS_MODES}
    reference = runs["text+pixels"]
    for mode, records in runs.items():
        assert len(records) == len(reference), f"{env_id}: {mode} rollout has a different length"
        for t, (record, full) in enumerate(zip(records, reference, strict=True)):
            expected = {**full, "obs": {k: v for k, v in full["obs"].items() if k in record["obs"]}}
            assert record == expected, f"{env_id}: obs_mode={mode!r} diverges from text+pixels at record {t}"
        if mode != "text":
            image = next(r for r in records)["obs"]["image"]
            assert image["dtype"] == "uint8" and image["shape"][-1] == 3, f"{env_id}: bad image {image}"


def check_render_modes(env_id: str, seed: int = 0, **kwargs: Any) -> None:
    """``ansi`` returns the text view, ``rgb_array`` an HxWx3 uint8 image."""
    env = gym.make(env_id, render_mode="ansi", **kwargs)
    try:
        assert "render_fps" in env.metadata, f"{env_id}: metadata lacks render_fps"
        obs, _ = env.reset(seed=seed)
        text = env.render()
        assert isinstance(text, str) and text, f"{env_id}: ansi render returned {text!r}"
        if obs.get("text"):
            assert obs["text"] in text, f"{env_id}: ansi render does not show the observation text"
    finally:
        env.close()
    env = gym.make(env_id, render_mode="rgb_array", **kwargs)
    try:
        env.reset(seed=seed)
        frame = env.render()
        assert isinstance(frame, np.ndarray) and frame.dtype == np.uint8, f"{env_id}: rgb_array not uint8"
        assert frame.ndim == 3 and frame.shape[2] == 3 and frame.size, f"{env_id}: frame shape {frame.shape}"
    finally:
        env.close()


def check_vector_env(env_id: str, seed: int = 0, steps: int = 5, **kwargs: Any) -> None:
    """``make_vec`` with 2 envs, sync and async, gives what two single envs give (text intact)."""
    singles = [gym.make(env_id, **kwargs) for _ in range(2)]
    try:
        for mode in ("sync", "async"):
            vec = make_vec(env_id, 2, vectorization_mode=mode, **kwargs)
            try:
                vec_obs, _ = vec.reset(seed=seed)
                single_obs = [env.reset(seed=seed + i)[0] for i, env in enumerate(singles)]
                _assert_batch_matches(env_id, mode, vec_obs, single_obs)
                for _ in range(steps):
                    actions = [_first_valid_action(env) for env in singles]
                    vec_obs, *_ = vec.step(_batch_actions(vec, actions))
                    results = [env.step(a) for env, a in zip(singles, actions, strict=True)]
                    _assert_batch_matches(env_id, mode, vec_obs, [r[0] for r in results])
                    if any(r[2] or r[3] for r in results):
                        break  # the vector env autoresets from here on
            finally:
                vec.close()
    finally:
        for env in singles:
            env.close()


def _first_valid_action(env: gym.Env) -> Any:
    space = env.action_space
    if isinstance(space, gym.spaces.Text):
        return env.unwrapped.admissible_commands()[0]
    if isinstance(space, gym.spaces.Discrete):
        return int(space.start)
    return np.zeros(space.shape, space.dtype)


def _batch_actions(vec: gym.vector.VectorEnv, actions: list[Any]) -> Any:
    if isinstance(vec.single_action_space, gym.spaces.Text):
        return tuple(actions)
    return np.stack([np.asarray(a) for a in actions])


def _assert_batch_matches(env_id: str, mode: str, batch: dict[str, Any], singles: list[dict[str, Any]]) -> None:
    for i, single in enumerate(singles):
        for key, value in single.items():
            got = batch[key][i]
            same = np.array_equal(got, value) if isinstance(value, np.ndarray) else got == value
            assert same, f"{env_id}: {mode} vector env {i}: {key!r} is {got!r}, a single env gives {value!r}"


def check_expert_episode(env_id: str, seed: int = 0, step_limit: int = 5000, **kwargs: Any) -> EpisodeResult:
    """The expert plays one episode with valid actions only, ends it, and gets ``episode_metrics``.

    Returns the episode so a family's tests can assert on its metrics.
    """
    env = gym.make(env_id, **kwargs)
    try:
        result = run_episode(env, env.unwrapped.expert(), seed=seed, step_limit=step_limit)
    finally:
        env.close()
    assert result.first_invalid is None, f"{env_id}: expert action invalid at (step, action) {result.first_invalid}"
    assert result.ended, f"{env_id}: the expert's episode did not end within {step_limit} steps"
    assert result.metrics, f"{env_id}: no episode_metrics on the last step"
    return result


def rollout_digests_in_subprocess(
    env_ids: Iterable[str],
    *,
    seed: int = 0,
    steps: int = 100,
    kwargs: Mapping[str, Mapping[str, Any]] | None = None,
    hash_seed: int = 0,
    env: Mapping[str, str] | None = None,
) -> dict[str, str]:
    """``{id: rollout digest}`` computed in a fresh interpreter with ``PYTHONHASHSEED=hash_seed``."""
    entry = "from textenvs.testing.rollout import main; main()"
    command = [sys.executable, "-c", entry, "--seed", str(seed), "--steps", str(steps)]
    command += ["--kwargs", json.dumps(kwargs or {}), *env_ids]
    child_env = {**os.environ, **(env or {}), "PYTHONHASHSEED": str(hash_seed)}
    result = subprocess.run(command, capture_output=True, text=True, env=child_env, check=False)
    if result.returncode != 0:
        raise AssertionError(f"rollout subprocess failed:\n{result.stderr[-4000:]}")
    return json.loads(result.stdout.strip().splitlines()[-1])


def check_determinism_across_processes(
    env_ids: Iterable[str], *, seed: int = 0, steps: int = 100, **options: Any
) -> None:
    """The same seeded rollout hashes identically in two processes with different hash seeds."""
    env_ids = list(env_ids)
    first = rollout_digests_in_subprocess(env_ids, seed=seed, steps=steps, hash_seed=1, **options)
    second = rollout_digests_in_subprocess(env_ids, seed=seed, steps=steps, hash_seed=2, **options)
    differ = [i for i in env_ids if first[i] != second[i]]
    assert not differ, f"rollouts differ across processes for {differ}"
