"""Background-knowledge shaping's settings (METHODS.md; the background-knowledge-rl code)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from textagents.methods.bk.shaping import SHAPING_FORMS
from textagents.methods.core.config import MethodConfig
from textagents.methods.core.original_prompts import PROMPT_SOURCES

#: The original's LLM settings (``utils/azure_llm.py:4-10``: temperature 0.5 and no ``max_tokens``, so an answer
#: runs until the model stops or its context is full), seeded so that a run is reproducible.
SAMPLING = {"max_tokens": None, "temperature": 0.5, "seed": 0}

SHAPINGS = ("none", "code", "goal", "pref")
PREF_LABELLERS = ("llm", "env")
POLICY_NETWORKS = ("cnn", "mlp")
VEC_ENVS = ("sync", "subproc")
GOAL_RULES = ("original", "count")
#: BK-Goal's similarity thresholds for all-MiniLM-L6-v2 per rule (the paper's 0.85 was for bert-small),
#: from ``benchmarks/methods/bk/calibrate_goal_threshold.py`` on real BabyAI-Text captions: a goal against
#: the last transition's caption (``original``), against one sentence of the caption (``count``).
GOAL_THRESHOLDS = {"original": 0.4, "count": 0.6}


@dataclass(frozen=True)
class BKConfig(MethodConfig):
    """PPO (Stable-Baselines3, with the original's settings and update: ``OriginalPPO``) on ``env_id`` seen
    through minigrid's grid encoding (Crafter: its symbolic local view and inventory), its reward shaped by a
    potential from the run's LLM (``prompt_source``: ours or the ``original``'s, downloaded), by ``shaping``:

    - ``none``: PPO alone.
    - ``code`` (BK-Code): the LLM writes ``potential(observation)`` in ``code_rounds`` rounds of feedback on
      ``code_samples`` observations of a random policy; it runs in the sandbox. ``code_file``: a potential
      written elsewhere (by hand, or by a stronger LLM) used instead of asking the run's LLM, checked and run
      in the sandbox the same way. Φ is kept by observation text for up to ``code_cache_entries`` texts (0:
      none; the contract is Φ = f(text), checked while labelling), and with ``code_batch`` the observations
      of a vectorised step are sent to the sandbox in one request (the ``original`` form's, whose
      observations are known before the step). Neither changes Φ, only its cost.
    - ``goal`` (BK-Goal): the LLM proposes goals for each mission in ``goal_rounds`` rounds, each shown
      ``goal_samples`` observations of a random policy. ``goal_rule: original``: Φ = the best cosine
      similarity (all-MiniLM-L6-v2), if above the threshold, between the last transition's caption and the
      goals of the 3 rounds whose observations are nearest the episode's last ``goal_samples`` ones;
      ``count``: Φ = the number of the mission's goals one sentence of the caption matches (>= threshold).
      ``goal_threshold``: None for the rule's calibrated value (``GOAL_THRESHOLDS``).
    - ``pref`` (BK-Pref): the LLM labels ``pref_pairs`` pairs of windows of a random policy's steps, each
      ``pref_window`` consecutive (action, observation) snippets of one episode (the original's 5; ``1``: one
      snippet); a transformer (``pref_layers`` layers of width ``pref_width`` with ``pref_heads`` heads, each
      snippet of a window cut at ``pref_max_tokens`` words) is trained on them for ``pref_epochs`` epochs (AdamW,
      ``pref_learning_rate``) with a Bradley-Terry loss and the original's label smoothing ``pref_smoothing``; Φ is
      its score of the episode's last ``pref_window`` snippets (padded at the episode's start with copies of its
      first, as the original). ``pref_labeller: env`` labels the same pairs by the env's own progress signal instead
      of the LLM (an oracle control: BK-Pref with labels that are right, as SimpleOracle is for ELLM).
      ``pref_action``: snippets name the action that led to the observation, as the original's do; then Φ depends on
      the action as well as the state, so the shaping pays for choosing an action the scorer likes at every step,
      which is no longer potential-based (Ng et al.); ``false`` scores (mission, observation) only.

    ``labelling_seed`` draws the random policy's observations the LLM is shown (all three) and BK-Pref's
    scorer (its start and its batches): the original labels once, with seed 42, and trains every RL seed on
    that knowledge (``label_preference.py:82,88``, ``train_preference_model.py:48,75-76``), so by default
    every ``seed`` of a comparison asks the same questions; null draws them from the run's ``seed`` instead
    (ours before: the knowledge then varies with the seed too). ``llm_max_tokens``: the labellers' answers are
    cut at that many tokens; null (the original's API calls set no limit) lets an answer run until the model
    stops or its context is full, which a small model's looping answers do.

    Shaping (``shaping.SHAPING_FORMS``): ``shaping_form`` ``original`` (γΦ(s_t) − Φ(s_{t−1}) on the
    observations actions are taken from, Φ over the std of its discounted running sum), ``markovian``
    (γΦ(s') − Φ(s), Φ over the std of raw Φ) or ``masked`` (``markovian`` with Φ = 0 at termination);
    ``gamma``, ``reward_scale``. PPO: ``learning_rate``, ``clip``, ``envs`` x ``steps_per_env`` per update,
    ``ppo_epochs`` over minibatches of ``minibatch_size``, ``gae_lambda``, ``ent_coef``, ``vf_coef``,
    ``value_clip`` (None: unclipped), ``max_grad_norm``; ``time_limit_as_done``: a truncated episode's
    target ends there (the original) instead of SB3's bootstrap; ``policy_network``: ``cnn`` (the original's
    network, ``policy.OriginalPolicy``) or ``mlp`` (SB3's default MultiInputPolicy over every part of the
    observation, the mission's words included); ``vec_env``: ``sync``, the original's (one process), or
    ``subproc`` (ours: each env in a process of its own, SB3's ``SubprocVecEnv``; the same rollouts, for
    machines with cores to spare; ``shaping: none`` only, since the potentials live in this process). Each
    iteration trains on ``frames_per_iteration`` frames; evaluation: ``eval_episodes``, actions by argmax
    (``eval_deterministic``, the original's) or sampled, success = return > 0."""

    env_id: str = "BabyAI-Text-GoToLocal-RedBall-S20-v0"
    shaping: str = "code"
    prompt_source: str = "ours"
    code_rounds: int = 3
    code_samples: int = 5
    code_file: str | None = None
    code_cache_entries: int = 100_000
    code_batch: bool = True
    goal_rounds: int = 3
    goal_samples: int = 5
    goal_rule: str = "original"
    goal_threshold: float | None = None
    pref_pairs: int = 200
    pref_epochs: int = 20
    pref_layers: int = 2
    pref_width: int = 32
    pref_heads: int = 1
    pref_max_tokens: int = 64
    pref_learning_rate: float = 3e-4
    pref_smoothing: float = 0.3
    pref_labeller: str = "llm"
    pref_action: bool = True
    pref_window: int = 5
    labelling_seed: int | None = 42
    llm_max_tokens: int | None = None
    shaping_form: str = "original"
    reward_scale: float = 10.0
    gamma: float = 0.99
    learning_rate: float = 3e-4
    clip: float = 0.1
    envs: int = 8
    steps_per_env: int = 128
    ppo_epochs: int = 4
    minibatch_size: int = 256
    gae_lambda: float = 0.95
    ent_coef: float = 0.01
    vf_coef: float = 0.5
    value_clip: float | None = 0.1
    max_grad_norm: float = 0.5
    time_limit_as_done: bool = True
    policy_network: str = "cnn"
    vec_env: str = "sync"
    frames_per_iteration: int = 8192
    eval_episodes: int = 50
    eval_deterministic: bool = True

    def __post_init__(self) -> None:
        super().__post_init__()
        for name, valid in (
            ("prompt_source", PROMPT_SOURCES),
            ("shaping", SHAPINGS),
            ("pref_labeller", PREF_LABELLERS),
            ("shaping_form", SHAPING_FORMS),
            ("policy_network", POLICY_NETWORKS),
            ("goal_rule", GOAL_RULES),
            ("vec_env", VEC_ENVS),
        ):
            self.require_choice(name, valid)
        if self.vec_env == "subproc" and self.shaping != "none":
            raise ValueError(
                f"vec_env subproc needs shaping none (the potentials live here), got shaping {self.shaping!r}"
            )
        if self.goal_threshold is not None and not 0 < self.goal_threshold <= 1:
            raise ValueError(f"goal_threshold must be in (0, 1] (or null: the rule's own), got {self.goal_threshold}")
        if not 0 <= self.pref_smoothing < 1:
            raise ValueError(f"pref_smoothing must be in [0, 1), got {self.pref_smoothing}")
        for name in ("pref_learning_rate", "learning_rate", "clip", "max_grad_norm"):
            if getattr(self, name) <= 0:
                raise ValueError(f"{name} must be > 0, got {getattr(self, name)}")
        if self.value_clip is not None and self.value_clip <= 0:
            raise ValueError(f"value_clip must be > 0 (or null: no clipping), got {self.value_clip}")
        for name in ("gamma", "gae_lambda"):
            if not 0 < getattr(self, name) <= 1:
                raise ValueError(f"{name} must be in (0, 1], got {getattr(self, name)}")
        if self.llm_max_tokens is not None and self.llm_max_tokens <= 0:
            raise ValueError(
                f"llm_max_tokens must be > 0 (or null: no limit, the original's), got {self.llm_max_tokens}"
            )
        if self.code_cache_entries < 0:
            raise ValueError(f"code_cache_entries must be >= 0 (0: no cache), got {self.code_cache_entries}")
        for name in ("ent_coef", "vf_coef"):
            if getattr(self, name) < 0:
                raise ValueError(f"{name} must be >= 0, got {getattr(self, name)}")
        self.require_positive(
            "code_rounds",
            "code_samples",
            "goal_rounds",
            "goal_samples",
            "pref_pairs",
            "pref_epochs",
            "pref_layers",
            "pref_width",
            "pref_heads",
            "pref_max_tokens",
            "pref_window",
            "envs",
            "steps_per_env",
            "ppo_epochs",
            "minibatch_size",
            "frames_per_iteration",
            "eval_episodes",
        )
        if self.pref_width % self.pref_heads:
            raise ValueError(f"pref_width must be a multiple of pref_heads ({self.pref_heads}), got {self.pref_width}")

    @property
    def knowledge_seed(self) -> int:
        """The seed of the labelling's samples and BK-Pref's scorer: ``labelling_seed``, or the run's."""
        return self.seed if self.labelling_seed is None else self.labelling_seed

    def sampling(self) -> dict[str, Any]:
        """The labellers' LLM settings: the original's (``SAMPLING``), answers cut at ``llm_max_tokens``."""
        return {**SAMPLING, "max_tokens": self.llm_max_tokens}

    @property
    def goal_similarity(self) -> float:
        """BK-Goal's threshold: ``goal_threshold``, or the rule's calibrated one."""
        return GOAL_THRESHOLDS[self.goal_rule] if self.goal_threshold is None else self.goal_threshold
