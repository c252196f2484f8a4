"""``textagents train`` / ``evaluate``: SB3 PPO/A2C/DQN on any registered env with text features, a progress
bar, TensorBoard logs, periodic checkpoints and resume."""

from __future__ import annotations

import inspect
import json
import re
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import gymnasium as gym
import numpy as np
from gymnasium import spaces
from gymnasium.vector import AutoresetMode
from stable_baselines3 import A2C, DQN, PPO
from stable_baselines3.common.base_class import BaseAlgorithm
from stable_baselines3.common.callbacks import BaseCallback, CallbackList
from stable_baselines3.common.monitor import Monitor
from stable_baselines3.common.vec_env import DummyVecEnv, VecEnv, VecMonitor

import textenvs
from textagents.bench.store import write_text_atomic
from textagents.sb3.extractors import TextImageExtractor
from textagents.sb3.features import FEATURIZERS, TextFeaturizer, make_featurizer
from textagents.sb3.model_files import STATE_SUFFIX, load_model_state, model_files, save_model
from textagents.sb3.threads import TRAIN_THREADS, training_threads
from textagents.sb3.vector_env import SB3VectorEnv
from textagents.sb3.wrappers import discrete_actions, make_sb3_env

ALGORITHMS: dict[str, type[BaseAlgorithm]] = {"ppo": PPO, "a2c": A2C, "dqn": DQN}
#: The action spaces each algorithm learns (SB3 checks them with a bare assertion).
_ANY_SPACE = (spaces.Box, spaces.Discrete, spaces.MultiDiscrete, spaces.MultiBinary)
ACTION_SPACES: dict[str, tuple[type[spaces.Space], ...]] = {
    "ppo": _ANY_SPACE,
    "a2c": _ANY_SPACE,
    "dqn": (spaces.Discrete,),
}
#: Defaults that differ from SB3's: DQN's 1M-transition buffer of 1,000-float text features would need GBs.
ALGO_DEFAULTS: dict[str, dict[str, Any]] = {"dqn": {"buffer_size": 50_000}}
#: The algorithm's constructor arguments that the run's other settings fix (``build_model``).
ALGO_FIXED_KWARGS = ("policy", "env", "seed", "tensorboard_log", "policy_kwargs", "verbose", "device")
CONFIG_FILE = "config.json"
#: The values of settings added since the first runs, for a saved ``config.json`` that lacks them.
SETTINGS_BEFORE_THEY_EXISTED: dict[str, Any] = {"image_size": 0}
#: How the run's envs are stepped: ``batched``, the family's batched vector env where it registers one, else
#: ``dummy``, SB3's ``DummyVecEnv``. Both give the same trajectories (tested), so runs saved before the
#: setting existed (``dummy``) resume with the default.
VECTORIZATIONS = ("batched", "dummy")
#: Pixels are downscaled to at most this many a side by default (the small CNN's size).
IMAGE_SIZE = 64
#: The finished model: ``model.pth`` and ``model.json`` (see ``textagents.sb3.model_files``).
MODEL_STEM = "model"
_CHECKPOINT = re.compile(rf"model_(\d+)_steps{re.escape(STATE_SUFFIX)}$")


@dataclass
class TrainConfig:
    """Everything that defines a training run (saved as ``config.json`` in the run directory)."""

    env_id: str
    algo: str = "ppo"
    features: str = "bow"
    obs_mode: str = "text"
    total_timesteps: int = 100_000
    n_envs: int = 4
    seed: int = 0
    checkpoint_every: int = 10_000
    progress_bar: bool = True
    env_kwargs: dict[str, Any] = field(default_factory=dict)
    algo_kwargs: dict[str, Any] = field(default_factory=dict)
    #: Pixels downscaled to at most this many a side, through the small CNN; 0: the env's own size through
    #: the first, full-resolution CNN (runs saved before this setting). Always 0 without pixels.
    image_size: int = IMAGE_SIZE
    vectorization: str = "batched"

    @classmethod
    def from_json(cls, saved: dict[str, Any]) -> TrainConfig:
        """The settings of a saved ``config.json``; a setting it lacks takes the value it had before it existed
        (so a saved model is rebuilt with the architecture it was trained with)."""
        return cls(**{**SETTINGS_BEFORE_THEY_EXISTED, **saved})

    def __post_init__(self) -> None:
        if not isinstance(self.image_size, int) or isinstance(self.image_size, bool) or self.image_size < 0:
            raise ValueError(f"image_size={self.image_size!r} is not valid; use an int >= 0 (0: the env's size)")
        if "pixels" not in self.obs_mode:
            self.image_size = 0
        if self.algo not in ALGORITHMS:
            raise ValueError(f"unknown algorithm {self.algo!r}; valid: {sorted(ALGORITHMS)}")
        if self.vectorization not in VECTORIZATIONS:
            raise ValueError(f"vectorization={self.vectorization!r} is not valid; choose one of {VECTORIZATIONS}")
        if self.features not in FEATURIZERS:
            raise ValueError(f"unknown features {self.features!r}; valid: {FEATURIZERS}")
        if self.total_timesteps < 1 or self.n_envs < 1 or self.checkpoint_every < 1:
            raise ValueError("total_timesteps, n_envs and checkpoint_every must be >= 1")
        names = inspect.signature(ALGORITHMS[self.algo]).parameters
        valid = [p for p in names if p not in ALGO_FIXED_KWARGS and not p.startswith("_")]
        unknown = sorted(set(self.algo_kwargs) - set(valid))
        if unknown:
            raise ValueError(f"unknown {self.algo} setting(s) {unknown}; valid: {', '.join(valid)}")


class ProgressBar(BaseCallback):
    """A tqdm bar over timesteps (SB3's own needs ``rich``; tqdm comes with transformers)."""

    def __init__(self, total: int):
        super().__init__()
        self.total = total
        self.bar: Any = None

    def _on_training_start(self) -> None:
        from tqdm.auto import tqdm

        self.bar = tqdm(total=self.total, initial=self.model.num_timesteps, unit="step", dynamic_ncols=True)

    def _on_step(self) -> bool:
        self.bar.update(self.model.num_timesteps - self.bar.n)
        return True

    def _on_training_end(self) -> None:
        self.bar.close()


class Checkpoints(BaseCallback):
    """Saves the model as ``folder/model_<timesteps>_steps`` (``save_model``) every ``every`` calls (a call
    steps every env once)."""

    def __init__(self, folder: Path, every: int):
        super().__init__()
        self.folder = folder
        self.every = every

    def _on_step(self) -> bool:
        if self.n_calls % self.every == 0:
            save_model(self.model, self.folder / f"model_{self.num_timesteps}_steps")
        return True


def make_vec_env(config: TrainConfig, featurizer: TextFeaturizer, env_id: str | None = None) -> VecEnv:
    """``n_envs`` featurized copies of the env (they share the featurizer and its embedding cache): the
    family's batched vector env (``SB3VectorEnv``) when ``config.vectorization`` is ``batched``, the env
    registers one and the observations are text (every batched env gives text; pixels stay on single envs),
    else a ``DummyVecEnv`` of ``make_sb3_env`` envs."""
    env_id = env_id or config.env_id
    if config.vectorization == "batched" and gym.spec(env_id).vector_entry_point and config.obs_mode == "text":
        vector = textenvs.make_vec(
            env_id,
            config.n_envs,
            obs_mode=config.obs_mode,
            autoreset_mode=AutoresetMode.SAME_STEP,
            **{**discrete_actions(env_id), **config.env_kwargs},
        )
        vec_env: VecEnv = VecMonitor(SB3VectorEnv(vector, featurizer))
    else:

        def factory() -> Any:
            return Monitor(make_sb3_env(env_id, featurizer, config.obs_mode, config.image_size, **config.env_kwargs))

        vec_env = DummyVecEnv([factory] * config.n_envs)
    vec_env.seed(config.seed)
    return vec_env


def build_model(
    config: TrainConfig, env: Any, tensorboard_log: str | None = None, device: str = "auto"
) -> BaseAlgorithm:
    """A new model of the run's algorithm and settings over ``env`` (its spaces fix the networks' shapes); a
    ValueError naming the algorithms that fit when ``env``'s action space does not fit the run's."""
    if not isinstance(env.action_space, ACTION_SPACES[config.algo]):
        fitting = [name for name, kinds in ACTION_SPACES.items() if isinstance(env.action_space, kinds)]
        needed = " or ".join(kind.__name__ for kind in ACTION_SPACES[config.algo])
        raise ValueError(
            f"{config.algo} needs a {needed} action space, but {config.env_id}'s is {env.action_space}; "
            f"algorithms that can train on it: {', '.join(fitting) or 'none here'}"
        )
    return ALGORITHMS[config.algo](
        "MultiInputPolicy",
        env,
        seed=config.seed,
        tensorboard_log=tensorboard_log,
        policy_kwargs={
            "features_extractor_class": TextImageExtractor,
            "features_extractor_kwargs": {"cnn": "small" if config.image_size else "full"},
        },
        verbose=0,
        device=device,
        **{**ALGO_DEFAULTS.get(config.algo, {}), **config.algo_kwargs},
    )


def latest_checkpoint(run_dir: Path) -> Path | None:
    """The stem of the newest complete checkpoint (its counters file is written last), or None."""
    found = [
        (int(m.group(1)), p.with_suffix(""))
        for p in (run_dir / "checkpoints").glob(f"model_*_steps{STATE_SUFFIX}")
        if (m := _CHECKPOINT.search(p.name))
    ]
    return max(found)[1] if found else None


def train(
    config: TrainConfig,
    run_dir: str | Path,
    resume: bool = False,
    callbacks: list[BaseCallback] | None = None,
    threads: int | None = TRAIN_THREADS,
) -> dict[str, Any]:
    """Train (or, with ``resume``, continue from the latest checkpoint) and save the model in ``run_dir``
    (``model.pth`` and ``model.json``).
    ``callbacks`` are SB3 callbacks run besides the checkpoints and the progress bar; torch runs ``threads``
    threads meanwhile (``training_threads``)."""
    with training_threads(threads):
        return _train(config, Path(run_dir), resume, callbacks)


def _train(config: TrainConfig, run_dir: Path, resume: bool, callbacks: list[BaseCallback] | None) -> dict[str, Any]:
    config_path = run_dir / CONFIG_FILE
    if resume:
        if not config_path.is_file():
            raise FileNotFoundError(f"cannot resume: {config_path} does not exist (start the run without --resume)")
        saved = asdict(TrainConfig.from_json(json.loads(config_path.read_text())))
        differing = {
            k: (saved.get(k), v)
            for k, v in asdict(config).items()
            if k not in ("total_timesteps", "progress_bar") and saved.get(k) != v
        }
        if differing:
            raise ValueError(f"cannot resume {run_dir}: settings differ from the saved run (saved, given): {differing}")
        if latest_checkpoint(run_dir) is None:
            raise FileNotFoundError(
                f"cannot resume {run_dir}: it has no checkpoint (checkpoints/model_<steps>_steps{STATE_SUFFIX}), so "
                "training would start from zero and overwrite its model: train into a new directory instead"
            )
    elif any(p.exists() for p in model_files(run_dir / MODEL_STEM)) or latest_checkpoint(run_dir) is not None:
        raise FileExistsError(
            f"{run_dir} already holds a run: pass --resume to continue it or choose another directory"
        )
    featurizer = make_featurizer(config.features)
    vec_env = make_vec_env(config, featurizer)
    model = build_model(config, vec_env, tensorboard_log=str(run_dir / "tensorboard"))  # before any file is written
    run_dir.mkdir(parents=True, exist_ok=True)
    write_text_atomic(config_path, json.dumps(asdict(config), indent=2, sort_keys=True) + "\n")
    checkpoint = latest_checkpoint(run_dir) if resume else None
    if checkpoint is not None:
        load_model_state(model, checkpoint)
    remaining = config.total_timesteps - model.num_timesteps
    callbacks = [
        *(callbacks or []),
        Checkpoints(run_dir / "checkpoints", max(config.checkpoint_every // config.n_envs, 1)),
    ]
    if config.progress_bar:
        callbacks.append(ProgressBar(config.total_timesteps))
    if remaining > 0:
        model.learn(remaining, callback=CallbackList(callbacks), reset_num_timesteps=False, tb_log_name="run")
    save_model(model, run_dir / MODEL_STEM)
    returns = [info["r"] for info in model.ep_info_buffer or ()]  # None when a resumed run had nothing to do
    vec_env.close()
    return {
        "run_dir": str(run_dir),
        "timesteps": int(model.num_timesteps),
        "resumed_from": str(checkpoint) if checkpoint else None,
        "episodes_in_last_window": len(returns),
        "mean_return_last_window": float(np.mean(returns)) if returns else None,
    }


def evaluate(
    run_dir: str | Path, episodes: int = 10, seed: int = 10_000, env_id: str | None = None, deterministic: bool = True
) -> dict[str, Any]:
    """Play ``episodes`` episodes (seeds ``seed``, ``seed + 1``, ...) with the run's model: its most likely
    actions (``deterministic``) or samples of its policy (seeded by each episode's seed)."""
    from textagents.agents.episode import play_episode
    from textagents.sb3.agent import SB3Agent, TrainedRun

    run = TrainedRun.load(run_dir)
    env = run.make_env(env_id)
    records = [
        play_episode(env, SB3Agent(run, deterministic=deterministic, seed=seed + episode), seed=seed + episode)
        for episode in range(episodes)
    ]
    env.close()
    returns = [r.episode_return for r in records]
    return {
        "env_id": env_id or run.config.env_id,
        "episodes": episodes,
        "deterministic": deterministic,
        "mean_return": float(np.mean(returns)),
        "stderr_return": float(np.std(returns, ddof=1) / np.sqrt(episodes)) if episodes > 1 else 0.0,
        "success_rate": float(np.mean([r.success for r in records])),
        "mean_length": float(np.mean([r.steps for r in records])),
    }
