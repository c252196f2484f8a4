"""Regenerate LLM-Personalize's imitation-learning pairs from this environment: at the start of every
demonstrator plan, the planner prompt for the current observation and the plan as the target."""

from __future__ import annotations

from typing import Any

from textenvs.envs.housekeep.commands import MISSION_COMPLETE
from textenvs.envs.housekeep.expert import plan, plan_text
from textenvs.envs.housekeep.prompts import chat_messages


def demonstration_pairs(env: Any, seed: int | None = None, options: dict | None = None) -> list[list[dict[str, str]]]:
    """Play one episode with the demonstrator; return its pairs in OpenAI chat fine-tuning format.

    ``env`` is a ``HousekeepTextEnv`` (unwrapped) with ``text_style="llm_personalize"``.
    """
    obs, _ = env.reset(seed=seed, options=options)
    pairs = []
    while True:
        steps = plan(env.world)
        pairs.append(chat_messages(obs["text"], plan_text(env.world)))
        for command in steps:
            obs, _, terminated, truncated, _ = env.step(command)
            if terminated or truncated:
                return pairs
        if steps == [MISSION_COMPLETE]:
            return pairs
