"""Potential-based shaping. The ``original`` form against golden numbers made by the original's own code
(``benchmarks/methods/bk/golden/make_golden.py``), alone and through SB3's PPO; the ``markovian`` form
r' = 10 r + γΦ(s') − Φ(s) with Φ over a running standard deviation, against the ``masked`` (policy-invariant)
one."""

from __future__ import annotations

import json
from pathlib import Path

import gymnasium as gym
import numpy as np
import pytest
from gymnasium import spaces
from stable_baselines3.common.callbacks import BaseCallback
from stable_baselines3.common.vec_env import DummyVecEnv

from textagents.methods.bk.ppo import OriginalPPO, RecordPotentials, ShapedRolloutBuffer, TimeLimitAsDone
from textagents.methods.bk.shaping import (
    PRE_ACTION_POTENTIAL,
    LaggedShaping,
    PotentialShaping,
    PreActionPotential,
    RunningStd,
)

GOLDEN = json.loads((Path(__file__).parent / "golden" / "bk_shaping.json").read_text())


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


def test_the_markovian_form_pays_the_terminal_potential_and_the_masked_form_does_not():
    def potential(obs, info):
        return float(obs)  # progress along the corridor

    original = PotentialShaping(Corridor(), potential, gamma=1.0, normalize=False)
    masked = PotentialShaping(Corridor(), potential, gamma=1.0, normalize=False, form="masked")
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
    with pytest.raises(ValueError, match="form must be 'markovian' or 'masked', got 'original'"):
        PotentialShaping(Corridor(), lambda o, i: 0.0, form="original")
    with pytest.raises(ValueError, match="history must be >= 0, got -1"):
        PreActionPotential(Corridor(), lambda o, i: 0.0, history=-1)
    env = PotentialShaping(Corridor(), lambda o, i: float("nan"), normalize=False)
    env.reset()
    assert env.step(1)[4]["potential"] == 0.0


def test_the_original_form_matches_the_originals_arithmetic_on_a_golden_stream():
    lagged = LaggedShaping(GOLDEN["envs"], GOLDEN["gamma"])
    for phi, expected in zip(GOLDEN["phi"], GOLDEN["rollouts"], strict=True):
        for row in phi:
            lagged.record(np.array(row))
        term = lagged.finish(GOLDEN["steps"])
        assert term == pytest.approx(np.array(expected["shaping"]), rel=1e-6, abs=1e-9)
        assert lagged.stats.var == pytest.approx(expected["var"], rel=1e-9)
        assert lagged.carried == pytest.approx(np.array(expected["carried"]), rel=1e-6, abs=1e-9)
    with pytest.raises(RuntimeError, match="the rollout has 0 rows of potentials, expected 5"):
        lagged.finish(5)


TERMINAL = -1.0  # the terminal observation: its potential would break the golden numbers if it were scored


class GoldenStream(gym.Env):
    """Env ``index`` of the golden stream: the observation at the stream's step k is k (the count goes on
    across resets), the terminal one ``TERMINAL``; episodes end and pay as the golden ``ends`` and
    ``env_reward`` say."""

    observation_space = spaces.Dict({"k": spaces.Box(-1.0, 1e3, (1,), np.float32)})
    action_space = spaces.Discrete(2)

    def __init__(self, index: int):
        self.index, self.k = index, 0
        self.ends = np.array(GOLDEN["ends"]).reshape(-1, GOLDEN["envs"])[:, index]
        self.rewards = np.array(GOLDEN["env_reward"]).reshape(-1, GOLDEN["envs"])[:, index]

    def _obs(self, k: float) -> dict[str, np.ndarray]:
        return {"k": np.array([k], np.float32)}

    def reset(self, *, seed=None, options=None):
        return self._obs(self.k), {}

    def step(self, action):
        end, reward = int(self.ends[self.k]), float(self.rewards[self.k])
        self.k += 1
        return self._obs(TERMINAL if end else self.k), reward, end == 1, end == 2, {}


def golden_potential(index: int):
    phi = np.array(GOLDEN["phi"]).reshape(-1, GOLDEN["envs"])[:, index]

    def potential(obs, info):
        k = int(obs["k"][0])
        return 1e3 if k == TERMINAL else float(phi[k])

    return potential


class KeepRewards(BaseCallback):
    """Each rollout's rewards as PPO's buffer holds them once its advantages are computed."""

    def __init__(self):
        super().__init__()
        self.rollouts: list[np.ndarray] = []

    def _on_step(self) -> bool:
        return True

    def _on_rollout_end(self) -> None:
        self.rollouts.append(self.model.rollout_buffer.rewards.copy())


def _golden_ppo_rewards(time_limit_as_done: bool) -> list[np.ndarray]:
    envs, steps = GOLDEN["envs"], GOLDEN["steps"]
    lagged = LaggedShaping(envs, GOLDEN["gamma"])

    def make(index):
        return lambda: PreActionPotential(GoldenStream(index), golden_potential(index), GOLDEN["reward_scale"])

    venv = RecordPotentials(DummyVecEnv([make(i) for i in range(envs)]), lagged)
    if time_limit_as_done:
        venv = TimeLimitAsDone(venv)
    model = OriginalPPO(
        "MultiInputPolicy",
        venv,
        n_steps=steps,
        batch_size=envs * steps,
        n_epochs=1,
        gamma=GOLDEN["gamma"],
        rollout_buffer_class=ShapedRolloutBuffer,
        rollout_buffer_kwargs={"shaping": lagged},
        seed=0,
        device="cpu",
    )
    keep = KeepRewards()
    model.learn(total_timesteps=len(GOLDEN["rollouts"]) * envs * steps, callback=keep)
    return keep.rollouts


def test_ppo_is_paid_the_originals_rewards_on_pre_action_observations_with_time_limits_as_ends():
    rollouts = _golden_ppo_rewards(time_limit_as_done=True)
    assert len(rollouts) == len(GOLDEN["rollouts"])
    for rewards, expected in zip(rollouts, GOLDEN["rollouts"], strict=True):
        assert rewards == pytest.approx(np.array(expected["reward"]), rel=1e-6, abs=2e-6)  # float32 buffer

    # SB3 alone bootstraps a truncated step's reward with γV(terminal observation): only those steps differ
    bootstrapped = _golden_ppo_rewards(time_limit_as_done=False)
    truncated = np.array(GOLDEN["ends"]) == 2
    for u, (rewards, expected) in enumerate(zip(bootstrapped, GOLDEN["rollouts"], strict=True)):
        differs = ~np.isclose(rewards, np.array(expected["reward"]), rtol=1e-6, atol=2e-6)
        assert np.array_equal(differs, truncated[u])


def test_the_pre_action_potential_sees_the_action_that_led_there_and_the_episodes_last_steps():
    seen = []

    def potential(obs, info):
        seen.append((obs, info.get("action"), info["history"]))
        return 0.0

    env = PreActionPotential(Corridor(), potential, history=2)
    env.reset()
    for action in (1, 0, 1, 1):
        _, _, terminated, _, info = env.step(action)
        assert info[PRE_ACTION_POTENTIAL] == 0.0 and info["env_reward"] == float(terminated)
    assert terminated and len(seen) == 4  # the terminal observation (3) was not scored
    assert seen == [
        (0, None, ()),
        (1, 1, ((None, 0),)),
        (1, 0, ((None, 0), (1, 1))),
        (2, 1, ((1, 1), (0, 1))),
    ]
    env.reset()
    env.step(1)
    assert seen[-1] == (0, None, ())  # a new episode starts a new history
