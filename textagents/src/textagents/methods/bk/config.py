"""Background-knowledge shaping's settings (METHODS.md; the background-knowledge-rl code)."""

from __future__ import annotations

from dataclasses import dataclass

from textagents.methods.core.config import MethodConfig
from textagents.methods.core.original_prompts import PROMPT_SOURCES

SHAPINGS = ("none", "code")


@dataclass(frozen=True)
class BKConfig(MethodConfig):
    """PPO (Stable-Baselines3, the paper's lr 3e-4, clip 0.1, ``envs`` x ``steps_per_env`` per update) on
    ``env_id`` seen through minigrid's grid encoding and the goal, its reward shaped by a potential:
    ``shaping`` ``none`` (PPO alone) or ``code`` (BK-Code: the run's LLM writes ``potential(observation)``
    in ``code_rounds`` rounds of feedback on ``code_samples`` observations of a random policy; it runs in
    the sandbox; ``prompt_source``: ours or the ``original``'s, downloaded). Shaping: ``gamma``,
    ``reward_scale``, ``terminal`` (``original`` or ``masked``). Each iteration trains on
    ``frames_per_iteration`` frames; evaluation: ``eval_episodes``, success = return > 0."""

    env_id: str = "BabyAI-Text-GoToLocal-RedBall-S20-v0"
    shaping: str = "code"
    code_rounds: int = 3
    code_samples: int = 5
    prompt_source: str = "ours"
    terminal: str = "original"
    reward_scale: float = 10.0
    gamma: float = 0.99
    learning_rate: float = 3e-4
    clip: float = 0.1
    envs: int = 8
    steps_per_env: int = 128
    ppo_epochs: int = 4
    minibatch_size: int = 256
    frames_per_iteration: int = 8192
    eval_episodes: int = 50

    def __post_init__(self) -> None:
        super().__post_init__()
        if self.prompt_source not in PROMPT_SOURCES:
            raise ValueError(f"prompt_source must be one of {list(PROMPT_SOURCES)}, got {self.prompt_source!r}")
        if self.shaping not in SHAPINGS:
            raise ValueError(f"shaping must be one of {list(SHAPINGS)}, got {self.shaping!r}")
        self.require_positive(
            "code_rounds",
            "code_samples",
            "envs",
            "steps_per_env",
            "ppo_epochs",
            "minibatch_size",
            "frames_per_iteration",
            "eval_episodes",
        )
