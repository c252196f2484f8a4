"""LLM-Personalize's plan parser (``_process_llm_response_to_plan`` in ``cos_eor/policy/llm_planner.py``, and
the step regexes of its executor).

The answer is prefixed with the prompt's ``step 1: ``, lower-cased (``" :"`` -> ``":"``), split on newlines
and ``step N:`` markers, each piece stripped of spaces, then of a trailing ``.`` and ``,``; empty pieces are
dropped and at most ``max_steps`` (10 in the paper's multi-step mode) are kept. Each step is read with the
four patterns of METHODS.md, ``place (.+) on (.+)``, ``pick up (.+)``, ``go to (.+)``, ``look at (.+)``, or
is ``mission complete``; anything else is an unparseable step, counted, not fatal.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

MAX_STEPS = 10
PROMPT_PREFIX = "step 1: "
MISSION_COMPLETE = "mission complete"
_SPLIT = re.compile(r"\n|step \d+:|step\d+:")
#: The step patterns, tried in this order (``place`` first: its names may contain the other verbs' words).
STEP_PATTERNS: tuple[tuple[str, re.Pattern[str]], ...] = (
    ("place", re.compile(r"place (.+) on (.+)")),
    ("pick up", re.compile(r"pick up (.+)")),
    ("go to", re.compile(r"go to (.+)")),
    ("look at", re.compile(r"look at (.+)")),
)


@dataclass(frozen=True)
class PlanStep:
    """One step: its text, its verb (``place``, ``pick up``, ``go to``, ``look at``, ``mission complete``,
    or None when no pattern matches) and the matched names."""

    text: str
    verb: str | None
    names: tuple[str, ...] = ()

    @property
    def command(self) -> str | None:
        """The env command this step names (``place x on y``, ``go to x``, ...), or None."""
        if self.verb is None:
            return None
        if self.verb == "place":
            return f"place {self.names[0]} on {self.names[1]}"
        if self.verb == MISSION_COMPLETE:
            return MISSION_COMPLETE
        return f"{self.verb} {self.names[0]}"


@dataclass
class ParsedPlan:
    steps: list[PlanStep] = field(default_factory=list)
    dropped: int = 0  # steps past ``max_steps``

    @property
    def unparseable(self) -> int:
        return sum(step.verb is None for step in self.steps)


def split_steps(answer: str, prefix: str = PROMPT_PREFIX) -> list[str]:
    """The answer's steps as the original splits them (prefix added, lower-cased, markers removed)."""
    text = (prefix + answer).lower().replace(" :", ":")
    pieces = (piece.strip().strip(".").strip(",") for piece in _SPLIT.split(text))
    return [piece for piece in pieces if piece]


def parse_step(text: str) -> PlanStep:
    if text == MISSION_COMPLETE:
        return PlanStep(text, MISSION_COMPLETE)
    for verb, pattern in STEP_PATTERNS:
        match = pattern.search(text)
        if match:
            return PlanStep(text, verb, tuple(name.strip() for name in match.groups()))
    return PlanStep(text, None)


def parse_plan(answer: str, max_steps: int = MAX_STEPS, prefix: str = PROMPT_PREFIX) -> ParsedPlan:
    """The steps of a planner answer, at most ``max_steps`` of them."""
    if max_steps < 1:
        raise ValueError(f"max_steps must be >= 1, got {max_steps}")
    pieces = split_steps(answer, prefix)
    return ParsedPlan([parse_step(piece) for piece in pieces[:max_steps]], max(len(pieces) - max_steps, 0))
