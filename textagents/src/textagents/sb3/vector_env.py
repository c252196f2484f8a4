"""``SB3VectorEnv``: Stable-Baselines3's ``VecEnv`` over a Gymnasium ``VectorEnv``, so SB3 trains on a family's
batched env (``CrafterTextVectorEnv``: all games stepped by one call) instead of a ``DummyVecEnv`` of single
envs."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import gymnasium as gym
import numpy as np
from gymnasium.vector import AutoresetMode, VectorEnv
from stable_baselines3.common.vec_env import VecEnv
from stable_baselines3.common.vec_env.base_vec_env import VecEnvIndices, VecEnvObs, VecEnvStepReturn

from textagents.sb3.features import TextFeaturizer
from textagents.sb3.wrappers import TextFeatures


def env_info(info: dict[str, Any], index: int, count: int) -> dict[str, Any]:
    """Env ``index``'s part of a vector env's ``info``: each value's row, skipping those whose ``_key`` mask
    leaves it out (Gymnasium's form), nested dicts likewise."""
    part: dict[str, Any] = {}
    for key, value in info.items():
        if key.startswith("_") or key in ("final_obs", "final_info"):
            continue
        mask = info.get(f"_{key}")
        if mask is not None and not mask[index]:
            continue
        if isinstance(value, dict):
            part[key] = env_info(value, index, count)
        elif isinstance(value, np.ndarray | tuple | list) and len(value) == count:
            part[key] = value[index]
        else:
            part[key] = value
    return part


class SB3VectorEnv(VecEnv):
    """The ``VecEnv`` that a ``DummyVecEnv`` of ``make_sb3_env`` envs would be, made of one Gymnasium
    ``VectorEnv`` that resets an ended episode in the same step (``autoreset_mode=SAME_STEP``, as SB3 does):
    text parts featurized in one batch (``TextFeatures``), ``terminal_observation`` and
    ``TimeLimit.truncated`` in each env's info beside its part of the vector env's info (``env_info``; at an
    episode's end the ending step's). The envs are stepped as one: attributes are the vector env's, and
    per-env methods or attributes cannot be set."""

    def __init__(self, env: VectorEnv, featurizer: TextFeaturizer):
        mode = env.metadata.get("autoreset_mode")
        if mode != AutoresetMode.SAME_STEP:
            raise ValueError(
                f"SB3VectorEnv needs a vector env with autoreset_mode=SAME_STEP (SB3 resets in the ending step); "
                f"{type(env).__name__} has {mode}"
            )
        if not isinstance(env.single_action_space, gym.spaces.Discrete | gym.spaces.Box | gym.spaces.MultiDiscrete):
            raise ValueError(
                f"SB3 cannot act in {env.single_action_space}: make the vector env with action_mode='discrete'"
            )
        self.env = env
        self.features = TextFeatures(env.single_observation_space, featurizer)
        super().__init__(env.num_envs, self.features.observation_space, env.single_action_space)
        self._actions: np.ndarray | None = None

    def reset(self) -> VecEnvObs:
        seeds = None if all(s is None for s in self._seeds) else list(self._seeds)
        options = self._options[0] if any(self._options) else None
        observations, info = self.env.reset(seed=seeds, options=options)
        self.reset_infos = [env_info(info, i, self.num_envs) for i in range(self.num_envs)]
        self._reset_seeds()
        self._reset_options()
        return self.features.batch(observations, self.num_envs)

    def step_async(self, actions: np.ndarray) -> None:
        self._actions = actions

    def step_wait(self) -> VecEnvStepReturn:
        observations, rewards, terminated, truncated, info = self.env.step(self._actions)
        dones = np.asarray(terminated) | np.asarray(truncated)
        ended = np.asarray(info.get("_final_obs", np.zeros(self.num_envs, bool)))
        infos = [env_info(info["final_info"] if ended[i] else info, i, self.num_envs) for i in range(self.num_envs)]
        for i in range(self.num_envs):
            infos[i]["TimeLimit.truncated"] = bool(truncated[i] and not terminated[i])
        rows = np.flatnonzero(ended)
        if rows.size:
            finals = [info["final_obs"][r] for r in rows]
            last = self.features.batch({k: [o[k] for o in finals] for k in finals[0]}, rows.size)
            for j, r in enumerate(rows):
                infos[r]["terminal_observation"] = {k: v[j] for k, v in last.items()}
        features = self.features.batch(observations, self.num_envs)
        return features, np.asarray(rewards, np.float32), dones, infos

    def close(self) -> None:
        self.env.close()

    def get_attr(self, attr_name: str, indices: VecEnvIndices = None) -> list[Any]:
        return [getattr(self.env, attr_name)] * len(list(self._get_indices(indices)))

    def set_attr(self, attr_name: str, value: Any, indices: VecEnvIndices = None) -> None:
        raise NotImplementedError(f"cannot set {attr_name!r} per env: {type(self.env).__name__} steps its envs as one")

    def env_method(
        self, method_name: str, *method_args: Any, indices: VecEnvIndices = None, **method_kwargs: Any
    ) -> list[Any]:
        raise NotImplementedError(
            f"cannot call {method_name!r} per env: {type(self.env).__name__} steps its envs as one"
        )

    def env_is_wrapped(self, wrapper_class: type[gym.Wrapper], indices: VecEnvIndices = None) -> list[bool]:
        return [False] * len(list(self._get_indices(indices)))

    def get_images(self) -> Sequence[np.ndarray | None]:
        return [None] * self.num_envs
