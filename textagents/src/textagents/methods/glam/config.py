"""GLAM's settings (Carta et al. 2023; METHODS.md)."""

from __future__ import annotations

from dataclasses import dataclass

from textagents.llm.base import CROSS_ATTENTION
from textagents.methods.core.config import MethodConfig

AGENTS = ("glam", "npae", "drrn", "symbolic_ppo")
NPAE_POLICIES = ("action_head", "lm_scores")
SCORINGS = ("paper", "pinned", "logprob")


@dataclass(frozen=True)
class GlamConfig(MethodConfig):
    """Each iteration collects ``frames_per_env`` frames in each of ``envs`` copies of ``env_id``, then
    learns from them. ``agent``: ``glam`` (the pretrained LLM as the policy: π = softmax over the six
    commands' scores, a value head of width ``value_head_width`` on the last prompt token; PPO with
    ``ppo_epochs``, ``minibatch_size``, micro-batches of ``micro_batch`` for gradient accumulation),
    ``npae`` (the same architecture, fresh random weights), ``drrn`` or ``symbolic_ppo``. ``lora_r`` > 0:
    LoRA of that rank, else full fine-tuning. ``llm_processes``: LLM worker processes (lamorel's; 1 = in
    this process). ``prompt_observations``: how many of the last observations GLAM's prompt shows (the
    paper: 3, with the 2 commands between them; 1 makes every forward pass ~2x shorter). ``score_cache``:
    the policy's repeated (prompt, commands) calls under unchanged weights (an evaluation, a rollout) are
    computed once (a speed-up only: the same numbers; false: every call runs the model). ``prefix_sharing``:
    a forward pass computes a repeated prompt once and (decoder-only models) the leading tokens all its
    prompts share once, in the PPO update too, where ``micro_batch`` then counts distinct prompts (a speed-up
    only: the same numbers up to float rounding; false: every row's prompt in full). ``forward_batch``: at
    most this many prompts (and 256 tokens each) in one forward pass of the LLM, when scoring and in the
    update, where a larger micro-batch is split (speed and memory only; on a GPU a pass costs about the same
    for 16 prompts as for 32, so raise it with ``micro_batch`` where the memory allows).
    ``cross_attention`` (seq2seq models): ``per_prompt``, ``per_candidate`` or ``auto`` (per prompt on the
    CPU, per candidate on a GPU), as ``TransformersBackend`` (speed only: the same numbers up to float
    rounding).

    As the original (docs/methods/glam.md has the fidelity table): ``scoring`` ``paper`` (π = softmax(p /
    max p), p the product of a command's token probabilities; ``pinned``: the pinned code's summed raw
    logits; ``logprob``: softmax over summed log-probs, what the CPU results used); PPO trains on
    ``reward_scale``·r when r > 0, else 0 (the original: 20); ``npae_policy`` ``action_head`` (the
    original's MLP from the hidden state to the six actions' logits) or ``lm_scores`` (NPAE scored by its
    random LM head with ``scoring``, what the CPU results used); ``npae_load_embedding`` (NPAE's fresh model
    gets the pretrained embedding weights, as the original's NPAE runs; false: every weight fresh);
    ``candidate_special_tokens`` (tokenize the commands with the tokenizer's special tokens, so a seq2seq
    model's appended ``</s>`` is scored; null: as the scoring's original, true for ``paper`` (lamorel
    ``d76c7c2``), false for ``pinned`` and ``logprob`` (lamorel ``dce6f0d``)).

    Evaluation: ``eval_episodes`` on ``env_id`` and ``test_eval_episodes`` (default: ``eval_episodes``) on
    each of ``test_env_ids`` (unseen objects), success = return > 0; the test levels, whose long episodes
    dominate an evaluation's cost, at every ``test_levels_every``-th evaluation, on the untrained agent and
    at the last iteration. Baselines: ``drrn`` (GRU encoders of width ``drrn_hidden``, ``drrn_updates`` TD
    minibatches per iteration from a replay of ``replay_capacity``) and ``symbolic_ppo`` (SB3's PPO with
    the PPO settings above), both at ``baseline_learning_rate``."""

    env_id: str = "BabyAI-Text-GoToLocal-v0"
    test_env_ids: tuple[str, ...] = ("BabyAI-Text-MixedTestLocal-v0",)
    agent: str = "glam"
    envs: int = 32
    frames_per_env: int = 40
    max_steps: int | None = None
    prompt_observations: int = 3
    scoring: str = "paper"
    reward_scale: float = 20.0
    npae_policy: str = "action_head"
    npae_load_embedding: bool = True
    candidate_special_tokens: bool | None = None
    gamma: float = 0.99
    gae_lambda: float = 0.99
    clip: float = 0.2
    entropy_coef: float = 0.01
    value_coef: float = 0.5
    max_grad_norm: float = 0.5
    ppo_epochs: int = 4
    minibatch_size: int = 64
    micro_batch: int = 8
    forward_batch: int = 16
    cross_attention: str = "auto"
    learning_rate: float = 1e-6
    lora_r: int = 0
    value_head_width: int = 1024
    llm_processes: int = 1
    score_cache: bool = True
    prefix_sharing: bool = True
    eval_episodes: int = 1000
    eval_greedy: bool = False
    test_levels_every: int = 1
    test_eval_episodes: int | None = None
    baseline_learning_rate: float = 1e-4
    drrn_hidden: int = 128
    drrn_updates: int = 64
    replay_capacity: int = 100_000

    def __post_init__(self) -> None:
        super().__post_init__()
        object.__setattr__(self, "test_env_ids", tuple(self.test_env_ids))
        self.require_choice("agent", AGENTS)
        self.require_choice("scoring", SCORINGS)
        self.require_choice("npae_policy", NPAE_POLICIES)
        self.require_choice("cross_attention", CROSS_ATTENTION)
        if self.reward_scale <= 0:
            raise ValueError(f"reward_scale must be > 0 (the original: 20), got {self.reward_scale}")
        self.require_positive(
            "envs",
            "frames_per_env",
            "prompt_observations",
            "ppo_epochs",
            "minibatch_size",
            "micro_batch",
            "forward_batch",
            "llm_processes",
            "value_head_width",
            "eval_episodes",
            "test_levels_every",
            "drrn_hidden",
            "drrn_updates",
            "replay_capacity",
        )
        if self.test_eval_episodes is not None and self.test_eval_episodes < 1:
            raise ValueError(f"test_eval_episodes must be >= 1 (or null: eval_episodes), got {self.test_eval_episodes}")
        if self.lora_r < 0:
            raise ValueError(f"lora_r must be >= 0 (0: full fine-tuning), got {self.lora_r}")
        if not 0 < self.gamma <= 1 or not 0 <= self.gae_lambda <= 1:
            raise ValueError(f"gamma must be in (0, 1] and gae_lambda in [0, 1], got {self.gamma}, {self.gae_lambda}")
        if self.learning_rate <= 0 or self.clip <= 0:
            raise ValueError(f"learning_rate and clip must be > 0, got {self.learning_rate}, {self.clip}")
