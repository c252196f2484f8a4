"""The kit catches contract violations: each broken variant of the corridor env fails its check."""

from __future__ import annotations

import random

import gymnasium as gym
import numpy as np
import pytest

from textenvs import testing as kit
from textenvs.core import StepOutcome

from .corridor_env import CorridorEnv
from .test_contract import REPO_ROOT


class GlobalRandomCorridor(CorridorEnv):
    """Draws its start from the global RNG instead of ``np_random``."""

    def _reset_world(self, options):
        info = super()._reset_world(options)
        self.position = random.randrange(4)
        return info


class PixelsChangeDynamics(CorridorEnv):
    """Moves twice as far when it renders."""

    def _step_world(self, command):
        outcome = super()._step_world(command)
        if self.wants_pixels and command == "go right" and self.position < 4:
            self.position += 1
        return outcome


class RaisesOnGarbage(CorridorEnv):
    def decode_action(self, action):
        if not isinstance(action, str):
            raise TypeError("bad action")
        return super().decode_action(action)


class NoMetrics(CorridorEnv):
    def step(self, action):
        obs, reward, terminated, truncated, info = super().step(action)
        info.pop("episode_metrics", None)
        return obs, reward, terminated, truncated, info


class BrokenAnsi(CorridorEnv):
    def ansi(self):
        return "nothing to see"


class LazyExpert(CorridorEnv):
    def expert(self):
        class Waits:
            def reset(self, obs, info):
                pass

            def act(self, obs, info):
                return "wait"

        return Waits()


class SetOrderText(CorridorEnv):
    """Describes things in set order, which changes with PYTHONHASHSEED."""

    def describe(self):
        return ", ".join({"apple", "pear", "plum", "fig", "kiwi", "lime"})


class SilentInvalid(CorridorEnv):
    """Treats an invalid command as 'go right' and says nothing."""

    def _step_world(self, command):
        return super()._step_world(command or "go right")

    def decode_action(self, action):
        return super().decode_action(action)[0], ""


class IgnoresResetOptions(CorridorEnv):
    """Drops whatever options reset is given."""

    def reset(self, *, seed=None, options=None):
        return super().reset(seed=seed)


def _register(cls) -> str:
    env_id = f"Broken{cls.__name__}-v0"
    if env_id not in gym.registry:
        gym.register(env_id, entry_point=cls)
    return env_id


# Registered at import so that rollout subprocesses importing this module find them.
for _cls in (GlobalRandomCorridor, SetOrderText):
    _register(_cls)


def test_obs_mode_divergence_is_caught():
    with pytest.raises(AssertionError, match="diverges"):
        kit.check_obs_modes_agree(_register(PixelsChangeDynamics))


def test_exception_on_garbage_is_caught():
    with pytest.raises(TypeError):
        kit.check_garbage_actions(_register(RaisesOnGarbage))


def test_silent_invalid_action_is_caught():
    with pytest.raises(AssertionError, match="feedback"):
        kit.check_garbage_actions(_register(SilentInvalid))


def test_missing_episode_metrics_is_caught():
    with pytest.raises(AssertionError, match="episode_metrics"):
        kit.check_info_keys(_register(NoMetrics), steps=100)


def test_unknown_reset_option_accepted_is_caught():
    with pytest.raises(AssertionError, match="accepted the unknown option"):
        kit.check_rejected_reset_recovers(_register(IgnoresResetOptions))


def test_ansi_without_observation_is_caught():
    with pytest.raises(AssertionError, match="ansi"):
        kit.check_render_modes(_register(BrokenAnsi))


def test_expert_that_never_finishes_is_caught():
    with pytest.raises(AssertionError, match="did not end"):
        kit.check_expert_episode(_register(LazyExpert), step_limit=5)


@pytest.mark.parametrize("cls", [GlobalRandomCorridor, SetOrderText])
def test_process_dependent_rollouts_are_caught(cls):
    env_id = f"{__name__}:{_register(cls)}"
    with pytest.raises(AssertionError, match="differ across processes"):
        kit.check_determinism_across_processes([env_id], env={"PYTHONPATH": REPO_ROOT})


def test_plain_data_is_required_in_info():
    with pytest.raises(TypeError, match="plain data"):
        kit.rollout.canonical({"positions": {1, 2}})
    assert kit.rollout.canonical({"b": np.int64(3), "a": np.zeros(2, np.uint8)})["b"] == 3


def test_step_outcome_defaults():
    assert StepOutcome() == StepOutcome(0.0, False, False, "", {})
