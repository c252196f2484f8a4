"""Background-knowledge shaping's settings (METHODS.md; the background-knowledge-rl code)."""

from __future__ import annotations

from dataclasses import dataclass

from textagents.methods.core.config import MethodConfig
from textagents.methods.core.original_prompts import PROMPT_SOURCES

SHAPINGS = ("none", "code", "goal", "pref")
PREF_LABELLERS = ("llm", "env")
#: BK-Goal's similarity threshold for all-MiniLM-L6-v2 (the paper's 0.85 was for bert-small):
#: ``benchmarks/methods/bk/calibrate_goal_threshold.py`` on real BabyAI-Text captions.
GOAL_THRESHOLD = 0.6


@dataclass(frozen=True)
class BKConfig(MethodConfig):
    """PPO (Stable-Baselines3, the paper's lr 3e-4, clip 0.1, ``envs`` x ``steps_per_env`` per update) on
    ``env_id`` seen through minigrid's grid encoding and the goal, its reward shaped by a potential from the
    run's LLM (``prompt_source``: ours or the ``original``'s, downloaded), by ``shaping``:

    - ``none``: PPO alone.
    - ``code`` (BK-Code): the LLM writes ``potential(observation)`` in ``code_rounds`` rounds of feedback on
      ``code_samples`` observations of a random policy; it runs in the sandbox. ``code_file``: a potential
      written elsewhere (by hand, or by a stronger LLM) used instead of asking the run's LLM, checked and run
      in the sandbox the same way.
    - ``goal`` (BK-Goal): the LLM proposes goals for each mission in ``goal_rounds`` rounds, each shown
      ``goal_samples`` observations of a random policy; Φ = the number of goals a sentence of the caption
      matches (all-MiniLM-L6-v2 cosine similarity >= ``goal_threshold``).
    - ``pref`` (BK-Pref): the LLM labels ``pref_pairs`` pairs of (action, observation) snippets of a random
      policy; a transformer (``pref_layers`` layers of width ``pref_width``, snippets cut at
      ``pref_max_tokens`` words) is trained on them for ``pref_epochs`` epochs (Adam, ``pref_learning_rate``)
      with a Bradley-Terry loss and the original's label smoothing ``pref_smoothing``; its score is Φ.
      ``pref_labeller: env`` labels the same pairs by the env's own progress signal instead of the LLM (an
      oracle control: BK-Pref with labels that are right, as SimpleOracle is for ELLM). ``pref_action``:
      snippets name the action that led to the observation, as the original's do; then Φ depends on the
      action as well as the state, so the shaping pays for choosing an action the scorer likes at every
      step, which is no longer potential-based (Ng et al.); ``false`` scores (mission, observation) only.

    Shaping: ``gamma``, ``reward_scale``, ``terminal`` (``original`` or ``masked``). Each iteration trains on
    ``frames_per_iteration`` frames; evaluation: ``eval_episodes``, success = return > 0."""

    env_id: str = "BabyAI-Text-GoToLocal-RedBall-S20-v0"
    shaping: str = "code"
    prompt_source: str = "ours"
    code_rounds: int = 3
    code_samples: int = 5
    code_file: str | None = None
    goal_rounds: int = 3
    goal_samples: int = 5
    goal_threshold: float = GOAL_THRESHOLD
    pref_pairs: int = 200
    pref_epochs: int = 20
    pref_layers: int = 2
    pref_width: int = 32
    pref_max_tokens: int = 64
    pref_learning_rate: float = 1e-3
    pref_smoothing: float = 0.3
    pref_labeller: str = "llm"
    pref_action: bool = True
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
        self.require_choice("prompt_source", PROMPT_SOURCES)
        self.require_choice("shaping", SHAPINGS)
        self.require_choice("pref_labeller", PREF_LABELLERS)
        if not 0 < self.goal_threshold <= 1:
            raise ValueError(f"goal_threshold must be in (0, 1], got {self.goal_threshold}")
        if not 0 <= self.pref_smoothing < 1:
            raise ValueError(f"pref_smoothing must be in [0, 1), got {self.pref_smoothing}")
        if self.pref_learning_rate <= 0:
            raise ValueError(f"pref_learning_rate must be > 0, got {self.pref_learning_rate}")
        if self.pref_width % 4:
            raise ValueError(f"pref_width must be a multiple of 4 (4 attention heads), got {self.pref_width}")
        self.require_positive(
            "code_rounds",
            "code_samples",
            "goal_rounds",
            "goal_samples",
            "pref_pairs",
            "pref_epochs",
            "pref_layers",
            "pref_width",
            "pref_max_tokens",
            "envs",
            "steps_per_env",
            "ppo_epochs",
            "minibatch_size",
            "frames_per_iteration",
            "eval_episodes",
        )
