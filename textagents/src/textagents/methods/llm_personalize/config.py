"""LLM-Personalize's settings (Han et al. 2024; METHODS.md)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from textagents.llm.gguf_export import OUTTYPES
from textagents.methods.core.config import MethodConfig
from textagents.methods.llm_personalize.plan_parser import PARSERS
from textagents.methods.llm_personalize.planner import COMMAND_BUDGET, FAIL_THRESHOLD, PlanRules
from textagents.methods.llm_personalize.rollout_backend import ROLLOUT_BACKENDS
from textenvs.core.messages import short_repr
from textenvs.envs.housekeep.registration import LLM_PERSONALIZE_SCENES

BASELINES = ("saycan", "sayplan")
FINE_TUNING = ("local", "openai")
SERVED_WEIGHTS = ("none", "lora_adapter", "restart")
PLACEHOLDERS = ("{model}", "{port}")


@dataclass(frozen=True)
class LLMPersonalizeConfig(MethodConfig):
    """Iteration 1 evaluates the zero-shot planner, then fine-tunes it on the demonstrator's plans
    (``train_demonstrations`` + ``validation_demonstrations`` per scene); each later iteration is one round
    of reinforced self-training on ``self_training_rollouts`` training episodes per scene. Evaluation: the
    first ``eval_episodes`` episodes of each scene's train and test split, played by ``eval_planner``: the run's
    planner (``planner``), or a baseline (``saycan``, ``sayplan``: with ``textagents method eval --checkpoint 0
    --set eval_planner=saycan``, a baseline on more episodes than the run gave it). Every iteration's checkpoint
    is kept (``keep_checkpoints``: a checkpoint is the path of that round's model), so that each round's planner
    can be evaluated again (``method eval --checkpoint K``). Fine-tuning: ``lora`` (rank
    ``lora_r``) or full, ``learning_rate``, ``epochs``, ``batch_size``, ``max_length`` tokens; ``micro_batch``
    examples a forward and backward pass, accumulated into each batch's update (None: the whole batch; less
    memory, the same update). Planning:
    ``max_new_tokens`` per plan, sampled at ``temperature`` with ``top_p`` (the paper's 1.0 and 0.9),
    ``command_budget`` per episode, at most ``max_steps_per_plan`` steps.
    ``baselines`` (SayCan, SayPlan-style replanning) are evaluated once, beside the zero-shot planner, on the
    first ``baseline_eval_episodes`` of each scene's evaluation episodes per split (None: all of them), with
    ``baseline_command_budget`` steps per episode (None: ``command_budget``).
    ``fine_tuning``: ``local`` (trl on the transformers model) or ``openai`` (OpenAI's fine-tuning API, its
    job's status checked every ``openai_poll_s`` seconds).
    ``rollout_backend``: the planner's and SayPlan's generation on the run's transformers model
    (``transformers``), or with llama.cpp on a GGUF export (``rollout_gguf``: ``f16``, ``q8_0`` or ``f32``) of the
    current weights (``llamacpp``: local fine-tuning only; SayCan's scores stay on transformers), keeping up to
    ``rollout_state_cache_mb`` MB of KV states so that an episode's next prompt starts from its previous call's
    state (0: off; the same numbers up to float rounding) and, with ``rollout_stop_after_read_steps``, ending a
    plan's generation once it has more than ``max_steps_per_plan`` steps (the steps read are then whole: the
    same plans, fewer tokens; the answers recorded are cut there). ``rollout_parallel`` > 1 decodes that many
    of a round's plans together (``llm.llamacpp_parallel``: the same sampling per plan, several times the new
    tokens per CPU second; a round's answers are then logged when the round ends, not one by one).
    ``served_weights`` (``served.py``): ``none`` (the planner is the run's model), ``lora_adapter`` (the server
    at ``base_url`` loads each round's LoRA adapter) or
    ``restart`` (the method runs ``serve_command`` with ``{model}`` and ``{port}`` replaced — on ``serve_port``,
    0: a free one — waits at most ``serve_timeout_s`` seconds for it, and restarts it on each round's weights)."""

    iterations: int = 3
    keep_checkpoints: int = 1_000
    scenes: tuple[str, ...] = LLM_PERSONALIZE_SCENES
    train_demonstrations: int = 10
    validation_demonstrations: int = 2
    self_training_rollouts: int = 10
    eval_episodes: int = 5
    eval_planner: str = "planner"
    lora: bool = True
    lora_r: int = 8
    learning_rate: float = 2e-4
    epochs: float = 1.0
    batch_size: int = 4
    micro_batch: int | None = None
    max_length: int = 1024
    max_new_tokens: int = 256
    temperature: float = 1.0
    top_p: float = 0.9
    frequency_penalty: float = 0.2
    presence_penalty: float = 0.2
    command_budget: int = COMMAND_BUDGET
    max_steps_per_plan: int = 10
    parser: str = "original"
    fail_threshold: int = FAIL_THRESHOLD
    baselines: tuple[str, ...] = ("saycan", "sayplan")
    baseline_eval_episodes: int | None = None
    baseline_command_budget: int | None = None
    fine_tuning: str = "local"
    openai_poll_s: float = 30.0
    rollout_backend: str = "transformers"
    rollout_gguf: str = "f16"
    rollout_state_cache_mb: int = 2048
    rollout_stop_after_read_steps: bool = True
    rollout_parallel: int = 1
    served_weights: str = "none"
    serve_command: tuple[str, ...] = ()
    serve_port: int = 0
    serve_timeout_s: float = 600.0

    def __post_init__(self) -> None:
        super().__post_init__()
        if not self.scenes:
            raise ValueError("scenes must name at least one scene")
        object.__setattr__(self, "scenes", tuple(self.scenes))
        object.__setattr__(self, "baselines", tuple(self.baselines))
        object.__setattr__(self, "serve_command", tuple(self.serve_command))
        self.require_choice("parser", PARSERS)
        self.require_choice("fine_tuning", FINE_TUNING)
        self.require_choice("rollout_backend", ROLLOUT_BACKENDS)
        self.require_choice("rollout_gguf", OUTTYPES)
        if self.rollout_backend == "llamacpp" and self.fine_tuning != "local":
            raise ValueError("rollout_backend: llamacpp runs locally fine-tuned weights: it needs fine_tuning: local")
        self.require_choice("served_weights", SERVED_WEIGHTS)
        if self.served_weights != "none" and self.rollout_backend != "transformers":
            raise ValueError("served_weights and rollout_backend: llamacpp both choose the planner's LLM: set one")
        self._check_serving()
        self.require_choice("eval_planner", ("planner", *BASELINES))
        unknown = sorted(set(self.baselines) - set(BASELINES))
        if unknown:
            raise ValueError(f"unknown baseline(s) {short_repr(unknown)}; valid: {list(BASELINES)}")
        self.require_positive(
            "train_demonstrations",
            "self_training_rollouts",
            "eval_episodes",
            "lora_r",
            "batch_size",
            "max_length",
            "max_new_tokens",
            "command_budget",
            "max_steps_per_plan",
        )
        if self.rollout_parallel < 1:
            raise ValueError(f"rollout_parallel must be >= 1 (1: one plan at a time), got {self.rollout_parallel}")
        if self.rollout_state_cache_mb < 0:
            raise ValueError(f"rollout_state_cache_mb must be >= 0 (0: off), got {self.rollout_state_cache_mb}")
        if self.micro_batch is not None and (self.micro_batch < 1 or self.batch_size % self.micro_batch):
            raise ValueError(
                f"micro_batch must divide batch_size ({self.batch_size}) or be unset, got {self.micro_batch}"
            )
        if self.baseline_eval_episodes is not None and not 1 <= self.baseline_eval_episodes <= self.eval_episodes:
            raise ValueError(
                f"baseline_eval_episodes must be in 1..eval_episodes ({self.eval_episodes}) or unset, got "
                f"{self.baseline_eval_episodes}"
            )
        if self.baseline_command_budget is not None and self.baseline_command_budget < 1:
            raise ValueError(f"baseline_command_budget must be >= 1 or unset, got {self.baseline_command_budget}")
        if self.validation_demonstrations < 0:
            raise ValueError(f"validation_demonstrations must be >= 0, got {self.validation_demonstrations}")
        if self.temperature < 0 or not 0 < self.top_p <= 1:
            raise ValueError(f"temperature must be >= 0 and top_p in (0, 1], got {self.temperature}, {self.top_p}")
        if not (-2 <= self.frequency_penalty <= 2 and -2 <= self.presence_penalty <= 2):
            raise ValueError(
                f"frequency_penalty and presence_penalty must be in [-2, 2], got {self.frequency_penalty}, "
                f"{self.presence_penalty}"
            )
        if self.fail_threshold < 0:
            raise ValueError(f"fail_threshold must be >= 0, got {self.fail_threshold}")
        if self.openai_poll_s <= 0:
            raise ValueError(f"openai_poll_s must be > 0, got {self.openai_poll_s}")
        if self.learning_rate <= 0 or self.epochs <= 0:
            raise ValueError(f"learning_rate and epochs must be > 0, got {self.learning_rate}, {self.epochs}")

    def _check_serving(self) -> None:
        """``served_weights`` with what it needs (a clear error naming the setting otherwise)."""
        if not 0 <= self.serve_port <= 65535 or self.serve_timeout_s <= 0:
            raise ValueError(
                f"serve_port must be in 0..65535 and serve_timeout_s > 0, got {self.serve_port}, {self.serve_timeout_s}"
            )
        if self.serve_command and self.served_weights != "restart":
            raise ValueError(f"serve_command is run by served_weights: restart, not {self.served_weights!r}")
        if self.served_weights == "none":
            return
        served = f"served_weights: {self.served_weights}"
        if self.fine_tuning != "local":
            raise ValueError(f"{served} fine-tunes locally: set fine_tuning: local")
        if self.llm_backend != "transformers":
            raise ValueError(f"{served} fine-tunes a transformers model: set llm_backend: transformers")
        if self.served_weights == "lora_adapter":
            if not self.lora:
                raise ValueError("served_weights: lora_adapter serves LoRA adapters: set lora: true (or use restart)")
            if self.base_url is None:
                raise ValueError(
                    "served_weights: lora_adapter asks a running server: give its base_url (--base-url), e.g. vLLM "
                    "started with --enable-lora or textagents serve --enable-lora"
                )
            return
        if self.base_url is not None:
            raise ValueError("served_weights: restart starts its own server: leave base_url unset")
        missing = [p for p in PLACEHOLDERS if not any(p in arg for arg in self.serve_command)]
        if missing:
            raise ValueError(
                f"serve_command must be an argument list holding {' and '.join(PLACEHOLDERS)} (e.g. [textagents, "
                f"serve, --model, '{{model}}', --port, '{{port}}']), got {short_repr(list(self.serve_command))}"
            )

    def sampling(self) -> dict[str, Any]:
        """This config's sampling settings (``play`` takes the rest of ``PAPER_SAMPLING``)."""
        return {
            "max_tokens": self.max_new_tokens,
            "temperature": self.temperature,
            "top_p": self.top_p,
            "frequency_penalty": self.frequency_penalty,
            "presence_penalty": self.presence_penalty,
        }

    def plan_rules(self, variant: str = "planner") -> PlanRules:
        """How ``variant`` (``planner.VARIANTS``) reads and takes plans: the baselines with their own budget."""
        budget = self.command_budget
        if variant != "planner" and self.baseline_command_budget is not None:
            budget = self.baseline_command_budget
        return PlanRules(self.parser, self.max_steps_per_plan, budget, self.fail_threshold)
