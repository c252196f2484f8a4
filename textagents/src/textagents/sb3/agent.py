"""A trained run (``textagents train``) as an agent of the protocol, so that it plays in episodes and suites."""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import gymnasium as gym
import numpy as np
from stable_baselines3.common.base_class import BaseAlgorithm

from textagents.sb3.features import make_featurizer
from textagents.sb3.train import ALGORITHMS, CONFIG_FILE, MODEL_FILE, TrainConfig
from textagents.sb3.wrappers import make_sb3_env


@dataclass
class TrainedRun:
    """A run directory's settings and model."""

    run_dir: Path
    config: TrainConfig
    model: BaseAlgorithm

    @classmethod
    def load(cls, run_dir: str | Path) -> TrainedRun:
        run_dir = Path(run_dir)
        config_path, model_path = run_dir / CONFIG_FILE, run_dir / MODEL_FILE
        for path in (config_path, model_path):
            if not path.is_file():
                raise FileNotFoundError(f"{run_dir} is not a finished training run: {path.name} is missing")
        config = TrainConfig(**json.loads(config_path.read_text()))
        return cls(run_dir, config, ALGORITHMS[config.algo].load(model_path, device="cpu"))

    def make_env(self, env_id: str | None = None, **kwargs: Any) -> gym.Env:
        """The env the model plays (its features, obs mode and discrete actions): ``env_id`` or the one it
        was trained on, the training env kwargs updated by ``kwargs``."""
        featurizer = make_featurizer(self.config.features)
        env_kwargs = {**self.config.env_kwargs, **kwargs}
        return make_sb3_env(env_id or self.config.env_id, featurizer, self.config.obs_mode, **env_kwargs)


class SB3Agent:
    """Plays a trained model's most likely actions (``deterministic``) or samples of its policy, seeded by
    ``seed`` at every reset. The env must come from ``TrainedRun.make_env``."""

    uid = "sb3"

    def __init__(self, run: TrainedRun, deterministic: bool = True, seed: int | None = None):
        self.run = run
        self.deterministic = deterministic
        self.seed = seed

    @property
    def params(self) -> dict[str, Any]:
        config = self.run.config
        return {
            "run": str(self.run.run_dir),
            "algo": config.algo,
            "features": config.features,
            "trained_on": config.env_id,
            "timesteps": int(self.run.model.num_timesteps),
            "deterministic": self.deterministic,
            "seed": self.seed,
        }

    def reset(self, obs: Any, info: dict[str, Any]) -> None:
        if not self.deterministic and self.seed is not None:
            self.run.model.set_random_seed(self.seed)

    def act(self, obs: Any, info: dict[str, Any]) -> Any:
        action, _ = self.run.model.predict(obs, deterministic=self.deterministic)
        return int(action) if np.ndim(action) == 0 else action
