"""ELLM's goal-suggestion prompt for Crafter and its answer parser (Du et al. 2023).

The structure is the original's bullet prompt: the list of valid verbs, an instruction, two worked examples
(a caption, then its goals as bullets), then the caption: the observation sentence (first letters of its two
sentences capitalised), the inventory sentence, "You feel sleepy." only when sleepy (the other status
words are dropped), and " What do you do?". The original's text has no license, so the wording and the
examples here are ours; ``source="original"`` uses the original's text, downloaded and checked
(``textagents.methods.core.original_prompts``).
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cache

from textagents.methods.core.original_prompts import original_text, string_assigned

VERBS = "Valid actions: sleep, eat, attack, chop, drink, place, make, mine\n"
PREFIX = (
    VERBS + "You are playing a survival game. Name the most useful actions the player can take now, given what it "
    "sees and what it carries. Use only the valid actions and the objects mentioned.\n\n"
    "You see cow, grass, and water. You are targeting cow. What do you do?\n"
    "- Attack cow\n- Drink water\n- Chop grass\n\n"
    "You see stone, tree, and zombie. You are targeting tree. You have in your inventory wood, wood pickaxe. "
    "What do you do?\n"
    "- Chop tree\n- Mine stone\n- Attack zombie\n- Place crafting table\n\n"
)
SUFFIX = "What do you do?\n"
#: The original's settings: up to 200 tokens, temperature 0.1, stop at a blank line (seeded here: answers
#: are cached per prompt anyway, and a seed makes a run reproducible).
SAMPLING = {"max_tokens": 200, "temperature": 0.1, "stop": ["\n\n"], "seed": 0}


@cache
def _original_parts() -> tuple[str, str]:
    source = original_text("prompts/ellm/lm.py")
    return string_assigned(source, "BulletPrompt", "prefix"), string_assigned(source, "BulletPrompt", "suffix")


def _capitalised(text: str) -> str:
    return text[:1].upper() + text[1:]


def goal_prompt(observation: str, inventory: str, status: str, source: str = "ours") -> str:
    """The prompt for one caption: ELLM's ``obs_caption``, ``inventory_caption`` and ``status_caption``;
    ``source``: ``"ours"`` or ``"original"``."""
    if source not in ("ours", "original"):
        raise ValueError(f"prompt source must be 'ours' or 'original', got {source!r}")
    prefix, suffix = _original_parts() if source == "original" else (PREFIX, SUFFIX)
    text = _capitalised(observation)
    if "targeting" in text:
        second = text.find(".") + 2
        text = text[:second] + text[second : second + 1].upper() + text[second + 1 :]
    status = "you feel sleepy." if "sleepy" in status else "."
    if len(inventory) > 1 or len(status) > 1:
        text += " "
        if len(inventory) > 1:
            text += _capitalised(inventory)
        if len(status) > 1:
            text += (" " if len(inventory) > 1 else "") + _capitalised(status)
    return f"{prefix}{text} {suffix}"


#: How an answer is read: ``original`` (an answer with any line that is not a bullet is voided, and a voided
#: answer is not cached, so the LLM is asked again) or ``lenient`` (ours: the bullets of any answer are kept,
#: and every answer is cached, which spares a small model's malformed answers and repeated calls).
PARSING = ("original", "lenient")


@dataclass(frozen=True)
class ParsedGoals:
    """The goals of an answer (lower-cased, stripped, duplicates dropped, first-seen order), how many of its
    non-empty lines were not bullets, and whether the original would have kept it (``valid``)."""

    goals: tuple[str, ...]
    non_bullet_lines: int
    valid: bool

    @property
    def well_formed(self) -> bool:
        """Every line a bullet and at least one goal."""
        return self.valid and bool(self.goals)


def _pieces(text: str) -> tuple[str, ...]:
    """The original's split: on every ``-``, each piece stripped of spaces, dots and newlines."""
    goals = dict.fromkeys(piece.strip(" .\n") for piece in text.lower().split("-"))
    return tuple(g for g in goals if g)


def parse_goals(answer: str, strict: bool = True) -> ParsedGoals:
    """Each bullet line (``-`` first) is one goal, cut at a further ``-`` as the original split on it.
    ``strict`` (the original's rule): one line that is not a bullet, an empty one included, voids the
    whole answer; otherwise the bullet lines are kept and the others counted."""
    if answer.endswith(('\n"""', "\n```")):
        answer = answer[:-4]
    lines = answer.split("\n")
    valid = all(line.startswith("-") for line in lines)
    non_bullets = sum(1 for line in lines if line.strip() and not line.strip().startswith("-"))
    if strict:
        return ParsedGoals(_pieces(answer) if valid else (), non_bullets, valid)
    bullets = [line.strip() for line in lines if line.strip().startswith("-")]
    return ParsedGoals(_pieces("\n".join(bullets)), non_bullets, valid)
