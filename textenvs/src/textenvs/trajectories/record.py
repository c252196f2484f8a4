"""Seeded episodes of a policy, recorded step by step in a format-neutral form (what every export writes)."""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any

import gymnasium as gym
import numpy as np

from textenvs.core.expert import Expert
from textenvs.core.registration import unknown_id_error
from textenvs.core.text_env import STANDARD_INFO_KEYS

#: The info keys kept at every step (those every env reports, ``textenvs.core.STANDARD_INFO_KEYS``).
RECORDED_INFO_KEYS = STANDARD_INFO_KEYS


@dataclass
class Episode:
    """One recorded episode, laid out like a Minari ``EpisodeData``.

    ``observations`` maps each observation key to its ``T + 1`` values (the reset observation, then one per
    step); ``actions``, ``rewards``, ``terminations`` and ``truncations`` have ``T`` values; ``infos`` maps
    each of ``RECORDED_INFO_KEYS`` to its ``T + 1`` values. ``metrics`` is the last step's
    ``info["episode_metrics"]`` and ``seed`` the seed of ``env.reset``.
    """

    seed: int
    observations: dict[str, list[Any]]
    actions: list[Any] = field(default_factory=list)
    rewards: list[float] = field(default_factory=list)
    terminations: list[bool] = field(default_factory=list)
    truncations: list[bool] = field(default_factory=list)
    infos: dict[str, list[Any]] = field(default_factory=dict)
    metrics: dict[str, Any] = field(default_factory=dict)

    def __len__(self) -> int:
        return len(self.actions)

    @property
    def episode_return(self) -> float:
        return float(sum(self.rewards))

    @property
    def success(self) -> bool:
        return bool(self.infos["success"][-1])


class RandomPolicy:
    """A uniformly random admissible command (text actions), else a sample of the action space; seeded by
    the episode's seed so that a dataset of random episodes is reproducible."""

    def __init__(self, action_space: gym.Space, seed: int):
        self.space = action_space
        self.rng = np.random.default_rng(seed)
        self.space.seed(seed)

    def reset(self, obs: Any, info: dict[str, Any]) -> None:
        pass

    def act(self, obs: Any, info: dict[str, Any]) -> Any:
        commands = info.get("admissible_commands") or []
        if isinstance(self.space, gym.spaces.Text) and commands:
            return commands[int(self.rng.integers(len(commands)))]
        return self.space.sample()


#: Builds the policy of one episode from the env and the episode's seed.
PolicyFactory = Callable[[gym.Env, int], Expert]

#: Policy name -> its factory.
POLICIES: dict[str, PolicyFactory] = {
    "expert": lambda env, seed: env.unwrapped.expert(),
    "random": lambda env, seed: RandomPolicy(env.action_space, seed),
}


def plain(value: Any) -> Any:
    """``value`` as JSON-serializable data: numpy scalars and arrays become Python numbers and lists."""
    if isinstance(value, dict):
        return {str(k): plain(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [plain(v) for v in value]
    if isinstance(value, (np.ndarray, np.generic)):
        return value.tolist()
    return value


def _append_observation(observations: dict[str, list[Any]], obs: Any) -> None:
    if not isinstance(obs, dict):
        raise TypeError(f"textenvs observations are dicts; got {type(obs).__name__}")
    for key, value in obs.items():
        observations.setdefault(key, []).append(value)


def _append_info(infos: dict[str, list[Any]], info: dict[str, Any]) -> None:
    for key in RECORDED_INFO_KEYS:
        value = info[key]
        infos.setdefault(key, []).append(list(value) if key == "admissible_commands" else plain(value))


def record_episode(env: gym.Env, policy: Expert, seed: int) -> Episode:
    """Play one episode of ``policy`` from ``env.reset(seed=seed)`` to its end (every family ends its own
    episodes) and record every observation, action, reward and standard info."""
    episode = Episode(seed=seed, observations={})
    obs, info = env.reset(seed=seed)
    policy.reset(obs, info)
    _append_observation(episode.observations, obs)
    _append_info(episode.infos, info)
    while True:
        action = policy.act(obs, info)
        obs, reward, terminated, truncated, info = env.step(action)
        episode.actions.append(action)
        episode.rewards.append(float(reward))
        episode.terminations.append(bool(terminated))
        episode.truncations.append(bool(truncated))
        _append_observation(episode.observations, obs)
        _append_info(episode.infos, info)
        if terminated or truncated:
            episode.metrics = plain(info.get("episode_metrics", {}))
            return episode


def make_env(env_id: str, env_kwargs: dict[str, Any] | None = None) -> gym.Env:
    """``gym.make(env_id, **env_kwargs)`` with an error listing the closest ids for an unknown one."""
    import textenvs  # noqa: F401  (registers the ids)

    if env_id not in gym.registry:
        raise unknown_id_error(env_id, gym.registry)
    return gym.make(env_id, **(env_kwargs or {}))


POLICY_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9_-]*")


def policy_factory(policy: str | PolicyFactory) -> PolicyFactory:
    """The factory of a policy given by name (``POLICIES``) or as a factory ``(env, seed) -> policy``."""
    if not isinstance(policy, str):
        return policy
    if policy not in POLICIES:
        raise ValueError(f"unknown policy {policy!r}; valid policies: {', '.join(POLICIES)}")
    return POLICIES[policy]


def policy_label(policy: str | PolicyFactory, name: str | None = None) -> str:
    """The name a dataset gives its policy: its own name, or ``name`` for a policy given as a factory."""
    if isinstance(policy, str):
        if name is not None and name != policy:
            raise ValueError(f"policy_name={name!r} names a policy given as a factory; {policy!r} names itself")
        return policy
    if name is None or not POLICY_NAME.fullmatch(name):
        raise ValueError(f"a policy given as a factory needs a policy_name of letters, digits, - and _; got {name!r}")
    return name


def record_episodes(env: gym.Env, policy: str | PolicyFactory, seeds: Sequence[int]) -> Iterator[Episode]:
    """One episode of the policy (a name of ``POLICIES`` or a factory ``(env, seed) -> policy``) per seed, in
    order; the policy is built afresh for each episode."""
    make_policy = policy_factory(policy)
    for seed in seeds:
        yield record_episode(env, make_policy(env, seed), seed)


def metrics_json(metrics: dict[str, Any]) -> str:
    """The canonical JSON text of an episode's metrics (sorted keys: the same metrics, the same bytes)."""
    return json.dumps(plain(metrics), sort_keys=True)
