"""``trl``'s ``GRPOTrainer`` on textenvs episodes: multi-turn rollouts through its ``rollout_func``.

A dataset row is one episode: ``prompt`` (the chat that opens it), ``env_id`` and ``seed``. GRPO repeats
each row ``num_generations`` times; ``TextEnvRolloutFunc`` plays every copy as a full episode with the
policy being trained (turn by turn, ``textagents.hub.rollout``) and returns one prompt + completion per
episode, with ``env_mask`` marking the env's tokens so that only the model's turns are trained on. The
episode's outcome travels to the reward functions as extra fields (``episode_return``, ``success``,
``valid_fraction``, ``turns``), read by ``episode_return_reward`` & co.

``trl`` hands a ``rollout_func`` the prompts only, so each episode is found again from its prompt: rows whose
opening chat repeats an earlier row's are left out of the dataset (same prompt, same episode).
"""

from __future__ import annotations

import json
import time
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from textagents.hub.chat import ChatStyle, ChatTokens, Messages
from textagents.hub.generate import ModelGenerator
from textagents.hub.rollout import EnvPool, EpisodeRollout, EpisodeSpec, first_messages, play_episodes

#: The fields ``TextEnvRolloutFunc`` adds for the reward functions, one value per completion.
EPISODE_FIELDS = ("episode_return", "success", "valid_fraction", "turns")


def _key(prompt: Messages) -> str:
    return json.dumps(prompt, sort_keys=True)


def episode_dataset(
    env_id: str, seeds: Iterable[int], style: ChatStyle | None = None, **env_kwargs: Any
) -> list[dict[str, Any]]:
    """One row per seed, ``{"prompt", "env_id", "seed"}``; a seed whose opening chat repeats an earlier
    seed's is left out (``datasets.Dataset.from_list`` takes the rows)."""
    pool = EnvPool(**env_kwargs)
    env = pool.take(env_id, 1)[0]
    rows, seen = [], set()
    for seed in seeds:
        prompt = first_messages(env, EpisodeSpec(env_id, int(seed)), style)
        if _key(prompt) not in seen:
            seen.add(_key(prompt))
            rows.append({"prompt": prompt, "env_id": env_id, "seed": int(seed)})
    pool.close()
    return rows


@dataclass(frozen=True)
class RolloutSettings:
    """``max_turns`` per episode, ``turn_tokens`` (new tokens per turn at most), the chat ``style`` the
    dataset was built with, ``env_kwargs`` for ``gym.make``."""

    max_turns: int = 5
    turn_tokens: int = 8
    style: ChatStyle = field(default_factory=ChatStyle)
    env_kwargs: tuple[tuple[str, Any], ...] = ()


class TextEnvRolloutFunc:
    """``GRPOTrainer(rollout_func=...)``: plays the episodes of a batch of prompts with the trainer's model.

    ``rows`` are the dataset's rows (``episode_dataset``). Each call appends a summary of its episodes to
    ``history`` (mean return, success rate, valid-command share, turns, seconds spent). Completions are limited to the
    trainer's ``max_completion_length`` tokens. ``logprobs`` is ``None``, as in trl's own transformers
    generation path (sampling log-probs are only needed against a separate inference engine such as vLLM).
    """

    def __init__(self, rows: Sequence[dict[str, Any]], settings: RolloutSettings | None = None):
        self.settings = settings or RolloutSettings()
        self.episodes: dict[str, EpisodeSpec] = {}
        for row in rows:
            key = _key(row["prompt"])
            if key in self.episodes:
                raise ValueError(f"two rows open with the same chat ({self.episodes[key]} and seed {row['seed']})")
            self.episodes[key] = EpisodeSpec(row["env_id"], int(row["seed"]))
        self.pool = EnvPool(**dict(self.settings.env_kwargs))
        self.history: list[dict[str, float]] = []
        self._tokens: ChatTokens | None = None

    def specs(self, prompts: Sequence[Messages]) -> list[EpisodeSpec]:
        missing = [p for p in prompts if _key(p) not in self.episodes]
        if missing:
            raise KeyError(f"no dataset row opens with {missing[0]!r}; build the dataset with episode_dataset")
        return [self.episodes[_key(p)] for p in prompts]

    def __call__(self, prompts: list[Messages], trainer: Any) -> dict[str, Any]:
        from trl.models import unwrap_model_for_generation

        if self._tokens is None:
            self._tokens = ChatTokens(trainer.processing_class)
        start = time.perf_counter()
        with unwrap_model_for_generation(
            trainer.model_wrapped, trainer.accelerator, generation_kwargs=trainer.generation_kwargs
        ) as model:
            generator = ModelGenerator(
                model, trainer.generation_config, self.settings.turn_tokens, trainer.processing_class.pad_token_id
            )
            rollouts = play_episodes(
                self.specs(prompts),
                generator,
                self._tokens,
                self.settings.max_turns,
                max_completion_tokens=trainer.max_completion_length,
                pool=self.pool,
                style=self.settings.style,
                prompts=prompts,
            )
        self.history.append({**summarize(rollouts), "rollout_s": time.perf_counter() - start})
        return rollout_output(rollouts)


def play_with_model(
    model: Any,
    tokenizer: Any,
    rows: Sequence[dict[str, Any]],
    settings: RolloutSettings,
    generation_config: Any,
    max_completion_tokens: int | None = None,
) -> list[EpisodeRollout]:
    """Play the episodes of dataset ``rows`` with ``model`` outside a trainer (an evaluation), sampling with
    ``generation_config`` as the trainer does."""
    generator = ModelGenerator(model, generation_config, settings.turn_tokens, tokenizer.pad_token_id)
    pool = EnvPool(**dict(settings.env_kwargs))
    try:
        return play_episodes(
            [EpisodeSpec(row["env_id"], int(row["seed"])) for row in rows],
            generator,
            ChatTokens(tokenizer),
            settings.max_turns,
            max_completion_tokens=max_completion_tokens,
            pool=pool,
            style=settings.style,
            prompts=[row["prompt"] for row in rows],
        )
    finally:
        pool.close()


def rollout_output(rollouts: Sequence[EpisodeRollout]) -> dict[str, Any]:
    """What ``GRPOTrainer`` takes from a ``rollout_func``: the token layout and the episode fields."""
    return {
        "prompt_ids": [r.prompt_ids for r in rollouts],
        "completion_ids": [r.completion_ids for r in rollouts],
        "logprobs": None,
        "env_mask": [r.env_mask for r in rollouts],
        "episode_return": [r.episode_return for r in rollouts],
        "success": [r.success for r in rollouts],
        "valid_fraction": [r.valid_fraction for r in rollouts],
        "turns": [r.turns for r in rollouts],
    }


def summarize(rollouts: Sequence[EpisodeRollout]) -> dict[str, float]:
    """Mean return, success rate, valid-command share and turns of ``rollouts``."""
    return {
        "episodes": float(len(rollouts)),
        "mean_return": float(np.mean([r.episode_return for r in rollouts])),
        "success_rate": float(np.mean([r.success for r in rollouts])),
        "valid_fraction": float(np.mean([r.valid_fraction for r in rollouts])),
        "mean_turns": float(np.mean([r.turns for r in rollouts])),
    }


def episode_return_reward(completions: list[Any], episode_return: list[float], **kwargs: Any) -> list[float]:
    """The env's return of each episode (BabyAI: ``1 - 0.9 * steps / max_steps`` on success, else 0)."""
    return [float(r) for r in episode_return]


def success_reward(completions: list[Any], success: list[bool], **kwargs: Any) -> list[float]:
    """1 for an episode the env reports as a success, else 0."""
    return [float(bool(s)) for s in success]


def valid_command_reward(completions: list[Any], valid_fraction: list[float], **kwargs: Any) -> list[float]:
    """The share of an episode's turns that named an admissible command (a format reward)."""
    return [float(v) for v in valid_fraction]


#: What a run of ``GRPOTrainer`` needs whatever the experiment: no checkpoints or trackers, a log line per step.
RUN_SETTINGS: dict[str, Any] = {
    "activation_checkpointing": False,
    "save_strategy": "no",
    "report_to": [],
    "disable_tqdm": True,
    "logging_steps": 1,
}


def device_settings(device: str = "cpu") -> dict[str, Any]:
    """The trainer's device and precision for a ``device`` setting (``textagents.device``): the CPU without
    mixed precision, or CUDA with bf16."""
    from textagents.device import resolve_device

    on_gpu = resolve_device(device).type == "cuda"
    return {"use_cpu": not on_gpu, "bf16": on_gpu}


def grpo_config(output_dir: str, device: str = "cpu", **settings: Any) -> Any:
    """``trl.GRPOConfig`` with ``RUN_SETTINGS``, ``device_settings(device)`` and the experiment's ``settings``
    (which win)."""
    from trl import GRPOConfig

    return GRPOConfig(output_dir=output_dir, **{**RUN_SETTINGS, **device_settings(device), **settings})
