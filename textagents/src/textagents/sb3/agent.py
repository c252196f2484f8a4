"""A trained run (``textagents train``) as an agent of the protocol, so that it plays in episodes and suites."""

from __future__ import annotations

import functools
import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import gymnasium as gym
import numpy as np
from stable_baselines3.common.base_class import BaseAlgorithm

from textagents.sb3.features import make_featurizer
from textagents.sb3.model_files import load_model_state, model_files
from textagents.sb3.train import CONFIG_FILE, MODEL_STEM, TrainConfig, build_model
from textagents.sb3.wrappers import make_sb3_env


def missing_files(run_dir: Path) -> list[str]:
    """The files of a finished training run that ``run_dir`` lacks."""
    return [p.name for p in (run_dir / CONFIG_FILE, *model_files(run_dir / MODEL_STEM)) if not p.is_file()]


@dataclass
class TrainedRun:
    """A run directory's settings (read as data) and, on first use, its model (rebuilt from the settings,
    weights loaded with ``torch.load(weights_only=True)``: nothing in the directory can run code)."""

    run_dir: Path
    config: TrainConfig

    @classmethod
    def load(cls, run_dir: str | Path) -> TrainedRun:
        """The run's settings; its model files are checked to exist but not read."""
        run_dir = Path(run_dir)
        missing = missing_files(run_dir)
        if missing:
            raise FileNotFoundError(f"{run_dir} is not a finished training run: {', '.join(missing)} missing")
        return cls(run_dir, TrainConfig.from_json(json.loads((run_dir / CONFIG_FILE).read_text())))

    @functools.cached_property
    def model(self) -> BaseAlgorithm:
        """The trained model, on the CPU."""
        env = self.make_env()
        model = build_model(self.config, env, device="cpu")
        env.close()
        load_model_state(model, self.run_dir / MODEL_STEM)
        return model

    def make_env(self, env_id: str | None = None, **kwargs: Any) -> gym.Env:
        """The env the model plays (its features, obs mode and discrete actions): ``env_id`` or the one it
        was trained on, the training env kwargs updated by ``kwargs``."""
        featurizer = make_featurizer(self.config.features)
        env_kwargs = {**self.config.env_kwargs, **kwargs}
        config = self.config
        return make_sb3_env(env_id or config.env_id, featurizer, config.obs_mode, config.image_size, **env_kwargs)


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
