"""The example method's settings."""

from __future__ import annotations

from dataclasses import dataclass

from textagents.methods.core.config import MethodConfig


@dataclass(frozen=True)
class ExampleConfig(MethodConfig):
    """``episodes_per_iteration`` played per REINFORCE update on ``env_id`` (episodes of at most
    ``max_steps``), ``learning_rate``; ``prior_weight`` times the LLM's log-probabilities of the commands
    (GLAM's prompt) is added to the learned logits (0: no LLM); ``eval_episodes`` on held-out seeds."""

    env_id: str = "BabyAI-Text-GoToRedBallNoDists-v0"
    max_steps: int = 24
    episodes_per_iteration: int = 8
    learning_rate: float = 0.5
    prior_weight: float = 0.0
    eval_episodes: int = 20

    def __post_init__(self) -> None:
        super().__post_init__()
        self.require_positive("max_steps", "episodes_per_iteration", "eval_episodes")
        if self.learning_rate <= 0:
            raise ValueError(f"learning_rate must be > 0, got {self.learning_rate}")
        if self.prior_weight < 0:
            raise ValueError(f"prior_weight must be >= 0 (0: no LLM prior), got {self.prior_weight}")
