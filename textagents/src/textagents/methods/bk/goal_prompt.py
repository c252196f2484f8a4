"""BK-Goal's labelling: the LLM proposes goals for a mission, round after round, each round shown a few
observations of a random policy (the original's ``label_goals.py`` conversation: a system prompt, the
environment's description, then one user message per round, the answers kept in the conversation). The
prompts follow the original's structure in our words (its files carry no license; ``prompt_source:
original`` uses them); the observations shown start with the mission, which the original's did not name.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from textagents.llm.base import LLMBackend, chat_fitting
from textagents.methods.bk.config import SAMPLING
from textagents.methods.bk.environments import ENVIRONMENTS
from textagents.methods.bk.samples import Step
from textagents.methods.core.original_prompts import original_text

#: Our wording of the original's goal-suggestion request: goals as a Markdown list, general (no step
#: counts or distances), few, not repeated, improved round after round.
SYSTEM = (
    "You help an agent that plays a game by suggesting goals worth pursuing, using only actions and objects "
    "that exist in the game. I will tell you about the environment; your job is to list possible goals for "
    "what the agent currently observes, each precise and in line with how the environment works. Give the "
    "goals as a Markdown unordered list.\n\n"
    "The goals should help the agent complete its tasks and follow general knowledge of the environment. "
    "Each round I will show you what the agent observed, and you refine your list of goals with it.\n\n"
    "Aim for the goals that help most. Keep each goal general so it can be reused: do NOT mention numbers "
    "of steps or distances. Add goals where useful, but no duplicates and no impossible goals, and keep the "
    "list short. Goals you gave earlier may be kept."
)
USER = (
    "These are some of the agent's observations:\n{observations}\n\n"
    "Refine the list of goals using these observations and the goals you gave before.\n\n"
    "Write the goals as an unordered list, like:\n- ...\n- ...\n"
)
_ORIGINAL_FILES = {"system": "prompts/bk/goal_suggestion/system.txt", "user": "prompts/bk/goal_suggestion/user.txt"}
#: The conversation keeps the last this many rounds (the original dropped the oldest rounds once it outgrew
#: the model's token budget).
HISTORY_ROUNDS = 4
#: At most this many goals are taken from one answer, each at most ``MAX_GOAL_CHARS`` long.
MAX_GOALS = 20
MAX_GOAL_CHARS = 120
_ITEM = re.compile(r"^\s*(?:[-*+•]|\d{1,2}[.)])\s+(.*\S)\s*$")
_MARKUP = re.compile(r"[*_`]+")


def prompts(source: str = "ours") -> dict[str, str]:
    """The system and user prompts: ``ours`` or the ``original``'s files (downloaded and checked), whose
    placeholder is renamed to ours."""
    if source == "ours":
        return {"system": SYSTEM, "user": USER}
    if source != "original":
        raise ValueError(f"prompt source must be 'ours' or 'original', got {source!r}")
    texts = {key: original_text(name) for key, name in _ORIGINAL_FILES.items()}
    texts["user"] = texts["user"].replace("{desc}", "{observations}")
    return texts


def describe_steps(mission: str, steps: Sequence[Step]) -> str:
    """The observations as the user message shows them: the mission, then each observation after the
    action that led to it."""
    lines = [f"The agent's mission: {mission}."]
    for index, step in enumerate(steps, 1):
        after = f', after the action "{step.action}"' if step.action else ""
        lines.append(f"Observation {index}{after}:\n{step.observation}")
    return "\n".join(lines)


@dataclass(frozen=True)
class ParsedGoals:
    """The goals of an answer: its list items, lower-cased, without Markdown emphasis or final punctuation,
    duplicates and over-long items dropped, at most ``MAX_GOALS``; none when the answer has no list."""

    goals: tuple[str, ...]


def parse_goals(answer: str) -> ParsedGoals:
    """Each list item (``-``, ``*``, ``+``, ``•`` or ``1.``/``1)`` first) is one goal; every other line is
    ignored (the original took only ``- `` lines and retried an answer without one)."""
    goals: dict[str, None] = {}
    for line in answer.splitlines():
        match = _ITEM.match(line)
        if match is None:
            continue
        goal = " ".join(_MARKUP.sub("", match.group(1)).lower().split()).strip(" .;:,!")
        if goal and goal != "..." and len(goal) <= MAX_GOAL_CHARS and any(c.isalpha() for c in goal):
            goals[goal] = None
    return ParsedGoals(tuple(goals)[:MAX_GOALS])


@dataclass
class GoalProposal:
    """The goals proposed for a mission (first-seen order over the rounds), each round's answer, how many
    answers held no goal and how many rounds were asked without some of the earlier rounds the conversation
    keeps, because with them it did not fit the model's context."""

    mission: str
    goals: list[str] = field(default_factory=list)
    answers: list[str] = field(default_factory=list)
    unparsed: int = 0
    trimmed: int = 0


def round_steps(steps: Sequence[Step], round_index: int, per_round: int) -> Sequence[Step]:
    """The steps round ``round_index`` shows: the next ``per_round`` (fewer when ``steps`` runs out)."""
    return steps[round_index * per_round : (round_index + 1) * per_round]


def propose_goals(
    backend: LLMBackend,
    family: str,
    mission: str,
    steps: Sequence[Step],
    *,
    rounds: int,
    per_round: int,
    sampling: dict[str, Any] | None = None,
    prompt_source: str = "ours",
) -> GoalProposal:
    """``rounds`` rounds of the conversation for ``mission``, round ``r`` shown ``steps[r * per_round:]``'s
    next ``per_round`` observations (fewer when ``steps`` runs out), with the last ``HISTORY_ROUNDS``
    rounds' messages before it (the oldest of them left out while the conversation does not fit the model's
    context: a small model's answer can run to the context's end, and the next round would not fit), asked
    with ``sampling`` (None: ``SAMPLING``, the original's)."""
    if family not in ENVIRONMENTS:
        raise ValueError(f"no environment description for {family!r}; known: {sorted(ENVIRONMENTS)}")
    texts = prompts(prompt_source)
    system = [{"role": "system", "content": texts["system"]}, {"role": "system", "content": ENVIRONMENTS[family]}]
    history: list[dict[str, str]] = []
    proposal = GoalProposal(mission)
    for round_index in range(rounds):
        shown = round_steps(steps, round_index, per_round)
        question = {"role": "user", "content": texts["user"].format(observations=describe_steps(mission, shown))}
        conversation = [*system, *history[-2 * HISTORY_ROUNDS :], question]
        answer, asked = chat_fitting(backend, conversation, len(system), **(sampling or SAMPLING))
        proposal.trimmed += len(asked) < len(conversation)
        history += [question, {"role": "assistant", "content": answer}]
        proposal.answers.append(answer)
        parsed = parse_goals(answer).goals
        proposal.unparsed += not parsed
        proposal.goals.extend(goal for goal in parsed if goal not in proposal.goals)
    return proposal
