"""LLM-Personalize's imitation-learning data: demonstrations of the faithful demonstrator, selected as the
original's ``experiments/annotate_human_demo_pair.ipynb`` does.

Per scene, from the 26th episode on (every index >= 25: the original takes its sorted demonstration logs
from the 26th, test-split indices included), the first 12 demonstrations in which no planned step failed:
10 for training, 2 for validation. Each planning call of those episodes is one (prompt, plan) pair in
OpenAI chat format, the prompt ending with ``\nstep 1: `` as the notebook writes it.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from textenvs.envs.housekeep.env import HousekeepTextEnv
from textenvs.envs.housekeep.expert import HousekeepExpert, format_plan
from textenvs.envs.housekeep.prompts import chat_messages
from textenvs.envs.housekeep.registration import LLM_PERSONALIZE_SCENES
from textenvs.envs.housekeep.sampling import LLM_PERSONALIZE_EPISODES

FIRST_DEMONSTRATION_INDEX = 25
TRAIN_DEMONSTRATIONS = 10
VALIDATION_DEMONSTRATIONS = 2

Pair = list[dict[str, str]]


@dataclass
class DemonstrationSet:
    """Pairs per scene: ``train`` and ``validation``; ``episodes`` the indices used; ``rejected`` the
    indices whose demonstration had a failed step."""

    train: dict[str, list[Pair]] = field(default_factory=dict)
    validation: dict[str, list[Pair]] = field(default_factory=dict)
    episodes: dict[str, list[int]] = field(default_factory=dict)
    rejected: dict[str, list[int]] = field(default_factory=dict)


def demonstrate(env: HousekeepTextEnv, scene: str, index: int, seed: int = 0) -> list[Pair] | None:
    """The (prompt, plan) pairs of one faithful demonstration, or None when one of its steps failed."""
    expert = HousekeepExpert(env, mode="faithful", seed=seed)
    obs, info = env.reset(seed=seed, options={"scene": scene, "episode_index": index})
    expert.reset(obs, info)
    done = False
    while not done:
        obs, _, terminated, truncated, info = env.step(expert.act(obs, info))
        if info["invalid_action"] or not info["action_succeeded"]:
            return None
        done = terminated or truncated
    return [chat_messages(context, format_plan(steps)) for context, steps in expert.plans]


def select_demonstrations(
    scenes: Sequence[str] = LLM_PERSONALIZE_SCENES,
    train: int = TRAIN_DEMONSTRATIONS,
    validation: int = VALIDATION_DEMONSTRATIONS,
    data_dir: str | None = None,
    **env_kwargs: Any,
) -> DemonstrationSet:
    """The paper's selection on each scene (see the module docstring)."""
    env = HousekeepTextEnv(scenes=list(scenes), episode_source="llm_personalize", data_dir=data_dir, **env_kwargs)
    chosen = DemonstrationSet()
    candidates = range(FIRST_DEMONSTRATION_INDEX, LLM_PERSONALIZE_EPISODES)
    for scene in scenes:
        kept: list[list[Pair]] = []
        chosen.episodes[scene], chosen.rejected[scene] = [], []
        for index in candidates:
            if len(kept) == train + validation:
                break
            pairs = demonstrate(env, scene, index)
            (chosen.rejected if pairs is None else chosen.episodes)[scene].append(index)
            if pairs is not None:
                kept.append(pairs)
        if len(kept) < train + validation:
            raise ValueError(
                f"{scene}: only {len(kept)} clean demonstrations among episodes "
                f"{FIRST_DEMONSTRATION_INDEX}..{LLM_PERSONALIZE_EPISODES - 1}; need {train + validation}"
            )
        chosen.train[scene] = [pair for pairs in kept[:train] for pair in pairs]
        chosen.validation[scene] = [pair for pairs in kept[train:] for pair in pairs]
    env.close()
    return chosen
