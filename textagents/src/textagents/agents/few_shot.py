"""A few-shot LLM agent: the first k episodes of a textenvs dataset (``textenvs dataset create``) shown as
demonstrations before the env's usual prompt, the whole kept within a token budget.

Tokens are estimated as characters / 3 (``CHARS_PER_TOKEN``), whatever the backend, so the same dataset and
budget give the same prompts with every model and a recorded run replays. When the demonstrations do not
fit, each keeps its goal, its first steps and its outcome, and says how many steps were cut; when not even
that fits, the last demonstrations are left out, and the prompt says how many (if that note fits). Either way
the agent's ``stats`` count it.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from textagents.agents.llm_agents import GenerationAgent
from textagents.agents.prompts import Prompt, PromptBuilder
from textagents.llm.base import LLMBackend

#: The characters one token is taken to hold: fewer than real tokenizers hold, so that the estimate errs high
#: (SmolLM2's tokenizer: 3.5 characters a token on BabyAI-Text demonstrations, 3.1 on Crafter-Text ones).
CHARS_PER_TOKEN = 3
INTRO = "Here are demonstrations of how to act in this environment.\n\n"
OUTRO = "Now it is your turn.\n"


def estimate_tokens(text: str) -> int:
    return math.ceil(len(text) / CHARS_PER_TOKEN)


def action_text(action: Any) -> str:
    """A recorded action as the prompt shows it: a command as is, numbers separated by spaces."""
    if isinstance(action, str):
        return action
    return " ".join(f"{v:g}" for v in np.ravel(np.asarray(action, dtype=np.float64)))


def _observation_lines(text: str) -> str:
    lines = text.strip("\n").split("\n")
    return "Observation: " + "\n  ".join(lines) + "\n"


@dataclass(frozen=True)
class Demonstration:
    """One episode as the prompt shows it: its goal, each step's observation text and action, its outcome."""

    goal: str
    steps: tuple[str, ...]
    outcome: str

    @classmethod
    def of(cls, episode: Any) -> Demonstration:
        """From a ``textenvs.trajectories.Episode``."""
        texts = episode.observations.get("text") or [""] * (len(episode) + 1)
        missions = episode.observations.get("mission") or [""]
        steps = tuple(
            _observation_lines(str(text)) + f"Action: {action_text(action)}\n"
            for text, action in zip(texts, episode.actions, strict=False)
        )
        result = "success" if episode.success else "no success"
        outcome = f"Outcome: {result} after {_steps(len(episode))}, return {episode.episode_return:.3g}.\n"
        return cls(goal=str(missions[0]), steps=steps, outcome=outcome)

    def header(self, number: int) -> str:
        goal = f" (goal: {self.goal})" if self.goal else ""
        return f"Demonstration {number}{goal}:\n"

    def render(self, number: int, budget: int) -> tuple[str, int] | None:
        """The demonstration within ``budget`` estimated tokens, and how many of its steps were cut; None
        when not even its header, a cut note and its outcome fit."""
        head, tail = self.header(number), self.outcome + "\n"
        full = head + "".join(self.steps) + tail
        if estimate_tokens(full) <= budget:
            return full, 0
        kept = ""
        for shown, step in enumerate(self.steps):
            text = head + kept + step + _cut_note(len(self.steps) - shown - 1) + tail
            if estimate_tokens(text) > budget:
                cut = len(self.steps) - shown
                minimal = head + kept + _cut_note(cut) + tail
                return (minimal, cut) if estimate_tokens(minimal) <= budget else None
            kept += step
        raise AssertionError("unreachable: the full demonstration did not fit but every step did")


def _steps(count: int) -> str:
    return f"{count} step" if count == 1 else f"{count} steps"


def _cut_note(steps: int) -> str:
    return f"... ({_steps(steps).replace(' ', ' more ', 1)} not shown to fit the token budget)\n"


def _left_out_note(count: int) -> str:
    return f"({count} more demonstrations not shown to fit the token budget)\n\n"


def _fit(demonstrations: Sequence[Demonstration], budget: int) -> tuple[list[str], int] | None:
    """Each demonstration within a fair part of ``budget``: the shortest first, each given an equal part of
    what is left, so what a short one does not use goes to the longer ones. None when one does not fit."""
    full = [estimate_tokens(d.header(i + 1) + "".join(d.steps) + d.outcome) for i, d in enumerate(demonstrations)]
    parts, cut, remaining = [""] * len(demonstrations), 0, budget
    for rank, i in enumerate(sorted(range(len(demonstrations)), key=full.__getitem__)):
        rendered = demonstrations[i].render(i + 1, remaining // (len(demonstrations) - rank))
        if rendered is None:
            return None
        parts[i] = rendered[0]
        cut += rendered[1]
        remaining -= estimate_tokens(rendered[0])
    return parts, cut


def render_demonstrations(demonstrations: Sequence[Demonstration], budget: int) -> tuple[str, int, int]:
    """The demonstrations block within ``budget`` estimated tokens, the steps cut and the demonstrations
    left out (the last ones, when not even each one's goal and outcome fit)."""
    for count in range(len(demonstrations), 0, -1):
        note = _left_out_note(len(demonstrations) - count) if count < len(demonstrations) else ""
        fitted = _fit(demonstrations[:count], budget - estimate_tokens(INTRO + note + OUTRO))
        if fitted is not None:
            return INTRO + "".join(fitted[0]) + note + OUTRO, fitted[1], len(demonstrations) - count
    note = _left_out_note(len(demonstrations)).replace(" more ", " ")
    return (note if estimate_tokens(note) <= budget else ""), 0, len(demonstrations)


class FewShotPrompt:
    """``base``'s prompt (the env family's builder) after the demonstrations, the whole within
    ``token_budget`` estimated tokens; ``last_cut_steps`` and ``last_left_out`` tell what the last prompt
    had to drop."""

    def __init__(self, base: PromptBuilder, demonstrations: Sequence[Demonstration], token_budget: int):
        if not demonstrations:
            raise ValueError("a few-shot prompt needs at least one demonstration")
        if token_budget < 1:
            raise ValueError(f"token_budget must be >= 1, got {token_budget}")
        self.base = base
        self.demonstrations = tuple(demonstrations)
        self.token_budget = token_budget
        self.candidate_prefix = base.candidate_prefix
        self.last_cut_steps = 0
        self.last_left_out = 0

    def reset(self, obs: Any, info: dict[str, Any]) -> None:
        self.base.reset(obs, info)

    def build(self, obs: Any, info: dict[str, Any]) -> Prompt:
        prompt = self.base.build(obs, info)
        budget = self.token_budget - estimate_tokens(prompt.text)
        block, self.last_cut_steps, self.last_left_out = render_demonstrations(self.demonstrations, budget)
        return Prompt(block + prompt.user, prompt.system)

    def record(self, command: str) -> None:
        self.base.record(command)


class FewShotAgent(GenerationAgent):
    """``GenerationAgent`` with a ``FewShotPrompt``; ``stats`` also counts the prompts whose demonstrations
    were cut (``prompts_cut``) and the demonstrations left out of them (``demonstrations_left_out``)."""

    uid = "llm-few-shot"

    def __init__(
        self,
        backend: LLMBackend,
        base_prompt: PromptBuilder,
        demonstrations: Sequence[Demonstration],
        *,
        token_budget: int,
        dataset: str = "",
        **kwargs: Any,
    ):
        super().__init__(backend, FewShotPrompt(base_prompt, demonstrations, token_budget), **kwargs)
        self.dataset = dataset
        self.stats.update(prompts_cut=0, demonstrations_left_out=0)

    @property
    def params(self) -> dict[str, Any]:
        prompts = self.prompts
        assert isinstance(prompts, FewShotPrompt)
        return {
            **super().params,
            "prompt": f"FewShotPrompt({type(prompts.base).__name__})",
            "dataset": self.dataset,
            "k": len(prompts.demonstrations),
            "token_budget": prompts.token_budget,
        }

    def act(self, obs: Any, info: dict[str, Any]) -> str:
        command = super().act(obs, info)
        prompts = self.prompts
        assert isinstance(prompts, FewShotPrompt)
        if prompts.last_cut_steps or prompts.last_left_out:
            self.stats["prompts_cut"] += 1
            self.stats["demonstrations_left_out"] += prompts.last_left_out
            prompts.last_cut_steps = prompts.last_left_out = 0  # counted once, not again on a planned step
        return command


def load_demonstrations(dataset: str, k: int) -> tuple[str, tuple[Demonstration, ...]]:
    """The env id of a textenvs dataset folder and its first ``k`` episodes as demonstrations."""
    from textenvs.trajectories import read_dataset

    if k < 1:
        raise ValueError(f"k must be >= 1, got {k}")
    data = read_dataset(dataset, limit=k)
    if len(data.episodes) < k:
        raise ValueError(f"the dataset {dataset} holds {len(data.episodes)} episodes; k={k} asks for more")
    return data.info.env_id, tuple(Demonstration.of(e) for e in data.episodes)
