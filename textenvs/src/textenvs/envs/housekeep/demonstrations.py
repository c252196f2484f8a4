"""Regenerate LLM-Personalize's imitation-learning pairs from this environment: at the start of every
demonstrator plan, the planner prompt for the current observation and the plan as the target."""

from __future__ import annotations

from typing import Any

from textenvs.envs.housekeep.commands import MISSION_COMPLETE
from textenvs.envs.housekeep.expert import format_plan, make_planner
from textenvs.envs.housekeep.prompts import chat_messages


def demonstration_pairs(
    env: Any, seed: int | None = None, options: dict | None = None, mode: str | None = None, expert_seed: int = 0
) -> list[list[dict[str, str]]]:
    """Play one episode with the expert's planner (``mode``: ``"faithful"`` — LLM-Personalize's demonstrator
    — or ``"efficient"``; default the env's ``expert_mode``); return its pairs in OpenAI chat fine-tuning
    format, one per planning call.

    ``env`` is a ``HousekeepTextEnv`` (unwrapped) with ``text_style="llm_personalize"``.
    """
    obs, _ = env.reset(seed=seed, options=options)
    planner = make_planner(mode or env.expert_mode, env.world, expert_seed)
    pairs = []
    while True:
        steps = planner.plan(env.world)
        pairs.append(chat_messages(obs["text"], format_plan(steps)))
        for command in steps:
            obs, _, terminated, truncated, _ = env.step(command)
            if terminated or truncated:
                return pairs
        if steps == [MISSION_COMPLETE]:
            return pairs
