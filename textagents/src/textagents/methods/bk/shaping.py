"""Potential-based reward shaping as the background-knowledge paper applies it, for any Gymnasium env: the
env's reward scaled by ``reward_scale`` (10) plus a shaping term from a potential Φ, in one of three forms
(``SHAPING_FORMS``):

- ``original`` (default, the original's ``train_rs.py:169-175``): Φ is computed on the observation each
  action is taken from (``PreActionPotential``; the terminal observation is never scored) and the reward of
  step t gets γΦ(s_t) − Φ(s_{t−1}), a one-step lag that runs across episode boundaries. Φ is divided by the
  standard deviation of a discounted running sum of Φ (RND's forward filter, over all envs at once), which
  is updated once per rollout (``LaggedShaping``), so the term is known only when the rollout is complete:
  ``bk.ppo`` adds it to PPO's rollout buffer.
- ``markovian``: r' = scale·r + γΦ(s') − Φ(s) per step, Φ(s') of a terminal state used as is, Φ divided by
  the running standard deviation of raw Φ (``PotentialShaping``).
- ``masked``: as ``markovian`` with Φ(s') = 0 when the episode terminates (Ng et al.'s form, which leaves the
  optimal policy unchanged); truncation (a time limit) is not termination and keeps Φ(s').

The potential is called with the observation and the env's ``info``, plus ``info["action"]``: the action
that led to the observation (absent after a reset), and ``info["history"]``: the episode's earlier steps
before it, oldest first, as (action that led to the observation or None, observation) pairs, at most
``history`` of them.
"""

from __future__ import annotations

import numbers
from collections import deque
from collections.abc import Callable
from typing import Any

import gymnasium as gym
import numpy as np

SHAPING_FORMS = ("original", "markovian", "masked")
Potential = Callable[[Any, dict[str, Any]], float]
#: The largest |Φ| taken as a potential; larger values, like non-finite ones, are replaced by 0 and counted.
MAX_ABS_PHI = 1e6
#: ``PreActionPotential``'s ``info`` key: Φ of the observation the step's action was taken from (not normalised).
PRE_ACTION_POTENTIAL = "pre_action_potential"


def valid_potential(value: Any) -> bool:
    """Whether ``value`` is a real number (not a bool) with ``|value| <= MAX_ABS_PHI`` (NaN is not)."""
    return isinstance(value, numbers.Real) and not isinstance(value, bool) and abs(value) <= MAX_ABS_PHI


class RunningStd:
    """Welford's running variance; ``std`` is 1 until two values are seen (and never below ``floor``)."""

    def __init__(self, floor: float = 1e-4):
        self.count, self.mean, self.m2, self.floor = 0, 0.0, 0.0, floor

    def update(self, value: float) -> None:
        self.count += 1
        delta = value - self.mean
        self.mean += delta / self.count
        self.m2 += delta * (value - self.mean)

    @property
    def std(self) -> float:
        if self.count < 2:
            return 1.0
        return max(self.floor, float(np.sqrt(self.m2 / (self.count - 1))))


class _ScoredEnv(gym.Wrapper):
    """Calls the potential (values outside ``valid_potential`` become 0, counted in ``invalid_potentials``)
    with the action that led to the observation and the episode's last ``history`` steps before it."""

    def __init__(self, env: gym.Env, potential: Potential, reward_scale: float, history: int):
        super().__init__(env)
        if history < 0:
            raise ValueError(f"history must be >= 0, got {history}")
        self.potential, self.reward_scale = potential, reward_scale
        self.invalid_potentials = 0
        self.history: deque[tuple[Any, Any]] = deque(maxlen=history)
        self.current: tuple[Any, Any] = (None, None)  # (action that led here, observation)

    def _arrive(self, action: Any, obs: Any, reset: bool) -> None:
        if reset:
            self.history.clear()
        elif self.history.maxlen:
            self.history.append(self.current)
        self.current = (action, obs)

    def _raw_phi(self, info: dict[str, Any]) -> float:
        action, obs = self.current
        extra: dict[str, Any] = {"history": tuple(self.history)}
        if action is not None:
            extra["action"] = action
        raw = float(self.potential(obs, {**info, **extra}))
        if not valid_potential(raw):
            self.invalid_potentials += 1
            return 0.0
        return raw


class PotentialShaping(_ScoredEnv):
    """The ``markovian`` and ``masked`` forms: r' = scale·r + γΦ(s') − Φ(s), Φ over the running standard
    deviation of raw Φ (``normalize``). ``info`` gains ``potential`` (Φ(s') normalised), ``shaping`` and
    ``env_reward``."""

    def __init__(
        self,
        env: gym.Env,
        potential: Potential,
        gamma: float = 0.99,
        reward_scale: float = 10.0,
        form: str = "markovian",
        normalize: bool = True,
        history: int = 0,
    ):
        super().__init__(env, potential, reward_scale, history)
        if form not in ("markovian", "masked"):
            raise ValueError(f"PotentialShaping's form must be 'markovian' or 'masked', got {form!r}")
        if not 0 < gamma <= 1:
            raise ValueError(f"gamma must be in (0, 1], got {gamma}")
        self.gamma, self.form, self.normalize = gamma, form, normalize
        self.stats = RunningStd()
        self.last = 0.0

    def _phi(self, info: dict[str, Any]) -> float:
        raw = self._raw_phi(info)
        if not self.normalize:
            return raw
        self.stats.update(raw)
        return raw / self.stats.std

    def reset(self, *, seed: int | None = None, options: dict[str, Any] | None = None):
        obs, info = self.env.reset(seed=seed, options=options)
        self._arrive(None, obs, reset=True)
        self.last = self._phi(info)
        return obs, {**info, "potential": self.last}

    def step(self, action: Any):
        obs, reward, terminated, truncated, info = self.env.step(action)
        self._arrive(action, obs, reset=False)
        phi = self._phi(info)
        following = 0.0 if terminated and self.form == "masked" else phi
        shaping = self.gamma * following - self.last
        self.last = phi
        info = {**info, "potential": phi, "shaping": shaping, "env_reward": float(reward)}
        return obs, self.reward_scale * float(reward) + shaping, terminated, truncated, info


class PreActionPotential(_ScoredEnv):
    """The ``original`` form's per-env half: each step scores the observation its action is taken from
    (``info[PRE_ACTION_POTENTIAL]``, raw; the terminal observation is never scored) and pays scale·r;
    ``LaggedShaping`` turns a rollout of these potentials into the shaping term. ``info`` also gains
    ``env_reward``."""

    def __init__(self, env: gym.Env, potential: Potential, reward_scale: float = 10.0, history: int = 0):
        super().__init__(env, potential, reward_scale, history)
        self.arrival_info: dict[str, Any] = {}

    def reset(self, *, seed: int | None = None, options: dict[str, Any] | None = None):
        obs, info = self.env.reset(seed=seed, options=options)
        self._arrive(None, obs, reset=True)
        self.arrival_info = info
        return obs, info

    def step(self, action: Any):
        phi = self._raw_phi(self.arrival_info)
        obs, reward, terminated, truncated, info = self.env.step(action)
        self._arrive(action, obs, reset=False)
        self.arrival_info = info
        info = {**info, PRE_ACTION_POTENTIAL: phi, "env_reward": float(reward)}
        return obs, self.reward_scale * float(reward), terminated, truncated, info


class ForwardFilter:
    """Per env, the discounted running sum of the values seen: the first row as is, then sum·γ + row. It is
    not reset at episode ends (RND's ``RewardForwardFilter``, the original's ``utils/normalizer.py:4-14``)."""

    def __init__(self, gamma: float):
        self.gamma = gamma
        self.total: np.ndarray | None = None

    def update(self, row: np.ndarray) -> np.ndarray:
        self.total = row.copy() if self.total is None else self.total * self.gamma + row
        return self.total


class RunningMeanStd:
    """Mean and (population) variance of every value seen, merged a batch at a time (Chan et al.'s parallel
    update), starting from mean 0, variance 1 and a count of ``epsilon``: gymnasium 0.29's
    ``RunningMeanStd``, which the original uses."""

    def __init__(self, epsilon: float = 1e-4):
        self.mean, self.var, self.count = 0.0, 1.0, epsilon

    def update(self, values: np.ndarray) -> None:
        batch_mean, batch_var, batch_count = float(np.mean(values)), float(np.var(values)), values.size
        delta, total = batch_mean - self.mean, self.count + batch_count
        merged = self.var * self.count + batch_var * batch_count + delta**2 * self.count * batch_count / total
        self.mean += delta * batch_count / total
        self.var, self.count = merged / total, total


class LaggedShaping:
    """The ``original`` form's shaping over a whole rollout, for ``envs`` envs at once (``train_rs.py:169-174``).

    ``record`` takes each step's row of pre-action potentials; ``finish(steps)`` returns the rollout's
    [steps, envs] shaping term: the rollout's potentials are put after the previous rollout's last
    (normalised) row (zeros at first), the forward filter runs over these steps + 1 rows, the variance is
    updated with all of them, every row is divided by the new standard deviation and the term is γ·row[t+1] −
    row[t]. As in the original, the carried row is fed to the filter again and normalised once more."""

    def __init__(self, envs: int, gamma: float = 0.99):
        if not 0 < gamma <= 1:
            raise ValueError(f"gamma must be in (0, 1], got {gamma}")
        self.gamma = gamma
        self.carried = np.zeros(envs)
        self.filter = ForwardFilter(gamma)
        self.stats = RunningMeanStd()
        self.pending: list[np.ndarray] = []
        self.last_term = np.zeros((0, envs))

    def record(self, row: np.ndarray) -> None:
        if row.shape != self.carried.shape:
            raise ValueError(f"a row of potentials must have shape {self.carried.shape}, got {row.shape}")
        self.pending.append(np.asarray(row, dtype=np.float64))

    def discard(self) -> None:
        """Forget the rows of a rollout that was not finished."""
        self.pending = []

    def finish(self, steps: int) -> np.ndarray:
        if len(self.pending) != steps:
            raise RuntimeError(f"the rollout has {len(self.pending)} rows of potentials, expected {steps}")
        rows = np.vstack([self.carried[None], *self.pending])
        self.pending = []
        self.stats.update(np.stack([self.filter.update(row) for row in rows]))
        rows = rows / np.sqrt(self.stats.var)
        self.carried = rows[-1]
        self.last_term = self.gamma * rows[1:] - rows[:-1]
        return self.last_term

    def state(self) -> dict[str, Any]:
        total = self.filter.total
        return {
            "carried": self.carried.tolist(),
            "filter": None if total is None else total.tolist(),
            "mean": self.stats.mean,
            "var": self.stats.var,
            "count": self.stats.count,
        }

    def load(self, state: dict[str, Any]) -> None:
        self.carried = np.asarray(state["carried"], dtype=np.float64)
        self.filter.total = None if state["filter"] is None else np.asarray(state["filter"], dtype=np.float64)
        self.stats.mean, self.stats.var, self.stats.count = state["mean"], state["var"], state["count"]
