"""From textenvs observations to what Stable-Baselines3 accepts: text parts become feature vectors."""

from __future__ import annotations

import functools
from typing import Any

import gymnasium as gym
import numpy as np
from gymnasium import spaces
from PIL import Image

from textagents.sb3.features import HashedBagOfWords, TextFeaturizer

#: Observation spaces SB3 accepts inside a ``Dict`` (everything else, e.g. ``Text``, is dropped or featurized).
SB3_SPACES = (spaces.Box, spaces.Discrete, spaces.MultiDiscrete, spaces.MultiBinary)


class TextFeatures:
    """A ``Dict`` observation space's ``Text`` parts (``text_keys``, default ``mission`` and ``text``) as one
    ``"text_features"`` vector (their features concatenated) beside the parts SB3 can handle (``image`` and
    the like): ``observation_space`` is the space after, ``batch()`` featurizes many observations in one call."""

    def __init__(
        self, source: spaces.Space, featurizer: TextFeaturizer, text_keys: tuple[str, ...] = ("mission", "text")
    ):
        if not isinstance(source, spaces.Dict):
            raise TypeError(f"text features need a Dict observation space, got {source}")
        self.text_keys = tuple(k for k in text_keys if k in source.spaces)
        if not self.text_keys:
            raise ValueError(f"none of the text keys {text_keys} is in the observation space {list(source.spaces)}")
        self.featurizer = featurizer
        self.kept = [k for k, s in source.spaces.items() if k not in self.text_keys and isinstance(s, SB3_SPACES)]
        size = featurizer.dim * len(self.text_keys)
        parts: dict[str, spaces.Space] = {"text_features": spaces.Box(-np.inf, np.inf, (size,), np.float32)}
        parts.update({k: source.spaces[k] for k in self.kept})
        self.observation_space = spaces.Dict(parts)

    def batch(self, observations: dict[str, Any], count: int) -> dict[str, np.ndarray]:
        """``count`` observations batched Gymnasium's way (each part a sequence over them) -> SB3's batch."""
        texts = [str(observations[k][i]) for i in range(count) for k in self.text_keys]
        vectors = self.featurizer(texts).reshape(count, -1).astype(np.float32)
        return {"text_features": vectors, **{k: np.asarray(observations[k]) for k in self.kept}}


class TextFeaturesWrapper(gym.ObservationWrapper):
    """Replaces the ``Text`` parts of a ``Dict`` observation by their features (``TextFeatures``), so
    ``MultiInputPolicy`` works for text and text+pixels modes alike."""

    def __init__(self, env: gym.Env, featurizer: TextFeaturizer, text_keys: tuple[str, ...] = ("mission", "text")):
        super().__init__(env)
        self.features = TextFeatures(env.observation_space, featurizer, text_keys)
        self.observation_space = self.features.observation_space

    def observation(self, observation: dict[str, Any]) -> dict[str, Any]:
        batch = self.features.batch({k: [v] for k, v in observation.items()}, 1)
        return {k: v[0] for k, v in batch.items()}


class ResizeImage(gym.ObservationWrapper):
    """Downscales the ``image`` part of a ``Dict`` observation so that no side exceeds ``size`` pixels (aspect
    kept, each pixel the average of the area it covers); smaller images pass unchanged."""

    def __init__(self, env: gym.Env, size: int):
        super().__init__(env)
        if not isinstance(size, int) or isinstance(size, bool) or size < 1:
            raise ValueError(f"size={size!r} is not valid; use a positive int (pixels)")
        source = env.observation_space
        if not isinstance(source, spaces.Dict) or "image" not in source.spaces:
            raise ValueError(f"ResizeImage needs a Dict observation space with an 'image', got {source}")
        height, width, channels = source["image"].shape
        scale = min(1.0, size / max(height, width))
        self.shape = (max(1, round(height * scale)), max(1, round(width * scale)), channels)
        self.observation_space = spaces.Dict({**source.spaces, "image": spaces.Box(0, 255, self.shape, np.uint8)})

    def observation(self, observation: dict[str, Any]) -> dict[str, Any]:
        image = observation["image"]
        if image.shape != self.shape:
            resized = Image.fromarray(image).resize((self.shape[1], self.shape[0]), Image.Resampling.BOX)
            image = np.asarray(resized, dtype=np.uint8).reshape(self.shape)
        return {**observation, "image": image}


def discrete_actions(env_id: str) -> dict[str, str]:
    """``{"action_mode": "discrete"}`` for an env whose actions are commands (SB3 cannot act in ``Text``),
    else nothing."""
    return {"action_mode": "discrete"} if _acts_by_commands(env_id) else {}


@functools.cache
def _acts_by_commands(env_id: str) -> bool:
    import textenvs  # noqa: F401  (registers the ids)

    env = gym.make(env_id)
    commands = isinstance(env.action_space, spaces.Text)
    env.close()
    return commands


def make_sb3_env(
    env_id: str, featurizer: TextFeaturizer, obs_mode: str = "text", image_size: int = 0, **kwargs: Any
) -> gym.Env:
    """``gym.make`` with discrete actions (when the env's actions are commands) and text features; with
    pixels and ``image_size`` > 0, images downscaled to at most ``image_size`` pixels a side (0: as the env
    renders them)."""
    env = gym.make(env_id, obs_mode=obs_mode, **{**discrete_actions(env_id), **kwargs})
    if image_size and "image" in env.observation_space.spaces:
        env = ResizeImage(env, image_size)
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


#: The player's surroundings a Crafter agent sees: crafter's local view, 9 cells wide and 7 tall.
CRAFTER_VIEW = (9, 7)


def crafter_symbolic_observation(state: dict[str, Any]) -> dict[str, np.ndarray]:
    """Crafter-Text's ``game_state()`` as the semantic map's ids one-hot over the local view centred on the
    player (``None``, id 0, outside the world) and the inventory's counts over their maximum, 9."""
    from textenvs.envs.crafter_text.constants import ID_TO_ITEM, INVENTORY_ITEMS, VITAL_MAX

    semantic = state["semantic"]
    (width, height), (x, y) = CRAFTER_VIEW, state["player_pos"]
    ids = np.zeros((width, height), np.int64)
    left, top = x - width // 2, y - height // 2
    xs = slice(max(left, 0), min(left + width, semantic.shape[0]))
    ys = slice(max(top, 0), min(top + height, semantic.shape[1]))
    ids[xs.start - left : xs.stop - left, ys.start - top : ys.stop - top] = semantic[xs, ys]
    view = np.eye(len(ID_TO_ITEM), dtype=np.float32)[ids]
    inventory = np.array([state["inventory"].get(item, 0) for item in INVENTORY_ITEMS], np.float32) / VITAL_MAX
    return {"view": view, "inventory": inventory}


class CrafterSymbolicObservation(gym.ObservationWrapper):
    """A Crafter-Text env (``action_mode="discrete"``) seen through crafter's semantic local view (one-hot
    ids, 9 x 7 x 19) and the inventory: the symbolic view of Crafter that policies learn fastest from."""

    def __init__(self, env: gym.Env):
        from textenvs.envs.crafter_text.constants import ID_TO_ITEM, INVENTORY_ITEMS

        super().__init__(env)
        self.observation_space = spaces.Dict(
            {
                "view": spaces.Box(0, 1, (*CRAFTER_VIEW, len(ID_TO_ITEM)), np.float32),
                "inventory": spaces.Box(0, np.inf, (len(INVENTORY_ITEMS),), np.float32),
            }
        )

    def observation(self, observation: dict[str, Any]) -> dict[str, np.ndarray]:
        return crafter_symbolic_observation(self.env.unwrapped.game_state())
