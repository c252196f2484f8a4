"""Potential-based shaping: r' = 10 r + γΦ(s') − Φ(s), Φ over a running standard deviation; the original's
terminal handling against the masked (policy-invariant) one."""

from __future__ import annotations

import gymnasium as gym
import numpy as np
import pytest
from gymnasium import spaces

from textagents.methods.bk.shaping import PotentialShaping, RunningStd


class Corridor(gym.Env):
    """Walk right from 0; reaching 3 ends with reward 1 (terminated); 5 steps at most (truncated)."""

    observation_space = spaces.Discrete(6)
    action_space = spaces.Discrete(2)

    def reset(self, *, seed=None, options=None):
        self.position, self.steps = 0, 0
        return self.position, {}

    def step(self, action):
        self.position += 1 if action == 1 else 0
        self.steps += 1
        terminated = self.position == 3
        return self.position, float(terminated), terminated, self.steps >= 5 and not terminated, {}


def _episode(env, actions):
    env.reset()
    rewards = []
    for action in actions:
        _, reward, terminated, truncated, info = env.step(action)
        rewards.append((reward, info["shaping"], info["env_reward"]))
        if terminated or truncated:
            break
    return rewards


def test_the_original_pays_the_terminal_potential_and_the_masked_form_does_not():
    def potential(obs, info):
        return float(obs)  # progress along the corridor

    original = PotentialShaping(Corridor(), potential, gamma=1.0, normalize=False)
    masked = PotentialShaping(Corridor(), potential, gamma=1.0, normalize=False, terminal="masked")
    walk = [1, 1, 1]
    a, b = _episode(original, walk), _episode(masked, walk)
    assert [s for _, s, _ in a] == [1.0, 1.0, 1.0]  # Φ(3) - Φ(2) at the end too
    assert [s for _, s, _ in b] == [1.0, 1.0, -2.0]  # 0 - Φ(2): shaping sums to -Φ(s0) = 0 over the episode
    assert sum(s for _, s, _ in b) == 0.0 and sum(s for _, s, _ in a) == 3.0
    assert a[-1][0] == 10.0 * 1.0 + 1.0 and b[-1][0] == 10.0 - 2.0  # the env reward is scaled by 10
    # a time limit is not an end of the task: both forms keep Φ(s') there
    dawdle = [1, 0, 0, 0, 0]
    assert [s for _, s, _ in _episode(original, dawdle)] == [s for _, s, _ in _episode(masked, dawdle)]


def test_potentials_are_divided_by_their_running_standard_deviation():
    values = [3.0, 1.0, 4.0, 1.0, 5.0]
    stats = RunningStd()
    for value in values:
        stats.update(value)
    assert stats.std == pytest.approx(np.std(values, ddof=1))
    seen = iter(values)
    env = PotentialShaping(Corridor(), lambda obs, info: next(seen), gamma=0.9)
    _, info = env.reset()
    assert info["potential"] == 3.0  # one value: std 1
    _, _, _, _, info = env.step(1)
    assert info["potential"] == pytest.approx(1.0 / np.std([3.0, 1.0], ddof=1))


def test_bad_settings_and_non_finite_potentials():
    with pytest.raises(ValueError, match="terminal must be one of \\['original', 'masked'\\]"):
        PotentialShaping(Corridor(), lambda o, i: 0.0, terminal="zero")
    env = PotentialShaping(Corridor(), lambda o, i: float("nan"), normalize=False)
    env.reset()
    assert env.step(1)[4]["potential"] == 0.0
