"""What SB3's PPO needs to train as the original's ``train_rs.py`` does: the ``original`` shaping form, whose
term is known only once a rollout is complete (``RecordPotentials`` collects each step's pre-action
potentials from the envs, ``ShapedRolloutBuffer`` adds ``LaggedShaping``'s term to the rollout's rewards
before the advantages are computed; ``PrefetchPotentials`` has BK-Code's sandbox score a step's observations
in one round trip), time limits treated as episode ends (``TimeLimitAsDone``) and the
original's loss (``OriginalPPO``)."""

from __future__ import annotations

from typing import Any

import numpy as np
import torch
from stable_baselines3 import PPO
from stable_baselines3.common.buffers import DictRolloutBuffer
from stable_baselines3.common.vec_env import DummyVecEnv, VecEnv, VecEnvWrapper

from textagents.methods.bk.phi_cache import CachedPotential
from textagents.methods.bk.shaping import PRE_ACTION_POTENTIAL, LaggedShaping, PreActionPotential


class TimeLimitAsDone(VecEnvWrapper):
    """Clears SB3's ``TimeLimit.truncated`` flag so that PPO does not bootstrap a truncated episode's last
    reward with γV(terminal observation): its target ends there, as the original's GAE does with
    ``done = terminated or truncated`` (``train_rs.py:148, 192-198``)."""

    def reset(self) -> Any:
        return self.venv.reset()

    def step_wait(self) -> Any:
        obs, rewards, dones, infos = self.venv.step_wait()
        for info in infos:
            info["TimeLimit.truncated"] = False
        return obs, rewards, dones, infos


class RecordPotentials(VecEnvWrapper):
    """Hands each step's pre-action potentials (``PreActionPotential``'s, one per env) to ``shaping``."""

    def __init__(self, venv: VecEnv, shaping: LaggedShaping):
        super().__init__(venv)
        self.shaping = shaping

    def reset(self) -> Any:
        return self.venv.reset()

    def step_wait(self) -> Any:
        obs, rewards, dones, infos = self.venv.step_wait()
        self.shaping.record(np.array([info[PRE_ACTION_POTENTIAL] for info in infos], dtype=np.float64))
        return obs, rewards, dones, infos


class PrefetchPotentials(VecEnvWrapper):
    """Before each step, ``potential.prefetch``es the observations the envs' actions are about to be taken
    from (each env's ``PreActionPotential`` scores it as it steps), so that a vectorised step costs at most
    one round trip to the sandbox instead of one per env."""

    def __init__(self, venv: DummyVecEnv, potential: CachedPotential):
        super().__init__(venv)
        self.potential = potential
        self.scored = [_pre_action_potential(env) for env in venv.envs]

    def reset(self) -> Any:
        return self.venv.reset()

    def step_async(self, actions: np.ndarray) -> None:
        self.potential.prefetch([env.current[1] for env in self.scored])
        self.venv.step_async(actions)

    def step_wait(self) -> Any:
        return self.venv.step_wait()


def _pre_action_potential(env: Any) -> PreActionPotential:
    """The ``PreActionPotential`` among ``env``'s wrappers."""
    while not isinstance(env, PreActionPotential):
        if not hasattr(env, "env"):
            raise TypeError("PrefetchPotentials needs envs shaped by PreActionPotential")
        env = env.env
    return env


class ShapedRolloutBuffer(DictRolloutBuffer):
    """A ``DictRolloutBuffer`` whose rewards gain ``shaping``'s term for the whole rollout before the returns
    and advantages are computed; a rollout left unfinished is discarded with the buffer's reset."""

    def __init__(self, *args: Any, shaping: LaggedShaping, **kwargs: Any):
        self.shaping = shaping  # before DictRolloutBuffer's __init__, which calls reset()
        super().__init__(*args, **kwargs)

    def reset(self) -> None:
        super().reset()
        self.shaping.discard()

    def compute_returns_and_advantage(self, last_values: Any, dones: np.ndarray) -> None:
        self.rewards += self.shaping.finish(self.buffer_size).astype(np.float32)
        super().compute_returns_and_advantage(last_values, dones)


def value_loss(
    values: torch.Tensor, old_values: torch.Tensor, returns: torch.Tensor, clip: float | None
) -> torch.Tensor:
    """The original's value loss (``train_rs.py:245-256``): ½·mean((V − R)²), or with ``clip`` ½·mean of the
    larger of (V − R)² and (V_old + clamp(V − V_old, ±clip) − R)². (SB3's PPO takes the clipped term alone
    and no ½.)"""
    unclipped = (values - returns) ** 2
    if clip is None:
        return 0.5 * unclipped.mean()
    clipped = (old_values + torch.clamp(values - old_values, -clip, clip) - returns) ** 2
    return 0.5 * torch.max(unclipped, clipped).mean()


class OriginalPPO(PPO):
    """SB3's PPO whose update is the original's (``train_rs.py:219-267``): per minibatch, advantages
    normalised, the clipped surrogate, ``value_loss`` with ``clip_range_vf`` (None: unclipped), loss =
    policy − ``ent_coef``·entropy + ``vf_coef``·value, gradients clipped at ``max_grad_norm``. Nothing is
    logged to SB3's logger and there is no early stop on a target KL (the original has none)."""

    def train(self) -> None:
        self.policy.set_training_mode(True)
        self._update_learning_rate(self.policy.optimizer)
        clip = self.clip_range(self._current_progress_remaining)
        value_clip = None if self.clip_range_vf is None else self.clip_range_vf(self._current_progress_remaining)
        for _ in range(self.n_epochs):
            for batch in self.rollout_buffer.get(self.batch_size):
                values, log_prob, entropy = self.policy.evaluate_actions(
                    batch.observations, batch.actions.long().flatten()
                )
                advantages = batch.advantages
                if self.normalize_advantage and len(advantages) > 1:
                    advantages = (advantages - advantages.mean()) / (advantages.std() + 1e-8)
                ratio = torch.exp(log_prob - batch.old_log_prob)
                surrogate = torch.min(advantages * ratio, advantages * torch.clamp(ratio, 1 - clip, 1 + clip))
                loss = (
                    -surrogate.mean()
                    - self.ent_coef * entropy.mean()
                    + self.vf_coef * value_loss(values.flatten(), batch.old_values, batch.returns, value_clip)
                )
                self.policy.optimizer.zero_grad()
                loss.backward()
                torch.nn.utils.clip_grad_norm_(self.policy.parameters(), self.max_grad_norm)
                self.policy.optimizer.step()
            self._n_updates += 1
