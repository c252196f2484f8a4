"""Prompt builders: from an env's text, mission and the episode's history to an LLM prompt.

One builder per family where a paper fixed the prompt (GLAM's BabyAI template, LLM-Personalize's planner
prompt) and a generic one for every other env. A builder keeps the episode history: ``reset`` at episode
start, ``build`` before each decision, ``record`` with the command that was played.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Protocol

import gymnasium as gym


@dataclass(frozen=True)
class Prompt:
    """A prompt as a user message with an optional system message; ``text`` is what completion models see."""

    user: str
    system: str | None = None

    @property
    def text(self) -> str:
        return self.user if self.system is None else f"{self.system}\n{self.user}"

    def messages(self) -> list[dict[str, str]]:
        system = [{"role": "system", "content": self.system}] if self.system is not None else []
        return [*system, {"role": "user", "content": self.user}]


class PromptBuilder(Protocol):
    #: Prepended to each candidate command when scoring it after the prompt text.
    candidate_prefix: str

    def reset(self, obs: Any, info: dict[str, Any]) -> None: ...

    def build(self, obs: Any, info: dict[str, Any]) -> Prompt: ...

    def record(self, command: str) -> None: ...


def text_of(obs: Any) -> str:
    return str(obs.get("text", "")) if isinstance(obs, dict) else str(obs)


def mission_of(obs: Any) -> str:
    return str(obs.get("mission", "")) if isinstance(obs, dict) else ""


class GlamPrompt:
    """GLAM's BabyAI-Text prompt (Carta et al. 2023), exactly: the possible actions, the goal, then the last
    3 observations (GLAM's description lists) and the 2 actions between them, ending with ``Action i: ``.
    ``actions`` defaults to the ones between the ``observations`` shown."""

    candidate_prefix = ""

    def __init__(self, observations: int = 3, actions: int | None = None):
        self.observations: deque[list[str]] = deque(maxlen=observations)
        self.actions: deque[str] = deque(maxlen=observations - 1 if actions is None else actions)

    def reset(self, obs: Any, info: dict[str, Any]) -> None:
        self.observations.clear()
        self.actions.clear()

    def build(self, obs: Any, info: dict[str, Any]) -> Prompt:
        descriptions = info.get("descriptions")
        if descriptions is None:
            descriptions = [d for d in text_of(obs).split("\n") if d]
        self.observations.append(list(descriptions))
        commands = info.get("admissible_commands", [])
        return Prompt(glam_prompt(commands, mission_of(obs), self.observations, self.actions))

    def record(self, command: str) -> None:
        self.actions.append(command)


def glam_prompt(
    possible_actions: Sequence[str],
    goal: str,
    observations: Sequence[Sequence[str]],
    actions: Sequence[str],
) -> str:
    head = "Possible action of the agent:" + ",".join(f" {a}" for a in possible_actions)
    body = "".join(
        f" \n Observation {i}: "
        + "".join(f"{d}, " for d in descriptions)
        + f"\n Action {i}: "
        + (actions[i] if i < len(actions) else "")
        for i, descriptions in enumerate(observations)
    )
    return f"{head} \n Goal of the agent: {goal}{body}"


class GenericPrompt:
    """A plain prompt for any env: goal, possible actions, the last ``history`` steps, ``Action:``."""

    candidate_prefix = " "

    def __init__(self, history: int = 2, system: str | None = None):
        self.history: deque[tuple[str, str]] = deque(maxlen=history)
        self.system = system
        self.last_text = ""

    def reset(self, obs: Any, info: dict[str, Any]) -> None:
        self.history.clear()

    def build(self, obs: Any, info: dict[str, Any]) -> Prompt:
        self.last_text = text_of(obs)
        lines = []
        if mission_of(obs):
            lines.append(f"Goal: {mission_of(obs)}")
        commands = info.get("admissible_commands") or []
        if commands:
            lines.append(f"Possible actions: {', '.join(commands)}")
        for text, command in self.history:
            lines += [f"Observation: {text}", f"Action: {command}"]
        lines += [f"Observation: {self.last_text}", "Action:"]
        return Prompt("\n".join(lines), self.system)

    def record(self, command: str) -> None:
        self.history.append((self.last_text, command))


LLM_PERSONALIZE_TEMPLATES = "llm_personalize/igib_v2_nav_sp.yaml"


class LLMPersonalizePrompt:
    """LLM-Personalize's planner prompt (Han et al. 2024), filled from the run config's templates
    (``context.single`` of ``igib_v2_nav_sp.yaml``) as its recorded prompts show: the context is the
    Housekeep text, the options include ``go to room``, both examples follow, and ``answer_prefix``
    (``"\\nstep 1: "`` for imitation-learning prompts, ``""`` for self-training ones) ends the prompt."""

    candidate_prefix = ""

    def __init__(self, answer_prefix: str = "\nstep 1: ", rooms_option: bool = True, data_dir: str | None = None):
        templates = load_llm_personalize_templates(data_dir)
        self.system = templates["system_prompt"]
        self.base = templates["base_prompt"]
        options = templates["option_list"]
        self.options = f"go to room, {options}" if rooms_option else options
        self.examples = templates["example_explore"] + templates["example_pick"] + "\n"
        self.answer_prefix = answer_prefix

    def reset(self, obs: Any, info: dict[str, Any]) -> None:
        pass

    def build(self, obs: Any, info: dict[str, Any]) -> Prompt:
        return Prompt(self.user_message(text_of(obs)), self.system)

    def user_message(self, context: str) -> str:
        filled = (
            self.base.replace("context_placeholder", "\n" + context)
            .replace("option_placeholder", self.options)
            .replace("prev_steps_msg", "")
            .replace("example_placeholder", self.examples)
        )
        return filled + self.answer_prefix

    def record(self, command: str) -> None:
        pass


def load_llm_personalize_templates(data_dir: str | None = None) -> dict[str, str]:
    """The ``context.single`` templates of LLM-Personalize's run config, through ``textenvs.data``."""
    from textenvs.data import load_yaml, read_asset

    config = load_yaml(read_asset(LLM_PERSONALIZE_TEMPLATES, data_dir=data_dir))
    return dict(config["RL"]["POLICY"]["context"]["single"])


#: Family name (``EnvEntry.family``) -> prompt builder class; others get ``GenericPrompt``.
FAMILY_PROMPTS: dict[str, type] = {"babyai_text": GlamPrompt, "housekeep": LLMPersonalizePrompt}


def env_family(env: gym.Env) -> str | None:
    """The textenvs family of ``env`` (from its registered id), or None for an unregistered env."""
    import textenvs

    env_id = env.spec.id if env.spec is not None else None
    return next((e.family for e in textenvs.ENV_TABLE if e.id == env_id), None)


def prompt_builder_for(env: gym.Env, **kwargs: Any) -> PromptBuilder:
    """The prompt builder of ``env``'s family (GLAM's for BabyAI-Text, LLM-Personalize's for Housekeep)."""
    return FAMILY_PROMPTS.get(env_family(env) or "", GenericPrompt)(**kwargs)
