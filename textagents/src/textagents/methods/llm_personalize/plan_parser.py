"""LLM-Personalize's plan parser (``_process_llm_response_to_plan`` and ``PlanModule.postprocess`` in the
original's ``cos_eor/policy/llm_planner.py``).

The answer is prefixed with the prompt's ``step 1:``, lower-cased (``" :"`` -> ``":"``), split on newlines
and ``step N:`` markers, each piece stripped of spaces, then of a trailing ``.`` and ``,``; empty pieces are
dropped and at most ``max_steps`` (10 in the paper's multi-step mode) are kept. A step is ``mission
complete`` or is read by one of the four patterns of METHODS.md; anything else is an unparseable step,
counted, not fatal. Two parsers:

- ``original`` (default): the patterns are matched at the start of the step (``re.match``) in the order
  ``go to``, ``look at``, ``pick up``, ``place``, and the characters ``"';`` are removed from the names, as
  the original does: "go to x and place y on x" is a ``go to``, "1. go to x" does not parse.
- ``lenient``: the patterns are searched anywhere in the step, ``place`` first, and the names keep their
  punctuation: a planner that numbers its steps ("1. go to x", "- pick up y") or writes two actions on one
  line still gets its steps read; for small models whose answers rarely have the original's form.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

MAX_STEPS = 10
#: The prompt's last words (``single.llm_model.openai.prompt.prefix`` of ``igib_v2_nav_sp.yaml``), which the
#: original puts in front of the answer before splitting it.
PROMPT_PREFIX = "step 1:"
MISSION_COMPLETE = "mission complete"
PARSERS = ("original", "lenient")
_SPLIT = re.compile(r"\n|step \d+:|step\d+:")
_PUNCTUATION = re.compile(r"[\"';]")
#: The original's patterns, in the order it tries them.
STEP_PATTERNS: tuple[tuple[str, re.Pattern[str]], ...] = (
    ("go to", re.compile(r"go to (.+)")),
    ("look at", re.compile(r"look at (.+)")),
    ("pick up", re.compile(r"pick up (.+)")),
    ("place", re.compile(r"place (.+) on (.+)")),
)
#: The lenient parser's order: ``place`` first, since its names may contain the other verbs' words.
_LENIENT_ORDER = (STEP_PATTERNS[3], STEP_PATTERNS[2], STEP_PATTERNS[0], STEP_PATTERNS[1])


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


def steps_read(answer: str, max_steps: int = MAX_STEPS) -> bool:
    """Whether a plan being generated already has more than ``max_steps`` steps (``split_steps``): its first
    ``max_steps``, all a plan is read for, are then whole (each followed by a separator), so generating more
    changes nothing that is read."""
    return len(split_steps(answer)) > max_steps


def parse_step(text: str, parser: str = "original") -> PlanStep:
    if text == MISSION_COMPLETE:
        return PlanStep(text, MISSION_COMPLETE)
    if parser == "original":
        for verb, pattern in STEP_PATTERNS:
            match = pattern.match(text)
            if match:
                return PlanStep(text, verb, tuple(_PUNCTUATION.sub("", name.strip()) for name in match.groups()))
        return PlanStep(text, None)
    for verb, pattern in _LENIENT_ORDER:
        match = pattern.search(text)
        if match:
            return PlanStep(text, verb, tuple(name.strip() for name in match.groups()))
    return PlanStep(text, None)


def parse_plan(
    answer: str, max_steps: int = MAX_STEPS, prefix: str = PROMPT_PREFIX, parser: str = "original"
) -> ParsedPlan:
    """The steps of a planner answer, at most ``max_steps`` of them, read by ``parser`` (``PARSERS``)."""
    if max_steps < 1:
        raise ValueError(f"max_steps must be >= 1, got {max_steps}")
    if parser not in PARSERS:
        raise ValueError(f"parser must be one of {list(PARSERS)}, got {parser!r}")
    pieces = split_steps(answer, prefix)
    return ParsedPlan([parse_step(piece, parser) for piece in pieces[:max_steps]], max(len(pieces) - max_steps, 0))
