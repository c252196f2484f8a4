"""From textenvs observations to what Stable-Baselines3 accepts: text parts become feature vectors."""

from __future__ import annotations

from typing import Any

import gymnasium as gym
import numpy as np
from gymnasium import spaces

from textagents.sb3.features import HashedBagOfWords, TextFeaturizer

#: Observation spaces SB3 accepts inside a ``Dict`` (everything else, e.g. ``Text``, is dropped or featurized).
SB3_SPACES = (spaces.Box, spaces.Discrete, spaces.MultiDiscrete, spaces.MultiBinary)


class TextFeaturesWrapper(gym.ObservationWrapper):
    """Replaces the ``Text`` parts of a ``Dict`` observation (``text_keys``, default ``mission`` and ``text``)
    by one ``"text_features"`` vector (their features concatenated); keeps ``image`` and the other parts
    SB3 can handle, so ``MultiInputPolicy`` works for text and text+pixels modes alike."""

    def __init__(self, env: gym.Env, featurizer: TextFeaturizer, text_keys: tuple[str, ...] = ("mission", "text")):
        super().__init__(env)
        source = env.observation_space
        if not isinstance(source, spaces.Dict):
            raise TypeError(f"TextFeaturesWrapper needs a Dict observation space, got {source}")
        self.text_keys = tuple(k for k in text_keys if k in source.spaces)
        if not self.text_keys:
            raise ValueError(f"none of the text keys {text_keys} is in the observation space {list(source.spaces)}")
        self.featurizer = featurizer
        self.kept = [k for k, s in source.spaces.items() if k not in self.text_keys and isinstance(s, SB3_SPACES)]
        size = featurizer.dim * len(self.text_keys)
        parts: dict[str, spaces.Space] = {"text_features": spaces.Box(-np.inf, np.inf, (size,), np.float32)}
        parts.update({k: source.spaces[k] for k in self.kept})
        self.observation_space = spaces.Dict(parts)

    def observation(self, observation: dict[str, Any]) -> dict[str, Any]:
        vectors = self.featurizer([str(observation[k]) for k in self.text_keys])
        return {"text_features": vectors.reshape(-1).astype(np.float32), **{k: observation[k] for k in self.kept}}


def make_sb3_env(env_id: str, featurizer: TextFeaturizer, obs_mode: str = "text", **kwargs: Any) -> gym.Env:
    """``gym.make`` with discrete actions (when the env's actions are commands) and text features."""
    import textenvs  # noqa: F401  (registers the ids)

    env = gym.make(env_id, obs_mode=obs_mode, **kwargs)
    if isinstance(env.action_space, spaces.Text):
        env.close()
        env = gym.make(env_id, obs_mode=obs_mode, action_mode="discrete", **kwargs)
    return TextFeaturesWrapper(env, featurizer)


MISSION_FEATURES = HashedBagOfWords(dim=64, ngrams=1)


def symbolic_observation(view: np.ndarray, mission: str) -> dict[str, np.ndarray]:
    return {"grid": view.astype(np.float32), "mission": MISSION_FEATURES([mission])[0]}


class SymbolicObservation(gym.ObservationWrapper):
    """A BabyAI-Text env (``action_mode="discrete"``) seen through minigrid's grid encoding and the goal."""

    def __init__(self, env: gym.Env):
        super().__init__(env)
        self.observation_space = spaces.Dict(
            {
                "grid": spaces.Box(0, 10, (7, 7, 3), np.float32),
                "mission": spaces.Box(0, np.inf, (MISSION_FEATURES.dim,), np.float32),
            }
        )

    def observation(self, observation: dict[str, Any]) -> dict[str, np.ndarray]:
        return symbolic_observation(self.env.unwrapped.view, str(observation["mission"]))
