"""ELLM's settings (Du et al. 2023; METHODS.md)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal, get_args

from textagents.methods.core.config import MethodConfig
from textagents.methods.core.original_prompts import PROMPT_SOURCES
from textagents.methods.ellm.prompt import PARSING

GOAL_SOURCES = ("none", "uniform", "oracle", "llm")
GOAL_ENCODINGS = ("joint", "separate")
ACTION_SPACES = ("harder", "easier")
DQN_ENCODER_INITS = ("original", "pretrained")
#: ``shared_encoder``: the original's target critic, built on the online critic's encoder object (dqn.py:239-243),
#: so only its V and A heads are its own (copied at each sync) and its encoder is always the online one;
#: ``full_copy``: the textbook target, a whole copy of the network frozen between syncs.
TargetNetwork = Literal["shared_encoder", "full_copy"]
TARGET_NETWORKS = get_args(TargetNetwork)
#: ``episode``: the original's (replay_buffer.py:132-134, 186-188), a finished episode uniformly, then a start
#: uniformly among its first ``max(1, len - n_steps + 1)`` steps; ``transition``: a transition uniformly over
#: the replay, the running episode's included.
ReplaySampling = Literal["episode", "transition"]
REPLAY_SAMPLINGS = get_args(ReplaySampling)


@dataclass(frozen=True)
class EllmConfig(MethodConfig):
    """Each iteration plays ``frames_per_iteration`` frames of ``env_id`` in its ``action_space``
    (``harder``, the original's ``action_space_type``: 139 actions, each verb with each noun, ``hard=True``;
    ``easier``: its 27 valid actions) with the DQN agent rewarded by
    ELLM's intrinsic reward for the goals of ``goal_source`` (``none``: no goals; ``uniform``; ``oracle``:
    SimpleOracle; ``llm``: the run's model, with the prompt of ``prompt_source``: ``ours`` or the
    ``original``'s, downloaded, answers cut at ``llm_max_tokens``: the original's 200, read as
    ``answer_parsing`` says: ``original`` or ``lenient``, see ``prompt.PARSING``), at similarity
    ``threshold``. ``uniform``: every action name, as the original (``uniform_goals``: ours, that many drawn
    at each step). ``check_action_success``: reward only an action that succeeded; ``None`` as the original,
    off for ``uniform`` (an attempt pays) and on otherwise. ``env_reward`` (the original's
    ``env_spec.env_reward``) adds the env's own reward (achievement unlocks) to it: ``None`` adds it for
    ``none`` only (the task-reward reference), ``false`` with ``none`` is pretraining with no reward at all.
    ``time_limit_terminal``: the episode's time limit (400 steps) ends it as a death does, with no
    bootstrap, as the original (``false``: bootstrap from it, the textbook treatment of a truncation).
    The agent sees the pixels and, as the original's ``use_language_state: sbert`` and ``use_goal`` (both off
    in its ``config.yaml``, both on in the paper's runs), ``language_state``: the caption's sentence embedding,
    and ``goal_conditioned``: the goal string's. With both, ``goal_encoding`` ``joint``, as the original, is one
    sentence-encoder pass over the caption's and the goal string's tokens together (``joint.py``); ``separate``
    (ours) the two embeddings side by side. The DQN's sentence encoder (none for pixels only) is a copy of the
    reward's: ``dqn_encoder_init`` ``original`` re-initialises its linear layers as the original's ``Critic``
    does (orthogonal, zero biases; embeddings and LayerNorms kept), ``pretrained`` keeps them (ours; the
    reward's encoder is used). ``target_network``: ``shared_encoder``, as the original, the target has only its
    heads of its own and reads the online encoder (``TargetNetwork``); ``full_copy`` (ours) a whole frozen
    copy. ``replay_sampling``: ``episode``, as the original, draws finished episodes uniformly, then a start
    in each (``ReplaySampling``); ``transition`` (ours) draws transitions uniformly. ``clip_reward``, as the
    original's ``config.yaml``: each step's reward clipped to [-1, 1] inside the n-step return.
    ``cuda_graphs`` (ours, off by default): on CUDA the DQN's update and greedy acting replay CUDA graphs.
    ``replay_on_device`` (ours, off by default): the replay's frames and texts kept on ``device`` and each
    update's batch gathered there (the same batches; GPU memory for ``buffer_size`` transitions).
    DQN: the original's ``config.yaml`` (``learning_rate``, ``n_steps``, ..., ``frame_size`` 84,
    ``greyscale``, ``frame_stack`` 4, heads of ``head_layers`` hidden layers of ``hidden`` units).
    Evaluation: ``eval_episodes`` episodes at ``eval_epsilon``, counting achievements."""

    env_id: str = "Crafter-Text-ELLM-v0"
    action_space: str = "harder"
    goal_source: str = "llm"
    prompt_source: str = "ours"
    answer_parsing: str = "original"
    llm_max_tokens: int = 200
    uniform_goals: int | None = None
    check_action_success: bool | None = None
    threshold: float = 0.85
    env_reward: bool | None = None
    time_limit_terminal: bool = True
    language_state: bool = False
    goal_conditioned: bool = False
    goal_encoding: str = "joint"
    dqn_encoder_init: str = "original"
    target_network: str = "shared_encoder"
    replay_sampling: str = "episode"
    clip_reward: bool = True
    cuda_graphs: bool = False
    replay_on_device: bool = False
    frames_per_iteration: int = 10_000
    learning_rate: float = 6.25e-5
    gamma: float = 0.99
    n_steps: int = 3
    batch_size: int = 64
    buffer_size: int = 5_000_000
    learning_starts: int = 5_000
    train_every: int = 4
    target_update_every: int = 8_000
    epsilon_end: float = 0.01
    epsilon_frames: int = 1_000_000
    adam_eps: float = 1e-8
    max_grad_norm: float | None = None
    frame_size: int = 84
    greyscale: bool = True
    frame_stack: int = 4
    hidden: int = 512
    head_layers: int = 2
    eval_episodes: int = 10
    eval_epsilon: float = 0.001

    @property
    def frame_shape(self) -> tuple[int, int, int]:
        """What the network sees: ``frame_stack`` frames of ``frame_size`` pixels, greyscale or RGB."""
        return (self.frame_size, self.frame_size, self.frame_stack * (1 if self.greyscale else 3))

    @property
    def hard_actions(self) -> bool:
        """The env's ``hard`` argument."""
        return self.action_space == "harder"

    @property
    def joint_goal_input(self) -> bool:
        """The caption and the goal string in one encoder pass."""
        return self.language_state and self.goal_conditioned and self.goal_encoding == "joint"

    @property
    def text_inputs(self) -> int:
        """How many sentence embeddings the agent's text vector holds (0: pixels only)."""
        return 1 if self.joint_goal_input else int(self.language_state) + int(self.goal_conditioned)

    @property
    def checks_action_success(self) -> bool:
        if self.check_action_success is None:
            return self.goal_source != "uniform"
        return self.check_action_success

    @property
    def adds_env_reward(self) -> bool:
        return self.goal_source == "none" if self.env_reward is None else self.env_reward

    def stored_terminal(self, terminated: bool, truncated: bool) -> bool:
        """Whether the agent learns from this transition as from an episode's end with no bootstrap."""
        return terminated or (truncated and self.time_limit_terminal)

    def __post_init__(self) -> None:
        super().__post_init__()
        self.require_choice("prompt_source", PROMPT_SOURCES)
        self.require_choice("goal_source", GOAL_SOURCES)
        self.require_choice("answer_parsing", PARSING)
        self.require_choice("goal_encoding", GOAL_ENCODINGS)
        self.require_choice("action_space", ACTION_SPACES)
        self.require_choice("dqn_encoder_init", DQN_ENCODER_INITS)
        self.require_choice("target_network", TARGET_NETWORKS)
        self.require_choice("replay_sampling", REPLAY_SAMPLINGS)
        self.require_positive(
            "llm_max_tokens",
            "frames_per_iteration",
            "n_steps",
            "batch_size",
            "buffer_size",
            "train_every",
            "target_update_every",
            "epsilon_frames",
            "frame_size",
            "frame_stack",
            "hidden",
            "eval_episodes",
        )
        if self.uniform_goals is not None and self.uniform_goals < 1:
            raise ValueError(f"uniform_goals must be >= 1 or null (every action name), got {self.uniform_goals}")
        if self.head_layers < 0 or (self.max_grad_norm is not None and self.max_grad_norm <= 0):
            raise ValueError(
                f"head_layers must be >= 0 and max_grad_norm > 0 or null, got {self.head_layers}, {self.max_grad_norm}"
            )
        if not 0 < self.threshold <= 1 or not 0 <= self.eval_epsilon <= 1:
            raise ValueError(
                f"threshold must be in (0, 1] and eval_epsilon in [0, 1], got {self.threshold}, {self.eval_epsilon}"
            )
